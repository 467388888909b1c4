// Unit tests of the console's pure modules (the Prometheus text parser and
// rates, the [cite:N] splitter), compiled from TypeScript by esbuild into a
// temporary directory.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as esbuild from "esbuild";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = fileURLToPath(new URL("..", import.meta.url));
const out = mkdtempSync(join(tmpdir(), "loci-console-units-"));
process.on("exit", () => rmSync(out, { recursive: true, force: true }));

async function load(name) {
  await esbuild.build({ absWorkingDir: here, entryPoints: [`src/${name}.ts`], bundle: true, format: "esm", platform: "node",
    outfile: join(out, `${name}.mjs`), logLevel: "error" });
  return import(pathToFileURL(join(out, `${name}.mjs`)).href);
}

const prom = await load("prom");
const cite = await load("cite");

const scrape = `# HELP loci_http_requests_total HTTP requests by method, route and status.
# TYPE loci_http_requests_total counter
loci_http_requests_total{method="GET",route="/health",status="200"} 7
loci_http_requests_total{method="POST",route="/v1/ingest",status="201"} 12
loci_http_requests_total{method="GET",route="/ui/*",status="200"} 3
loci_build_info{version="v1.2.3 \\"dev\\"",goversion="go1.26"} 1
loci_ingested_artifacts_total 1.5e3
loci_context_pack_duration_seconds_bucket{le="+Inf"} 4
loci_context_pack_duration_seconds_count 4
weird{a="x,y}z"} NaN
this is not a sample
loci_segments 2 1732400000000
`;

test("parseProm reads names, labels with escapes, values and timestamps", () => {
  const { samples, skipped } = prom.parseProm(scrape);
  assert.equal(skipped, 1);
  assert.equal(samples.length, 9);
  assert.deepEqual(samples[0], { name: "loci_http_requests_total", labels: { method: "GET", route: "/health", status: "200" }, value: 7 });
  assert.equal(samples[3].labels.version, 'v1.2.3 "dev"');
  assert.equal(samples[4].value, 1500);
  assert.equal(samples[5].labels.le, "+Inf");
  assert.equal(samples[7].labels.a, "x,y}z");
  assert.ok(Number.isNaN(samples[7].value));
  assert.equal(samples[8].value, 2, "a trailing timestamp is not the value");
});

test("sum adds matching series", () => {
  const { samples } = prom.parseProm(scrape);
  assert.equal(prom.sum(samples, "loci_http_requests_total"), 22);
  assert.equal(prom.sum(samples, "loci_http_requests_total", { method: "GET" }), 10);
  assert.equal(prom.sum(samples, "loci_http_requests_total", { route: "/v1/ingest", status: "201" }), 12);
  assert.equal(prom.sum(samples, "absent"), 0);
});

test("rate is the counter's increase per second, and survives a reset", () => {
  assert.equal(prom.rate(10, 40, 3), 10);
  assert.equal(prom.rate(40, 40, 3), 0);
  assert.equal(prom.rate(500, 6, 3), 2, "a counter that went down restarted from zero");
  assert.equal(prom.rate(1, 2, 0), 0);
});

test("splitCites keeps text and markers in order", () => {
  const text = "=== TOP EVIDENCE (Most Relevant to Query) ===\n[cite:1] Refunds take 30 days.\n[cite:12] See [cite:x] here.\nConflict [cite:1] vs [cite:12]: numerical\n";
  const pieces = cite.splitCites(text);
  assert.deepEqual(pieces.filter((p) => "cite" in p).map((p) => p.cite), [1, 12, 1, 12]);
  assert.equal(pieces.map((p) => ("cite" in p ? `[cite:${p.cite}]` : p.text)).join(""), text);
  assert.equal(cite.evidenceLine(text, 1), "Refunds take 30 days.");
  assert.equal(cite.evidenceLine(text, 12), "See [cite:x] here.");
  assert.equal(cite.evidenceLine(text, 3), "");
  assert.deepEqual(cite.splitCites(""), []);
});

test("splitHead reads an evidence line's date, time and speaker", () => {
  const cases = [
    ["2026-10-13 14:30 Maya: The sync moves to 15:00.", { date: "2026-10-13", time: "14:30", speaker: "Maya", text: "The sync moves to 15:00." }],
    ["2026-10-02 planner: Launch plan: review on Friday.", { date: "2026-10-02", time: "", speaker: "planner", text: "Launch plan: review on Friday." }],
    ["2026-10-02 09:05 No speaker here, just text: with a colon.", { date: "2026-10-02", time: "09:05", speaker: "", text: "No speaker here, just text: with a colon." }],
    ["2026-10-02 document: x", { date: "2026-10-02", time: "", speaker: "document", text: "x" }],
    ["Refunds take 30 days.", { date: "", time: "", speaker: "", text: "Refunds take 30 days." }],
  ];
  for (const [line, want] of cases) assert.deepEqual(cite.splitHead(line), want, line);
});
