// The console's shell: sign-in (the API key in sessionStorage, or straight
// in when authentication is off), the banner and navigation, and the page of
// the current route.
import "./style.css";
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, storedKey, storeKey, unauthorizedEvent } from "./api";
import { href, match, useLocation } from "./router";
import { errorText, Link } from "./ui";
import { ArtifactPage, ArtifactsPage, WorkspacesPage } from "./browse";
import { PackPage } from "./pack";
import { ReceiptPage, ReceiptsPage } from "./receipts";
import { ServerPage } from "./server";

type Auth = { state: "checking" } | { state: "signin"; error?: string } | { state: "open" } | { state: "key" };

function App() {
  const [auth, setAuth] = useState<Auth>({ state: "checking" });
  useEffect(() => {
    // With authentication off the API answers without a key: open directly.
    api.probe("").then(
      () => { storeKey(""); setAuth({ state: "open" }); },
      (e) => {
        if (!(e instanceof ApiError) || e.status !== 401) {
          setAuth({ state: "signin", error: errorText(e) });
          return;
        }
        const key = storedKey();
        if (!key) { setAuth({ state: "signin" }); return; }
        api.probe(key).then(() => setAuth({ state: "key" }), (e2) => { storeKey(""); setAuth({ state: "signin", error: errorText(e2) }); });
      },
    );
  }, []);
  useEffect(() => {
    const out = (e: Event) => {
      storeKey("");
      setAuth({ state: "signin", error: `The key was refused (${(e as CustomEvent<string>).detail}); sign in again.` });
    };
    addEventListener(unauthorizedEvent, out);
    return () => removeEventListener(unauthorizedEvent, out);
  }, []);
  if (auth.state === "checking") return <p class="muted center" role="status">Connecting…</p>;
  if (auth.state === "signin") return <SignIn error={auth.error} onIn={() => setAuth({ state: "key" })} />;
  return <Shell signedIn={auth.state === "key"} onOut={() => { storeKey(""); setAuth({ state: "signin" }); }} />;
}

function SignIn({ error, onIn }: { error?: string; onIn: () => void }) {
  const [key, setKey] = useState("");
  const [err, setErr] = useState(error ?? "");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      await api.probe(key.trim());
      storeKey(key.trim());
      onIn();
    } catch (e2) {
      setErr(e2 instanceof ApiError && e2.status === 401 ? "That key was not accepted." : errorText(e2));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <h1>Loci console</h1>
      <form onSubmit={submit} class="card">
        <label for="apikey">API key</label>
        <input id="apikey" name="apikey" type="password" autoComplete="off" required value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)} aria-describedby="apikey-help" autoFocus />
        <p id="apikey-help" class="muted">A tenant key or the operator's admin key. It is kept in this tab only (sessionStorage).</p>
        {err && <p class="error" role="alert">{err}</p>}
        <button type="submit" class="primary" disabled={busy}>Sign in</button>
      </form>
    </main>
  );
}

function Shell({ signedIn, onOut }: { signedIn: boolean; onOut: () => void }) {
  const { path, query } = useLocation();
  const route = match(path);
  const main = useRef<HTMLElement>(null);
  // Move focus to the page on navigation, so keyboard and screen-reader users start at its heading.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) { first.current = false; return; }
    main.current?.focus();
  }, [path]);
  const section = route.page === "server" ? "server" : "workspaces";
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="banner">
        <span class="brand">Loci</span>
        <nav aria-label="Main">
          <Link href={href.workspaces()} aria-current={section === "workspaces" ? "page" : undefined}>Workspaces</Link>
          <Link href={href.server()} aria-current={section === "server" ? "page" : undefined}>Server</Link>
        </nav>
        {signedIn ? <button type="button" class="link" onClick={onOut}>Sign out</button> : <span class="muted small">authentication off</span>}
      </header>
      <main id="main" tabIndex={-1} ref={main}>
        {route.page === "workspaces" && <WorkspacesPage query={query} />}
        {route.page === "artifacts" && <ArtifactsPage ws={route.ws} query={query} />}
        {route.page === "artifact" && <ArtifactPage id={route.id} />}
        {route.page === "pack" && <PackPage ws={route.ws} />}
        {route.page === "receipts" && <ReceiptsPage ws={route.ws} query={query} />}
        {route.page === "receipt" && <ReceiptPage id={route.id} />}
        {route.page === "server" && <ServerPage signedIn={signedIn} />}
        {route.page === "notfound" && <><h1>Not found</h1><p>No console page at {path}. <Link href={href.workspaces()}>Workspaces</Link></p></>}
      </main>
    </>
  );
}

// The console's home is the workspace list.
if (location.pathname === "/ui" || location.pathname === "/ui/") history.replaceState(null, "", href.workspaces() + location.search);
render(<App />, document.getElementById("app")!);
