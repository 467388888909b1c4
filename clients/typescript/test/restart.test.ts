/**
 * 503 "starting": a server killed with SIGKILL replays its WAL at the next
 * start, and until it has recovered every route answers 503 with
 * Retry-After. The client surfaces that as ServiceUnavailableError when it
 * may not retry, and waits it out when it may.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { LociClient, ServiceUnavailableError, type ArtifactInput, type ResponseInfo } from "../src/index.js";
import { removeBinary, startLoci, type LociServer } from "./server.js";

// Enough artifacts that replaying them takes a moment (about a second here)
// after a crash: the window in which the server answers 503 "starting".
const BATCHES = 40;
const PER_BATCH = 1000;

let srv: LociServer;

before(async () => {
  srv = await startLoci();
});

after(async () => {
  await srv?.close();
  await removeBinary();
});

test("503 starting while the server recovers: an error without retries, the answer with them", async () => {
  const admin = new LociClient({ baseUrl: srv.url, apiKey: srv.adminKey });
  for (let b = 0; b < BATCHES; b++) {
    const artifacts: ArtifactInput[] = Array.from({ length: PER_BATCH }, (_, i) => ({
      artifact_type: "note",
      raw_payload: { content: `note ${b}-${i}: the migration of table ${i} runs in window ${b}` },
    }));
    await admin.ingestBatch({ workspace_id: "replay", actor_id: "a", artifacts });
  }
  await srv.crash();
  await srv.restart(false); // returns as soon as the port accepts: the engine is still recovering

  const noRetry = new LociClient({ baseUrl: srv.url, apiKey: srv.adminKey, retry: { maxRetries: 0 } });
  let starting: ServiceUnavailableError | undefined;
  try {
    await noRetry.listWorkspaces();
  } catch (err) {
    assert.ok(err instanceof ServiceUnavailableError, String(err));
    starting = err;
  }
  assert.ok(starting, "the first request after the crash found the server still recovering");
  assert.equal(starting.status, 503);
  assert.equal(starting.detail, "the service is starting (recovering the data directory); retry shortly");
  assert.equal(starting.retryAfterSeconds, 1);

  const seen: ResponseInfo[] = [];
  const patient = new LociClient({
    baseUrl: srv.url,
    apiKey: srv.adminKey,
    retry: { maxRetries: 30, maxDelayMs: 2000 },
    onResponse: (r) => seen.push(r),
  });
  const list = await patient.listWorkspaces();
  assert.deepEqual(list.workspaces.map((w) => [w.workspace_id, w.artifact_count]), [["replay", BATCHES * PER_BATCH]]);
  assert.equal(seen.at(-1)?.status, 200);
  assert.ok(seen.slice(0, -1).every((r) => r.status === 503));
  assert.deepEqual(seen.map((r) => r.attempt), seen.map((_, i) => i));
});
