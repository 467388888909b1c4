// The server page: health, version and storage for any key; with the admin
// key (or authentication off) also ingest and pack rates, polled from the
// Prometheus metrics every few seconds and drawn as small charts.
import { Fragment } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, type Health } from "./api";
import { parseProm, rate, sum } from "./prom";
import { errorText, Sparkline } from "./ui";

const pollMs = 3000;
const keep = 40; // points per chart: two minutes at 3 s

interface Point { t: number; ingest: number; packs: number; tokens: number; requests: number }
interface Rates { ingest: number[]; packs: number[]; tokens: number[]; requests: number[] }

export function ServerPage({ signedIn }: { signedIn: boolean }) {
  const [health, setHealth] = useState<Health | null>(null);
  const [healthErr, setHealthErr] = useState("");
  const [metricsNote, setMetricsNote] = useState("");
  const [rates, setRates] = useState<Rates>({ ingest: [], packs: [], tokens: [], requests: [] });
  const [gauges, setGauges] = useState<Record<string, number>>({});
  const last = useRef<Point | null>(null);

  useEffect(() => {
    let live = true;
    let metricsAllowed = true;
    const tick = async () => {
      api.health().then((h) => { if (live) { setHealth(h); setHealthErr(""); } }, (e) => live && setHealthErr(errorText(e)));
      if (!metricsAllowed) return;
      try {
        const text = await api.metrics();
        if (!live) return;
        const { samples } = parseProm(text);
        const p: Point = {
          t: performance.now() / 1000,
          ingest: sum(samples, "loci_ingested_artifacts_total"),
          packs: sum(samples, "loci_context_pack_duration_seconds_count"),
          tokens: sum(samples, "loci_context_pack_tokens_total"),
          requests: sum(samples, "loci_http_requests_total"),
        };
        setGauges({
          segments: sum(samples, "loci_segments"), segment_bytes: sum(samples, "loci_segment_bytes"),
          head_bytes: sum(samples, "loci_head_bytes"), head_artifacts: sum(samples, "loci_head_artifacts"),
          backlog: sum(samples, "loci_embedding_backlog_artifacts"), waiting: sum(samples, "loci_context_packs_waiting"),
          ingested: p.ingest, packs: p.packs,
        });
        const prev = last.current;
        last.current = p;
        if (prev) {
          const dt = p.t - prev.t;
          setRates((r) => ({
            ingest: [...r.ingest, rate(prev.ingest, p.ingest, dt)].slice(-keep),
            packs: [...r.packs, rate(prev.packs, p.packs, dt)].slice(-keep),
            tokens: [...r.tokens, rate(prev.tokens, p.tokens, dt)].slice(-keep),
            requests: [...r.requests, rate(prev.requests, p.requests, dt)].slice(-keep),
          }));
        }
        setMetricsNote("");
      } catch (e) {
        if (e instanceof ApiError && (e.status === 401 || e.status === 403 || e.status === 404)) {
          metricsAllowed = false;
          setMetricsNote(e.status === 404 ? "This server serves no metrics." : "Server-wide rates are shown to the operator's admin key only.");
        } else setMetricsNote(errorText(e));
      }
    };
    tick();
    const h = setInterval(tick, pollMs);
    return () => { live = false; clearInterval(h); };
  }, [signedIn]);

  const st = health?.storage ?? {};
  return (
    <>
      <h1>Server</h1>
      <section class="card" aria-labelledby="h-health">
        <h2 id="h-health">Health</h2>
        {healthErr && <p class="error" role="alert">{healthErr}</p>}
        {health && (
          <dl class="kv">
            <dt>Status</dt><dd><span class={"status " + health.status}>{health.status}</span>{health.reason ? ` — ${health.reason}` : ""}</dd>
            <dt>Version</dt><dd class="mono">{health.version ?? "—"}</dd>
            <dt>Uptime</dt><dd>{fmtDuration(health.uptime_s ?? 0)}</dd>
          </dl>
        )}
      </section>
      <section class="card" aria-labelledby="h-storage">
        <h2 id="h-storage">Storage</h2>
        {Object.keys(st).length === 0 ? <p class="muted">No storage statistics (they need a valid key).</p> : (
          <dl class="kv" data-testid="storage">
            {Object.entries(st).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => (
              <Fragment key={k}><dt>{k.replace(/_/g, " ")}</dt><dd>{fmtStat(k, v)}</dd></Fragment>
            ))}
          </dl>
        )}
      </section>
      <section aria-labelledby="h-rates">
        <h2 id="h-rates">Rates <span class="muted small">every {pollMs / 1000} s</span></h2>
        {metricsNote ? <p class="muted" role="status">{metricsNote}</p> : (
          <>
            <div class="charts">
              <Chart title="Artifacts ingested / s" values={rates.ingest} />
              <Chart title="Context packs / s" values={rates.packs} />
              <Chart title="Pack tokens / s" values={rates.tokens} />
              <Chart title="HTTP requests / s" values={rates.requests} />
            </div>
            {Object.keys(gauges).length > 0 && (
              <dl class="kv small">
                <dt>Ingested since start</dt><dd>{gauges.ingested}</dd>
                <dt>Packs since start</dt><dd>{gauges.packs}</dd>
                <dt>Segments</dt><dd>{gauges.segments} ({fmtBytes(gauges.segment_bytes)})</dd>
                <dt>Head</dt><dd>{gauges.head_artifacts} artifacts, {fmtBytes(gauges.head_bytes)}</dd>
                <dt>Embedding backlog</dt><dd>{gauges.backlog} artifacts</dd>
                <dt>Packs waiting</dt><dd>{gauges.waiting}</dd>
              </dl>
            )}
          </>
        )}
      </section>
    </>
  );
}

function Chart({ title, values }: { title: string; values: number[] }) {
  const cur = values.length ? values[values.length - 1] : 0;
  return (
    <figure class="chart card">
      <figcaption>{title}: <strong>{fmtRate(cur)}</strong> <span class="muted small">peak {fmtRate(Math.max(0, ...values))}</span></figcaption>
      <Sparkline values={values} label={`${title}, last ${values.length} samples, now ${fmtRate(cur)}`} />
    </figure>
  );
}

function fmtRate(x: number): string {
  return x.toFixed(x < 10 ? 2 : 0);
}

function fmtDuration(s: number): string {
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  return d ? `${d} d ${h} h` : h ? `${h} h ${m} min` : m ? `${m} min ${s % 60} s` : `${s} s`;
}

function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i === 0 ? n : n.toFixed(1)} ${u[i]}`;
}

function fmtStat(k: string, v: unknown): string {
  if (typeof v === "number" && /bytes/.test(k)) return `${fmtBytes(v)} (${v})`;
  if (typeof v === "object" && v !== null) return JSON.stringify(v);
  return String(v);
}
