// Shared pieces: links that navigate without reloading, loading and error
// states, small SVG charts, and the feedback buttons.
import type { ComponentChildren, JSX } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { api, ApiError, type FeedbackAction, type FeedbackRequest } from "./api";
import { navigate } from "./router";

export function Link(props: { href: string; children: ComponentChildren; class?: string; "aria-current"?: "page" | undefined }) {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(props.href);
  };
  return <a href={props.href} class={props.class} aria-current={props["aria-current"]} onClick={onClick}>{props.children}</a>;
}

export type Loaded<T> = { state: "loading" } | { state: "error"; error: unknown } | { state: "ok"; data: T };

/** useLoad runs load whenever deps change and returns its state and a reload function. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): [Loaded<T>, () => void] {
  const [st, setSt] = useState<Loaded<T>>({ state: "loading" });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setSt({ state: "loading" });
    load().then(
      (data) => live && setSt({ state: "ok", data }),
      (error) => live && setSt({ state: "error", error }),
    );
    return () => { live = false; };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, n]);
  return [st, useCallback(() => setN((x) => x + 1), [])];
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return `${e.detail} (HTTP ${e.status})`;
  if (e instanceof Error) return e.message;
  return String(e);
}

export function ErrorBox({ error }: { error: unknown }) {
  return <p class="error" role="alert">{errorText(error)}</p>;
}

export function Loading({ what }: { what: string }) {
  return <p class="muted" role="status">Loading {what}…</p>;
}

export function Show<T>({ st, what, children }: { st: Loaded<T>; what: string; children: (d: T) => JSX.Element }) {
  if (st.state === "loading") return <Loading what={what} />;
  if (st.state === "error") return <ErrorBox error={st.error} />;
  return children(st.data);
}

export function fmtTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/:00Z$/, "Z");
}

export function fmtScore(x: number): string {
  return Number.isFinite(x) ? x.toFixed(3) : String(x);
}

export function shortId(id: string): string {
  return id.length > 13 ? id.slice(0, 8) + "…" : id;
}

/** Sparkline draws values as a line; the label names it for screen readers. */
export function Sparkline({ values, label, width = 240, height = 48 }: { values: number[]; label: string; width?: number; height?: number }) {
  const max = Math.max(1e-9, ...values);
  const n = values.length;
  const pts = values.map((v, i) => {
    const x = n <= 1 ? width : (i / (n - 1)) * width;
    const y = height - 2 - (v / max) * (height - 4);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  return (
    <svg class="spark" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={label}>
      <line x1="0" y1={height - 1} x2={width} y2={height - 1} class="axis" />
      {n > 1 && <polyline points={pts.join(" ")} class="line" fill="none" />}
      {n > 0 && <circle cx={pts[n - 1].split(",")[0]} cy={pts[n - 1].split(",")[1]} r="2.5" class="dot" />}
    </svg>
  );
}

/**
 * HBars draws one horizontal bar per row, to scale: a full bar is max (by
 * default the largest value). A row's total, when given, is drawn as a
 * track behind its bar (a part of a whole), on the same scale.
 */
export function HBars({ rows, label, max }: { rows: { name: string; value: number; total?: number; note?: string }[]; label: string; max?: number }) {
  const full = max ?? Math.max(1e-9, ...rows.map((r) => Math.max(r.value, r.total ?? 0)));
  const rowH = 22, labelW = 110, barW = 200, width = labelW + barW + 170;
  const w = (v: number) => (Math.min(Math.max(v, 0), full) / full) * barW;
  return (
    <svg class="hbars" viewBox={`0 0 ${width} ${rows.length * rowH}`} width="100%" role="img" aria-label={label}
      preserveAspectRatio="xMinYMin meet">
      {rows.map((r, i) => (
        <g key={r.name} transform={`translate(0 ${i * rowH})`} data-name={r.name}>
          <text x="0" y="15" class="lbl">{r.name}</text>
          {r.total !== undefined && <rect x={labelW} y="4" width={w(r.total)} height="14" class="track" />}
          <rect x={labelW} y="4" width={w(r.value)} height="14" class="bar" />
          <text x={labelW + barW + 6} y="15" class="val">{r.note ?? String(r.value)}</text>
        </g>
      ))}
    </svg>
  );
}

/** TokenBar shows a budget split into parts, the rest as remaining. */
export function TokenBar({ budget, parts }: { budget: number; parts: { name: string; value: number; cls: string }[] }) {
  const total = Math.max(budget, parts.reduce((a, p) => a + p.value, 0), 1);
  let x = 0;
  const used = parts.reduce((a, p) => a + p.value, 0);
  return (
    <figure class="tokenbar">
      <svg viewBox="0 0 1000 24" width="100%" height="24" preserveAspectRatio="none" role="img"
        aria-label={`${used} of ${budget} tokens used: ` + parts.map((p) => `${p.name} ${p.value}`).join(", ")}>
        <rect x="0" y="0" width="1000" height="24" class="rest" />
        {parts.map((p) => {
          const w = (p.value / total) * 1000;
          const r = <rect key={p.name} x={x} y="0" width={w} height="24" class={p.cls} />;
          x += w;
          return r;
        })}
      </svg>
      <figcaption>
        {parts.map((p) => <span key={p.name} class="legend"><span class={"swatch " + p.cls} aria-hidden="true" />{p.name}: {p.value}</span>)}
        <span class="legend"><span class="swatch rest" aria-hidden="true" />remaining: {Math.max(0, budget - used)}</span>
        <span class="legend">budget: {budget}</span>
      </figcaption>
    </figure>
  );
}

const actions: { action: FeedbackAction; label: string; hint: string }[] = [
  { action: "pin", label: "Pin", hint: "always include this span first" },
  { action: "mark_wrong", label: "Mark wrong", hint: "exclude as incorrect" },
  { action: "outdated", label: "Outdated", hint: "exclude as superseded" },
  { action: "private", label: "Private", hint: "hide from other actors" },
  { action: "clear", label: "Clear", hint: "remove every marking" },
];

/** FeedbackButtons sends feedback on one span (or a whole artifact without spanId). */
export function FeedbackButtons(props: { ws: string; artifactId: string; spanId?: string; actorId?: string; onDone?: (a: FeedbackAction) => void }) {
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const send = async (action: FeedbackAction) => {
    setBusy(true);
    const f: FeedbackRequest = { workspace_id: props.ws, action, artifact_id: props.artifactId, reason: "from the web console" };
    if (props.spanId) f.span_id = props.spanId;
    if (props.actorId) f.actor_id = props.actorId;
    try {
      const r = await api.feedback(f);
      setMsg({ ok: true, text: `Recorded ${r.action} on ${r.applied} span${r.applied === 1 ? "" : "s"}; the next pack reflects it.` });
      props.onDone?.(action);
    } catch (e) {
      setMsg({ ok: false, text: errorText(e) });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="feedback">
      <div class="btnrow" role="group" aria-label={props.spanId ? "Feedback on this span" : "Feedback on this artifact"}>
        {actions.map((a) => (
          <button type="button" key={a.action} disabled={busy} title={a.hint} class={a.action === "mark_wrong" ? "danger" : ""}
            onClick={() => send(a.action)}>{a.label}</button>
        ))}
      </div>
      <p class={msg?.ok === false ? "error" : "ok"} role="status" aria-live="polite">{msg?.text ?? ""}</p>
    </div>
  );
}
