// Browsing memory: the workspaces, a workspace's artifacts (filters, cursor
// paging) and one artifact (payload, spans, status, feedback per span).
import { useEffect, useState } from "preact/hooks";
import { api, artifactTypes, type Artifact, type ArtifactStatus, type ArtifactSummary } from "./api";
import { href, navigate } from "./router";
import { FeedbackButtons, fmtTime, Link, Show, useLoad } from "./ui";

/**
 * WorkspacesPage lists the caller's workspaces. With the admin key it also
 * lists every tenant (GET /v1/tenants) and lets the operator choose one
 * (?tenant=): another tenant's workspaces are shown with their counts, and
 * their artifacts stay readable with that tenant's own key only.
 */
export function WorkspacesPage({ query }: { query: URLSearchParams }) {
  const [st] = useLoad(async () => {
    const [own, tenants] = await Promise.all([
      api.workspaces(),
      // Only the admin key may list tenants: any refusal means "not the admin".
      api.tenants().then((r) => r.tenants, () => null),
    ]);
    return { own: own.workspaces, tenants };
  }, []);
  const chosen = query.get("tenant") ?? "";
  return (
    <>
      <h1>Workspaces</h1>
      <Show st={st} what="workspaces">
        {({ own, tenants }) => {
          const builtin = tenants?.[0]?.tenant_id ?? "";
          const tenant = tenants && chosen && chosen !== builtin ? tenants.find((t) => t.tenant_id === chosen) : undefined;
          const list = tenant ? tenant.workspaces : own;
          const others = (tenants ?? []).slice(1).filter((t) => t.workspaces.length > 0).length;
          return (
            <>
              {tenants && (
                <form class="card tenantpick" onSubmit={(e) => e.preventDefault()}>
                  <div class="field"><label for="f-tenant">Tenant</label>
                    <select id="f-tenant" value={tenant ? tenant.tenant_id : builtin}
                      onChange={(e) => { const v = (e.target as HTMLSelectElement).value; navigate(href.workspaces() + (v && v !== builtin ? "?tenant=" + encodeURIComponent(v) : "")); }}>
                      {tenants.map((t, i) => (
                        <option key={t.tenant_id} value={t.tenant_id}>
                          {i === 0 ? `${t.tenant_id} (the admin key's own)` : `${t.email ?? t.tenant_id} · ${t.plan}`} · {t.workspaces.length} workspace{t.workspaces.length === 1 ? "" : "s"}
                        </option>
                      ))}
                    </select>
                  </div>
                  <p class="muted small">The admin key sees every tenant's workspaces; another tenant's artifacts are read with that tenant's own key.</p>
                </form>
              )}
              {chosen && tenants && !tenant && chosen !== builtin && <p class="error" role="alert">No tenant {chosen}.</p>}
              {list.length === 0 ? (
                <p>{tenant ? "This tenant holds no artifact yet." : "No workspace holds an artifact yet. Ingest one through the API (POST /v1/ingest)."}
                  {!tenant && others > 0 ? ` ${others} other tenant${others === 1 ? " holds" : "s hold"} data: choose one above.` : ""}</p>
              ) : (
                <div class="tablewrap">
                  <table class="workspaces">
                    <caption class="sr">{tenant ? `Workspaces of tenant ${tenant.tenant_id}` : "Your workspaces"} with their counts</caption>
                    <thead><tr><th scope="col">Workspace</th><th scope="col" class="num">Artifacts</th><th scope="col" class="num">Spans</th><th scope="col">Newest artifact</th><th scope="col" class="num">Data version</th></tr></thead>
                    <tbody>
                      {list.map((w) => (
                        <tr key={w.workspace_id}>
                          <th scope="row">{tenant ? w.workspace_id : <Link href={href.artifacts(w.workspace_id)}>{w.workspace_id}</Link>}</th>
                          <td class="num">{w.artifact_count}</td><td class="num">{w.span_count}</td>
                          <td>{fmtTime(w.newest_artifact_at)}</td><td class="num">{w.data_version}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </>
          );
        }}
      </Show>
    </>
  );
}

export function WorkspaceTabs({ ws, current }: { ws: string; current: "artifacts" | "pack" | "receipts" }) {
  return (
    <>
      <p class="crumbs"><Link href={href.workspaces()}>Workspaces</Link> / <span>{ws}</span></p>
      <nav class="tabs" aria-label="Workspace">
        <Link href={href.artifacts(ws)} aria-current={current === "artifacts" ? "page" : undefined}>Artifacts</Link>
        <Link href={href.pack(ws)} aria-current={current === "pack" ? "page" : undefined}>Pack playground</Link>
        <Link href={href.receipts(ws)} aria-current={current === "receipts" ? "page" : undefined}>Receipts</Link>
      </nav>
    </>
  );
}

const filterKeys = ["session_id", "actor_id", "artifact_type", "since", "until"] as const;
const pageSizes = ["10", "25", "50", "100"];

/** toISO turns a datetime-local value (no zone) into the UTC date-time the API reads. */
function toISO(v: string): string {
  if (!v) return "";
  return /T\d\d:\d\d$/.test(v) ? v + ":00Z" : v.endsWith("Z") ? v : v + "Z";
}
function fromISO(v: string): string {
  return v.replace(/:00Z$/, "").replace(/Z$/, "");
}

export function ArtifactsPage({ ws, query }: { ws: string; query: URLSearchParams }) {
  const filters: Record<string, string> = {};
  for (const k of filterKeys) filters[k] = query.get(k) ?? "";
  const cursor = query.get("cursor") ?? "";
  const asked = Number(query.get("limit") ?? "25");
  const limit = Number.isInteger(asked) && asked >= 1 && asked <= 500 ? String(asked) : "25";
  const [prev, setPrev] = useState<string[]>([]);
  const key = query.toString();
  const [st] = useLoad(() => api.artifacts(ws, { ...filters, cursor: cursor || undefined, limit }), [ws, key]);
  // The form follows the URL's filters when they change (paging, a filter
  // applied, a link), and only then: reset during render rather than in an
  // effect, which ran after the first paint and could wipe what was typed
  // meanwhile.
  const [form, setForm] = useState(filters);
  const [formFor, setFormFor] = useState(ws + "?" + key);
  if (formFor !== ws + "?" + key) {
    setFormFor(ws + "?" + key);
    setForm(filters);
  }

  const go = (f: Record<string, string>, cur: string, size = limit) => {
    const q = new URLSearchParams();
    for (const k of filterKeys) if (f[k]) q.set(k, f[k]);
    if (size !== "25") q.set("limit", size);
    if (cur) q.set("cursor", cur);
    navigate(href.artifacts(ws, q));
  };
  // Functional updates: inputs typed in one frame each keep the others'.
  const set = (k: string) => (e: Event) => {
    const v = (e.target as HTMLInputElement).value;
    setForm((f) => ({ ...f, [k]: v }));
  };
  return (
    <>
      <WorkspaceTabs ws={ws} current="artifacts" />
      <h1>Artifacts <span class="muted small">newest first</span></h1>
      <form class="filters card" onSubmit={(e) => { e.preventDefault(); setPrev([]); go({ ...form, since: toISO(fromISO(form.since)), until: toISO(fromISO(form.until)) }, ""); }}>
        <div class="field"><label for="f-session">Session</label><input id="f-session" value={form.session_id} onInput={set("session_id")} /></div>
        <div class="field"><label for="f-actor">Actor</label><input id="f-actor" value={form.actor_id} onInput={set("actor_id")} /></div>
        <div class="field"><label for="f-type">Type</label>
          <select id="f-type" value={form.artifact_type} onChange={set("artifact_type")}>
            <option value="">any</option>
            {artifactTypes.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </div>
        <div class="field"><label for="f-since">Since (UTC)</label><input id="f-since" type="datetime-local" step="1" value={fromISO(form.since)} onInput={set("since")} /></div>
        <div class="field"><label for="f-until">Until (UTC)</label><input id="f-until" type="datetime-local" step="1" value={fromISO(form.until)} onInput={set("until")} /></div>
        <div class="actions">
          <button type="submit" class="primary">Filter</button>
          <button type="button" onClick={() => { setPrev([]); go({}, ""); }}>Reset</button>
        </div>
      </form>
      <Show st={st} what="artifacts">
        {(d) => (
          <>
            {d.artifacts.length === 0 ? <p>No artifact matches.</p> : (
              <div class="tablewrap">
                <table class="artifacts">
                  <caption class="sr">Artifacts of {ws}, newest first</caption>
                  <thead><tr><th scope="col">Time (UTC)</th><th scope="col">Speaker</th><th scope="col">Content</th><th scope="col">Type</th><th scope="col">Actor</th><th scope="col">Session</th><th scope="col">Artifact</th></tr></thead>
                  <tbody>
                    {d.artifacts.map((a) => <ArtifactRow key={a.artifact_id} a={a} />)}
                  </tbody>
                </table>
              </div>
            )}
            <nav class="pager" aria-label="Pages">
              <button type="button" disabled={prev.length === 0} onClick={() => { const p = prev.slice(0, -1); setPrev(p); go(filters, prev[prev.length - 1]); }}>Previous page</button>
              <button type="button" disabled={!d.next_cursor} onClick={() => { setPrev([...prev, cursor]); go(filters, d.next_cursor!); }}>Next page</button>
              <label for="f-size" class="inline">Page size</label>
              <select id="f-size" class="narrow" value={limit} onChange={(e) => { setPrev([]); go(filters, "", (e.target as HTMLSelectElement).value); }}>
                {(pageSizes.includes(limit) ? pageSizes : [limit, ...pageSizes]).map((n) => <option key={n} value={n}>{n}</option>)}
              </select>
            </nav>
          </>
        )}
      </Show>
    </>
  );
}

/**
 * ArtifactRow is one artifact of a listing: its time, speaker and the start
 * of its text (the listing's preview), then its metadata. On a narrow
 * screen each row is a card whose cells name their column (data-label).
 */
function ArtifactRow({ a }: { a: ArtifactSummary }) {
  return (
    <tr>
      <td class="nowrap" data-label="Time (UTC)">{fmtTime(a.timestamp)}</td>
      <td data-label="Speaker" data-testid="speaker">{speakerOf(a)}</td>
      <td data-label="Content" class="preview" data-testid="preview">{a.preview ? a.preview + ([...a.preview].length >= previewLength ? "…" : "") : <span class="muted">(no text yet)</span>}</td>
      <td data-label="Type"><span class="tag">{a.artifact_type}</span></td>
      <td data-label="Actor">{a.actor_id}</td>
      <td data-label="Session">{a.session_id ?? <span class="muted">—</span>}</td>
      <td data-label="Artifact"><Link href={href.artifact(a.artifact_id)} class="mono">{a.artifact_id}</Link></td>
    </tr>
  );
}

/** previewLength is the length of a listing's preview, in code points (the API's rule). */
const previewLength = 160;

/**
 * speakerOf names who an artifact is from: a chat turn's speaker, which its
 * text (and so its preview) starts with ("user: …"), else its actor.
 */
export function speakerOf(a: ArtifactSummary): string {
  if (a.artifact_type === "chat_turn") {
    const m = /^([^:\n]{1,64}): /.exec(a.preview ?? "");
    if (m) return m[1];
  }
  return a.actor_id;
}

export function ArtifactPage({ id }: { id: string }) {
  const [st, reload] = useLoad(async () => {
    const [a, s] = await Promise.all([api.artifact(id), api.artifactStatus(id)]);
    return { a, s };
  }, [id]);
  useEffect(() => {
    if (st.state !== "ok" || !location.hash) return;
    const el = document.getElementById(location.hash.slice(1));
    el?.scrollIntoView({ block: "center" });
    el?.classList.add("target");
  }, [st.state]);
  return (
    <Show st={st} what="the artifact">
      {({ a, s }) => <ArtifactView a={a} s={s} onChange={reload} />}
    </Show>
  );
}

function ArtifactView({ a, s }: { a: Artifact; s: ArtifactStatus; onChange: () => void }) {
  const payload = typeof a.raw_payload === "string" ? a.raw_payload : JSON.stringify(a.raw_payload, null, 2);
  return (
    <>
      <p class="crumbs"><Link href={href.workspaces()}>Workspaces</Link> / <Link href={href.artifacts(a.workspace_id)}>{a.workspace_id}</Link> / <span>artifact</span></p>
      <h1>Artifact <span class="mono small">{a.artifact_id}</span></h1>
      <section aria-labelledby="h-meta" class="card">
        <h2 id="h-meta">Metadata and status</h2>
        <dl class="kv">
          <dt>Type</dt><dd><span class="tag">{a.artifact_type}</span></dd>
          <dt>Actor</dt><dd>{a.actor_id}</dd>
          <dt>Time</dt><dd>{fmtTime(a.timestamp)} <span class="muted">(stored {fmtTime(a.created)})</span></dd>
          <dt>Session</dt><dd>{a.session_id ?? "—"}</dd>
          <dt>Thread</dt><dd>{a.thread_id ?? "—"}</dd>
          <dt>Idempotency key</dt><dd>{a.idempotency_key ?? "—"}</dd>
          <dt>Content hash</dt><dd class="mono break">{a.content_hash}</dd>
          <dt>Visibility</dt><dd>{a.permissions.visibility ?? "public"}{a.permissions.rbac_tags?.length ? `; tags ${a.permissions.rbac_tags.join(", ")}` : ""}</dd>
          <dt>Metadata</dt><dd>{Object.keys(a.metadata).length === 0 ? "—" : Object.entries(a.metadata).map(([k, v]) => <span key={k} class="tag">{k}={v}</span>)}</dd>
          <dt>Status</dt><dd><span class={"status " + s.status}>{s.status}</span> · {s.span_count} span{s.span_count === 1 ? "" : "s"}, {s.total_tokens} tokens · embedding {s.embedding}{s.indexed_at ? ` · indexed ${fmtTime(s.indexed_at)}` : ""}{s.error_message ? ` · ${s.error_message}` : ""}</dd>
        </dl>
      </section>
      <section aria-labelledby="h-payload">
        <h2 id="h-payload">Raw payload <span class="muted small">as ingested{typeof a.raw_payload === "string" ? "" : ", pretty-printed"}</span></h2>
        <pre class="payload" tabIndex={0} aria-label="Raw payload">{payload}</pre>
      </section>
      <section aria-labelledby="h-spans">
        <h2 id="h-spans">Spans</h2>
        <p class="muted">Offsets are code points in the artifact's extracted text. Feedback changes the workspace's next packs.</p>
        <ol class="spans">
          {a.spans.map((sp, i) => (
            <li key={sp.span_id} id={"span-" + sp.span_id} tabIndex={-1}>
              <p><strong>Span {i + 1}</strong> <span class="mono small">{sp.span_id}</span></p>
              <blockquote class="spantext" data-testid="span-text">{sp.text}</blockquote>
              <p class="muted small">offsets {sp.start_offset}–{sp.end_offset} · {sp.token_count} tokens</p>
              <FeedbackButtons ws={a.workspace_id} artifactId={a.artifact_id} spanId={sp.span_id} />
            </li>
          ))}
        </ol>
      </section>
    </>
  );
}
