// Client routes under /ui, on the History API (the server answers every
// /ui path with the page; see console.Console.Serve).
import { useEffect, useState } from "preact/hooks";

export const base = "/ui";

export function navigate(to: string, replace = false) {
  if (to === location.pathname + location.search) return;
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  dispatchEvent(new PopStateEvent("popstate"));
}

/** useLocation re-renders on every navigation and returns path and query. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const on = () => setTick((t) => t + 1);
    addEventListener("popstate", on);
    return () => removeEventListener("popstate", on);
  }, []);
  let path = location.pathname;
  if (path.startsWith(base)) path = path.slice(base.length);
  if (path === "") path = "/";
  return { path, query: new URLSearchParams(location.search) };
}

export type Route =
  | { page: "workspaces" }
  | { page: "artifacts"; ws: string }
  | { page: "pack"; ws: string }
  | { page: "receipts"; ws: string }
  | { page: "artifact"; id: string }
  | { page: "receipt"; id: string }
  | { page: "server" }
  | { page: "notfound" };

/** match maps a path below /ui to a route; segments are percent-decoded. */
export function match(path: string): Route {
  const segs = path.split("/").filter((s) => s !== "").map((s) => {
    try { return decodeURIComponent(s); } catch { return s; }
  });
  if (segs.length === 0 || (segs.length === 1 && segs[0] === "workspaces")) return { page: "workspaces" };
  if (segs[0] === "workspaces" && segs.length === 2) return { page: "artifacts", ws: segs[1] };
  if (segs[0] === "workspaces" && segs.length === 3 && segs[2] === "pack") return { page: "pack", ws: segs[1] };
  if (segs[0] === "workspaces" && segs.length === 3 && segs[2] === "receipts") return { page: "receipts", ws: segs[1] };
  if (segs[0] === "artifacts" && segs.length === 2) return { page: "artifact", id: segs[1] };
  if (segs[0] === "receipts" && segs.length === 2) return { page: "receipt", id: segs[1] };
  if (segs[0] === "server" && segs.length === 1) return { page: "server" };
  return { page: "notfound" };
}

export const href = {
  workspaces: () => `${base}/workspaces`,
  artifacts: (ws: string, q?: URLSearchParams) => `${base}/workspaces/${encodeURIComponent(ws)}` + (q && q.toString() ? "?" + q : ""),
  pack: (ws: string) => `${base}/workspaces/${encodeURIComponent(ws)}/pack`,
  receipts: (ws: string, packHash?: string) =>
    `${base}/workspaces/${encodeURIComponent(ws)}/receipts` + (packHash ? "?pack_hash=" + encodeURIComponent(packHash) : ""),
  artifact: (id: string, span?: string) => `${base}/artifacts/${encodeURIComponent(id)}` + (span ? "#span-" + span : ""),
  receipt: (id: string) => `${base}/receipts/${encodeURIComponent(id)}`,
  server: () => `${base}/server`,
};
