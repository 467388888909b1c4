// Receipts: a workspace's list (newest first, by pack hash) and one receipt
// as a readable page.
import { useEffect, useState } from "preact/hooks";
import { api, type Exclusion, type Receipt } from "./api";
import { href, navigate } from "./router";
import { WorkspaceTabs } from "./browse";
import { fmtScore, fmtTime, HBars, Link, Show, shortId, TokenBar, useLoad } from "./ui";

const pageSize = 25;

export function ReceiptsPage({ ws, query }: { ws: string; query: URLSearchParams }) {
  const packHash = query.get("pack_hash") ?? "";
  const offset = Math.max(0, Number(query.get("offset") ?? "0") || 0);
  const [st] = useLoad(() => api.receipts(ws, packHash, offset, pageSize), [ws, packHash, offset]);
  const [hash, setHash] = useState(packHash);
  useEffect(() => setHash(packHash), [packHash]);
  const go = (h: string, off: number) => {
    const q = new URLSearchParams();
    if (h) q.set("pack_hash", h);
    if (off) q.set("offset", String(off));
    navigate(href.receipts(ws) + (q.toString() ? "?" + q : ""));
  };
  return (
    <>
      <WorkspaceTabs ws={ws} current="receipts" />
      <h1>Receipts <span class="muted small">newest first</span></h1>
      <form class="filters card" onSubmit={(e) => { e.preventDefault(); go(hash.trim(), 0); }}>
        <div class="field wide"><label for="r-hash">Pack hash</label>
          <input id="r-hash" class="mono" value={hash} placeholder="sha256:…" onInput={(e) => setHash((e.target as HTMLInputElement).value)} /></div>
        <div class="actions"><button type="submit" class="primary">Filter</button><button type="button" onClick={() => go("", 0)}>Reset</button></div>
      </form>
      <Show st={st} what="receipts">
        {(d) => (
          <>
            <p class="muted">{d.total} receipt{d.total === 1 ? "" : "s"}{packHash ? " with this pack hash" : ""}.</p>
            {d.receipts.length > 0 && (
              <div class="tablewrap">
                <table>
                  <caption class="sr">Receipts of {ws}</caption>
                  <thead><tr><th scope="col">Time (UTC)</th><th scope="col">Query</th><th scope="col" class="num">Confidence</th><th scope="col">Answer</th><th scope="col" class="num">Tokens</th><th scope="col">Pack hash</th></tr></thead>
                  <tbody>
                    {d.receipts.map((r) => (
                      <tr key={r.id}>
                        <td class="nowrap"><Link href={href.receipt(r.id)}>{fmtTime(r.timestamp)}</Link></td>
                        <td>{r.query}</td>
                        <td class="num">{(r.confidence * 100).toFixed(0)}%</td>
                        <td>{r.abstain_flag ? <span class="abstain">abstained</span> : "evidence"}</td>
                        <td class="num">{r.total_tokens}</td>
                        <td><button type="button" class="link mono small" title="Show receipts with this pack hash" onClick={() => go(r.pack_hash, 0)}>{r.pack_hash.slice(0, 19)}…</button></td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <nav class="pager" aria-label="Pages">
              <button type="button" disabled={offset === 0} onClick={() => go(packHash, Math.max(0, offset - pageSize))}>Previous page</button>
              <button type="button" disabled={offset + d.receipts.length >= d.total} onClick={() => go(packHash, offset + pageSize)}>Next page</button>
            </nav>
          </>
        )}
      </Show>
    </>
  );
}

export function ReceiptPage({ id }: { id: string }) {
  const [st] = useLoad(() => api.receipt(id), [id]);
  return <Show st={st} what="the receipt">{(r) => <ReceiptView r={r} />}</Show>;
}

const reasonText: Record<string, string> = {
  BUDGET: "relevant, but the token budget was full",
  POLICY: "blocked by the request's access policy",
  REDUNDANCY: "too similar to an included span",
  LOW_RELEVANCE: "scored below the relevance threshold",
  PRIVATE: "marked private by feedback",
  MARKED_WRONG: "marked wrong by feedback",
  OUTDATED: "marked outdated by feedback",
};

function ReceiptView({ r }: { r: Receipt }) {
  const groups = new Map<string, Exclusion[]>();
  for (const x of r.exclusions) {
    const g = groups.get(x.reason) ?? [];
    g.push(x);
    groups.set(x.reason, g);
  }
  const ta = r.token_accounting;
  return (
    <>
      <p class="crumbs"><Link href={href.workspaces()}>Workspaces</Link> / <Link href={href.receipts(r.workspace_id)}>{r.workspace_id}</Link> / <span>receipt</span></p>
      <h1>Receipt <span class="mono small">{r.id}</span></h1>
      <section class="card" aria-labelledby="h-r-sum">
        <h2 id="h-r-sum">Summary</h2>
        <dl class="kv">
          <dt>Query</dt><dd>{r.query}</dd>
          <dt>Time</dt><dd>{fmtTime(r.timestamp)}</dd>
          <dt>Actor</dt><dd>{r.actor_id || "—"}</dd>
          <dt>Answer</dt><dd>{r.abstain_flag ? <strong class="abstain">Abstained{r.abstain_reason ? `: ${r.abstain_reason}` : ""}</strong> : <strong class="answered">Evidence found</strong>}</dd>
          <dt>Confidence</dt><dd><meter min={0} max={1} value={r.confidence} aria-label="Confidence" /> {(r.confidence * 100).toFixed(0)}%</dd>
          <dt>Pack hash</dt><dd class="mono break"><Link href={href.receipts(r.workspace_id, r.pack_hash)}>{r.pack_hash}</Link></dd>
          {r.assumptions.length > 0 && <><dt>Assumptions</dt><dd><ul class="plain">{r.assumptions.map((a) => <li key={a}>{a}</li>)}</ul></dd></>}
          {Object.keys(r.policy_summary ?? {}).length > 0 && <><dt>Policy</dt><dd class="mono small">{JSON.stringify(r.policy_summary)}</dd></>}
        </dl>
      </section>
      <section aria-labelledby="h-tokens">
        <h2 id="h-tokens">Token accounting</h2>
        <TokenBar budget={ta.budget} parts={[
          { name: "pinned", value: ta.prefix_tokens, cls: "pre" },
          { name: "evidence", value: ta.working_set_tokens, cls: "ws" },
          { name: "headers and conflicts", value: Math.max(0, ta.total_used - ta.prefix_tokens - ta.working_set_tokens), cls: "hdr" },
        ]} />
        <p class="muted small">{ta.total_used} of {ta.budget} tokens used; {ta.remaining} remaining.</p>
      </section>
      <section aria-labelledby="h-channels">
        <h2 id="h-channels">Channel contributions</h2>
        {r.channel_contributions.length === 0 ? <p class="muted">No channel ran.</p> : (
          <>
            <h3 class="small">Fusion weight</h3>
            <HBars label="Fusion weight per retrieval channel" max={Math.max(1, ...r.channel_contributions.map((c) => c.weight))}
              rows={r.channel_contributions.map((c) => ({ name: c.channel, value: c.weight, note: `weight ${c.weight}` }))} />
            <h3 class="small">Spans selected</h3>
            <HBars label="Spans selected per retrieval channel, of the candidates it found"
              rows={r.channel_contributions.map((c) => ({ name: c.channel, value: c.selected_count, total: c.candidate_count, note: `${c.selected_count} of ${c.candidate_count} candidates` }))} />
            <p class="muted small">Bars are to scale: a full weight bar is 1; the spans bars share one scale, the largest candidate count, with each channel's candidates as the pale track.</p>
          </>
        )}
      </section>
      <section aria-labelledby="h-evidence">
        <h2 id="h-evidence">Evidence ({r.evidence.length})</h2>
        {r.evidence.length === 0 ? <p class="muted">Nothing was included.</p> : (
          <ol class="evidence">
            {r.evidence.map((c) => (
              <li key={c.span_id}>
                <p><span class="tag">[cite:{c.index}]</span> <span class="tag">{c.source_type}</span>{c.pinned && <span class="tag">pinned</span>} score {fmtScore(c.relevance_score)} · <Link href={href.artifact(c.artifact_id, c.span_id)}>open span</Link></p>
                <blockquote>{c.content_preview || <span class="muted">(the artifact was erased)</span>}</blockquote>
              </li>
            ))}
          </ol>
        )}
      </section>
      <section aria-labelledby="h-excl">
        <h2 id="h-excl">Exclusions ({r.exclusions.length})</h2>
        {r.exclusions.length === 0 && <p class="muted">Nothing considered was left out.</p>}
        {[...groups.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([reason, xs]) => (
          <details key={reason} open={xs.length <= 8} class="excl" data-reason={reason}>
            <summary><span class={"tag reason " + reason}>{reason}</span> {xs.length} span{xs.length === 1 ? "" : "s"} — {reasonText[reason] ?? ""}</summary>
            <div class="tablewrap">
              <table>
                <thead><tr><th scope="col" class="num">Score</th><th scope="col">Span</th><th scope="col">Detail</th></tr></thead>
                <tbody>
                  {xs.map((x) => (
                    <tr key={x.span_id + reason}>
                      <td class="num">{fmtScore(x.relevance_score)}</td>
                      <td><Link href={href.artifact(x.artifact_id, x.span_id)} class="mono small">{shortId(x.span_id)}</Link></td>
                      <td>{x.detail}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </details>
        ))}
      </section>
      {r.conflicts.length > 0 && (
        <section aria-labelledby="h-rconf">
          <h2 id="h-rconf">Conflicts ({r.conflicts.length})</h2>
          <ul>{r.conflicts.map((c) => <li key={c.id}>{c.description}{c.resolution ? ` — resolved (${c.resolution})` : " — unresolved"}</li>)}</ul>
        </section>
      )}
    </>
  );
}
