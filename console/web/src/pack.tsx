// The pack playground: a context-pack request form, the pack with its
// [cite:N] markers as buttons that open the cited span, confidence,
// abstention, conflicts and the pack hash, and feedback whose effect shows
// on the next run.
import { useEffect, useState } from "preact/hooks";
import { api, type Citation, type Conflict, type Receipt } from "./api";
import { evidenceLine, splitCites, splitHead } from "./cite";
import { href } from "./router";
import { WorkspaceTabs } from "./browse";
import { ErrorBox, errorText, FeedbackButtons, fmtScore, Link, shortId } from "./ui";

interface Form {
  query: string;
  max_tokens: string;
  profile: string; // "" is v1 (context text); else a v2 serving profile
  actor_id: string;
  session_id: string;
  policy: string; // JSON object or empty
  metadata: string; // key=value lines
}

/** PackView is what either API version returned, in one shape. */
interface PackView {
  text: string; // context_text, or the v2 snippets as [cite:N] lines
  v2: boolean;
  servingProfile?: string;
  hash: string;
  confidence: number;
  abstain: boolean;
  abstainReason: string | null;
  totalTokens: number;
  receiptId: string;
  citations: Citation[];
  conflicts: Conflict[];
  receipt: Receipt | null;
  receiptError?: string;
}

/** buildRequest turns the form into a request body, or throws naming the bad field. */
export function buildRequest(ws: string, f: Form): Record<string, unknown> {
  const body: Record<string, unknown> = { workspace_id: ws, query: f.query };
  if (f.max_tokens.trim() !== "") {
    const n = Number(f.max_tokens);
    if (!Number.isInteger(n) || n < 1) throw new Error("max_tokens must be a whole number of at least 1");
    body.max_tokens = n;
  }
  if (f.profile) body.profile = f.profile;
  if (f.actor_id.trim()) body.actor_id = f.actor_id.trim();
  if (f.session_id.trim()) body.session_id = f.session_id.trim();
  if (f.policy.trim()) {
    let p: unknown;
    try { p = JSON.parse(f.policy); } catch (e) { throw new Error("policy is not valid JSON: " + (e as Error).message); }
    if (typeof p !== "object" || p === null || Array.isArray(p)) throw new Error("policy must be a JSON object");
    body.policy = p;
  }
  const md: Record<string, string> = {};
  for (const line of f.metadata.split("\n")) {
    const t = line.trim();
    if (!t) continue;
    const eq = t.indexOf("=");
    if (eq <= 0) throw new Error(`metadata line "${t}" is not key=value`);
    md[t.slice(0, eq).trim()] = t.slice(eq + 1).trim();
  }
  if (Object.keys(md).length) body.metadata = md;
  return body;
}

async function runPack(ws: string, f: Form): Promise<PackView> {
  const body = buildRequest(ws, f);
  let v: PackView;
  if (f.profile) {
    const r = await api.packV2(body);
    const sn = [...r.snippets].sort((a, b) => a.citation - b.citation);
    v = {
      // The dated lines when the server sends them; else the snippets as lines.
      text: r.context_text ?? sn.map((s) => `[cite:${s.citation}] ${s.content.replace(/[\r\n]+/g, " ")}\n`).join(""), v2: true,
      servingProfile: r.serving_profile, hash: r.pack_hash, confidence: r.confidence, abstain: r.abstain_flag,
      abstainReason: null, totalTokens: r.token_accounting.used, receiptId: r.receipt_id, citations: [], conflicts: [], receipt: null,
    };
  } else {
    const r = await api.packV1(body);
    v = {
      text: r.context_text, v2: false, hash: r.pack_hash, confidence: r.confidence, abstain: r.abstain_flag,
      abstainReason: r.abstain_reason, totalTokens: r.total_tokens, receiptId: r.receipt_id, citations: r.citations,
      conflicts: r.conflicts, receipt: null,
    };
  }
  // The receipt says what was excluded and why (and, for v2, the citations).
  try {
    const rc = await api.receipt(v.receiptId);
    v.receipt = rc;
    if (v.v2) {
      v.citations = rc.evidence;
      v.conflicts = rc.conflicts;
      v.abstainReason = rc.abstain_reason;
    }
  } catch (e) {
    v.receiptError = errorText(e);
  }
  return v;
}

const emptyForm: Form = { query: "", max_tokens: "4096", profile: "", actor_id: "", session_id: "", policy: "", metadata: "" };

// The playground's last form and result per workspace, kept in memory for
// this tab, so that visiting a receipt or an artifact and coming back finds
// them as they were.
const kept = new Map<string, { form: Form; view: PackView | null }>();

export function PackPage({ ws }: { ws: string }) {
  const [form, setForm] = useState<Form>(kept.get(ws)?.form ?? emptyForm);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  const [view, setView] = useState<PackView | null>(kept.get(ws)?.view ?? null);
  useEffect(() => { kept.set(ws, { form, view }); }, [ws, form, view]);
  const [open, setOpen] = useState<number | null>(null);
  const [stale, setStale] = useState(false);
  // Functional updates: inputs typed in one frame each keep the others'.
  const set = (k: keyof Form) => (e: Event) => {
    const v = (e.target as HTMLInputElement).value;
    setForm((f) => ({ ...f, [k]: v }));
  };

  const run = async (e?: Event) => {
    e?.preventDefault();
    setBusy(true);
    setErr(null);
    try {
      setView(await runPack(ws, form));
      setOpen(null);
      setStale(false);
    } catch (e2) {
      setErr(e2);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <WorkspaceTabs ws={ws} current="pack" />
      <h1>Pack playground</h1>
      <form class="card packform" onSubmit={run}>
        <div class="field wide"><label for="p-query">Query</label>
          <textarea id="p-query" rows={2} required value={form.query} onInput={set("query")} /></div>
        <div class="field"><label for="p-max">Max tokens</label>
          <input id="p-max" type="number" min={1} max={128000} inputMode="numeric" value={form.max_tokens} onInput={set("max_tokens")} /></div>
        <div class="field"><label for="p-profile">Profile</label>
          <select id="p-profile" value={form.profile} onChange={set("profile")} aria-describedby="p-profile-help">
            <option value="">none (v1)</option>
            <option value="low_latency">low_latency (v2)</option>
            <option value="balanced">balanced (v2)</option>
            <option value="high_recall">high_recall (v2)</option>
          </select>
          <small id="p-profile-help" class="muted">v1 returns the context text; a profile uses v2 (snippets).</small></div>
        <div class="field"><label for="p-actor">Actor</label><input id="p-actor" value={form.actor_id} onInput={set("actor_id")} /></div>
        <div class="field"><label for="p-session">Session</label><input id="p-session" value={form.session_id} onInput={set("session_id")} /></div>
        <div class="field wide"><label for="p-policy">Policy (JSON)</label>
          <textarea id="p-policy" rows={2} class="mono" placeholder='{"rbac_required": ["finance"], "privacy_level": "strict"}' value={form.policy} onInput={set("policy")} /></div>
        <div class="field wide"><label for="p-meta">Metadata filter (key=value per line)</label>
          <textarea id="p-meta" rows={2} class="mono" placeholder="project=apollo" value={form.metadata} onInput={set("metadata")} /></div>
        <div class="actions"><button type="submit" class="primary" disabled={busy}>{busy ? "Packing…" : "Run pack"}</button></div>
      </form>
      {err !== null && <ErrorBox error={err} />}
      {view && <PackResult ws={ws} v={view} actor={form.actor_id.trim()} open={open} setOpen={setOpen}
        stale={stale} onFeedback={() => setStale(true)} rerun={() => run()} busy={busy} />}
    </>
  );
}

function PackResult(props: { ws: string; v: PackView; actor: string; open: number | null; setOpen: (n: number | null) => void; stale: boolean; onFeedback: () => void; rerun: () => void; busy: boolean }) {
  const { v, ws } = props;
  const byIndex = new Map(v.citations.map((c) => [c.index, c]));
  const bySpan = new Map(v.citations.map((c) => [c.span_id, c]));
  const excl = new Map<string, number>();
  for (const x of v.receipt?.exclusions ?? []) excl.set(x.reason, (excl.get(x.reason) ?? 0) + 1);
  const cited = props.open !== null ? byIndex.get(props.open) : undefined;
  // Opening a citation moves focus to it (and, on a phone, scrolls it into view below the text).
  useEffect(() => {
    if (props.open !== null) document.getElementById("h-cite")?.focus();
  }, [props.open]);
  return (
    <section aria-labelledby="h-result" class="result">
      <h2 id="h-result">Result</h2>
      {props.stale && (
        <p class="notice" role="status">Feedback recorded. <button type="button" class="primary" onClick={props.rerun} disabled={props.busy}>Run the pack again</button> to see its effect.</p>
      )}
      <dl class="summary">
        <div><dt>Answer</dt><dd>{v.abstain ? <strong class="abstain">Abstained</strong> : <strong class="answered">Evidence found</strong>}{v.abstain && v.abstainReason ? <span class="small"> — {v.abstainReason}</span> : null}</dd></div>
        <div><dt>Confidence</dt><dd><meter min={0} max={1} value={v.confidence} aria-label="Confidence" /> {(v.confidence * 100).toFixed(0)}%</dd></div>
        <div><dt>Tokens</dt><dd>{v.totalTokens}</dd></div>
        {v.servingProfile && <div><dt>Profile used</dt><dd>{v.servingProfile}</dd></div>}
        <div><dt>Receipt</dt><dd><Link href={href.receipt(v.receiptId)}>{shortId(v.receiptId)}</Link></dd></div>
        <div class="wide"><dt>Pack hash</dt><dd class="mono break" data-testid="pack-hash">{v.hash}</dd></div>
        <div class="wide"><dt>Excluded</dt><dd data-testid="exclusions">{excl.size === 0 ? "nothing" : [...excl.entries()].sort().map(([r, n]) => <span key={r} class={"tag reason " + r}>{r} {n}</span>)}</dd></div>
      </dl>
      {v.receiptError && <p class="error">Receipt: {v.receiptError}</p>}
      {v.conflicts.length > 0 && (
        <section aria-labelledby="h-conflicts" class="card conflicts">
          <h3 id="h-conflicts">Conflicts ({v.conflicts.length})</h3>
          <ul>{v.conflicts.map((c) => <ConflictItem key={c.id} ws={ws} c={c} bySpan={bySpan} actor={props.actor} onDone={props.onFeedback} />)}</ul>
        </section>
      )}
      <div class="split">
        <section aria-labelledby="h-context" class="context">
          <h3 id="h-context">{v.v2 ? "Snippets" : "Context text"}</h3>
          {v.text === "" ? <p class="muted">The pack is empty.</p> : (
            <pre class="ctx" data-testid="context-text">
              {splitCites(v.text).map((p, i) => "cite" in p
                ? <button type="button" key={i} class={"cite" + (props.open === p.cite ? " on" : "")} aria-pressed={props.open === p.cite}
                    aria-label={`Open citation ${p.cite}`} onClick={() => props.setOpen(props.open === p.cite ? null : p.cite)}>[cite:{p.cite}]</button>
                : <span key={i}>{p.text}</span>)}
            </pre>
          )}
        </section>
        {props.open !== null && (
          <aside class="card citation" aria-labelledby="h-cite" data-testid="citation">
            <h3 id="h-cite" tabIndex={-1}>Citation [cite:{props.open}]</h3>
            {!cited ? <p class="muted">No citation {props.open} in this pack.</p> : (
              <>
                <CitedLine line={evidenceLine(v.text, cited.index)} c={cited} />
                <dl class="kv">
                  <dt>When</dt><dd data-testid="cite-when">{cited.timestamp ? fmtWhen(cited.timestamp) : "—"}</dd>
                  <dt>Speaker</dt><dd data-testid="cite-speaker">{splitHead(evidenceLine(v.text, cited.index)).speaker || "—"}
                    {cited.actor_id ? <span class="small muted"> (actor {cited.actor_id})</span> : null}</dd>
                  {cited.session_id ? <><dt>Session</dt><dd class="small break">{cited.session_id}</dd></> : null}
                  <dt>Source</dt><dd><span class="tag">{cited.source_type}</span>{cited.pinned ? <span class="tag">pinned</span> : null}</dd>
                  <dt>Relevance</dt><dd>{fmtScore(cited.relevance_score)}</dd>
                  <dt>Span</dt><dd class="mono small break">{cited.span_id} ({cited.start_offset}–{cited.end_offset})</dd>
                  <dt>Artifact</dt><dd><Link href={href.artifact(cited.artifact_id, cited.span_id)} class="mono small">{cited.artifact_id}</Link></dd>
                </dl>
                <FeedbackButtons ws={ws} artifactId={cited.artifact_id} spanId={cited.span_id} actorId={props.actor || undefined} onDone={props.onFeedback} />
              </>
            )}
            <button type="button" class="link" onClick={() => props.setOpen(null)}>Close</button>
          </aside>
        )}
      </div>
    </section>
  );
}

// CitedLine shows a cited span's evidence line: its date and speaker, then
// its text (or the citation's preview when the text has no line for it).
function CitedLine({ line, c }: { line: string; c: Citation }) {
  if (!line) return <blockquote>{c.content_preview}</blockquote>;
  const h = splitHead(line);
  return (
    <blockquote>
      {h.date && <span class="when">{h.date}{h.time ? " " + h.time : ""}</span>}{h.date ? " " : ""}
      {h.speaker && <strong class="who">{h.speaker}:</strong>}{h.speaker ? " " : ""}{h.text}
    </blockquote>
  );
}

// fmtWhen shows an RFC 3339 UTC time as "2026-10-13 14:30:05 UTC".
function fmtWhen(ts: string): string {
  const m = /^(\d{4,}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(ts);
  return m ? `${m[1]} ${m[2]} UTC` : ts;
}

function ConflictItem({ ws, c, bySpan, actor, onDone }: { ws: string; c: Conflict; bySpan: Map<string, Citation>; actor: string; onDone: () => void }) {
  const [msg, setMsg] = useState("");
  const label = (span: string) => { const ci = bySpan.get(span); return ci ? `[cite:${ci.index}]` : shortId(span); };
  const prefer = async (span: string) => {
    try {
      await api.feedback({ workspace_id: ws, action: "resolve_conflict", conflict_id: c.id, preferred_span_id: span, actor_id: actor || undefined, reason: "from the web console" });
      setMsg(`Resolved: ${label(span)} wins; the other is excluded as OUTDATED from the next pack.`);
      onDone();
    } catch (e) {
      setMsg(errorText(e));
    }
  };
  return (
    <li>
      <p>{label(c.claim_a.span_id)} vs {label(c.claim_b.span_id)}: {c.description}</p>
      {c.resolution ? <p class="muted">Resolved ({c.resolution}{c.resolved_by ? ` by ${c.resolved_by}` : ""}).</p> : (
        <div class="btnrow" role="group" aria-label="Resolve this conflict">
          <button type="button" onClick={() => prefer(c.claim_a.span_id)}>Prefer {label(c.claim_a.span_id)}</button>
          <button type="button" onClick={() => prefer(c.claim_b.span_id)}>Prefer {label(c.claim_b.span_id)}</button>
        </div>
      )}
      <p role="status" class="small">{msg}</p>
    </li>
  );
}
