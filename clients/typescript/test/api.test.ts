/**
 * The client against the real server: every route, authentication and tenant
 * isolation, strict input errors, v2 batches and jobs, paging, rate limits,
 * retries, timeouts. One `loci serve` (see server.ts) serves the whole file.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  LociAPIError,
  LociClient,
  LociConnectionError,
  LociError,
  LociTimeoutError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitError,
  type ArtifactInput,
  type IngestRequest,
  type LociClientOptions,
  type ResponseInfo,
} from "../src/index.js";
import { repoRoot, removeBinary, startLoci, type LociServer } from "./server.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const sha256 = (s: string) => "sha256:" + createHash("sha256").update(s, "utf8").digest("hex");

let srv: LociServer;
let admin: LociClient;
let seq = 0;

/** A client of the test server with `apiKey`; retries are quick unless options say otherwise. */
function client(apiKey: string | null, options: LociClientOptions = {}): LociClient {
  return new LociClient({ baseUrl: srv.url, apiKey, retry: { initialDelayMs: 20, maxDelayMs: 3000 }, ...options });
}

/** Registers a tenant on `plan` with the admin key and returns its client and id. */
async function tenant(plan: "free" | "pro" | "team" | "enterprise", options: LociClientOptions = {}) {
  const reg = await admin.register({ email: `t${++seq}-${plan}@example.com`, plan });
  assert.equal(reg.plan, plan);
  assert.match(reg.api_key, /^lk_[0-9A-Za-z]{43}$/);
  return { id: reg.tenant_id, key: reg.api_key, loci: client(reg.api_key, options) };
}

/** Asserts that `p` rejects with an error of `Class`, and returns it. */
async function rejects<E extends Error>(p: Promise<unknown>, Class: new (...a: never[]) => E): Promise<E> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof Class, `expected ${Class.name}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${Class.name}, but the call succeeded`);
}

before(async () => {
  // 1 MiB bodies, so the 413 test sends little.
  srv = await startLoci({ env: { MAX_REQUEST_SIZE_BYTES: String(1 << 20) } });
  admin = client(srv.adminKey);
});

after(async () => {
  await srv?.close();
  await removeBinary();
});

describe("system", () => {
  test("health and version", async () => {
    const h = await admin.health();
    assert.equal(h.status, "ok");
    assert.equal(typeof h.uptime_s, "number");
    assert.ok(h.version.length > 0);
    assert.equal(typeof h.storage, "object", "a valid key sees the storage counters");
    assert.equal(await admin.version(), h.version);
    const anon = await client(null).health();
    assert.equal(anon.storage, undefined, "without a key the storage counters are hidden");
  });

  test("openapi is the document this client's types are generated from", async () => {
    const served = await admin.openapi();
    const onDisk = JSON.parse(await readFile(join(repoRoot(), "docs", "openapi.json"), "utf8"));
    assert.deepEqual(served, onDisk);
    assert.equal(served.openapi, "3.1.0");
  });

  test("request ids are sent and carried by errors", async () => {
    const err = await rejects(admin.getArtifact("00000000-0000-4000-8000-000000000000", { requestId: "ts-test-1" }), NotFoundError);
    assert.equal(err.requestId, "ts-test-1");
    assert.equal(err.status, 404);
    assert.ok(err instanceof LociAPIError && err instanceof LociError);
  });
});

describe("authentication and tenants", () => {
  test("a missing key is 401 with the server's detail", async () => {
    const err = await rejects(client(null).listWorkspaces(), AuthenticationError);
    assert.equal(err.status, 401);
    assert.equal(err.detail, "missing API key: send X-API-Key or Authorization: Bearer");
    assert.match(err.requestId ?? "", UUID);
    assert.match(err.message, /GET \/v1\/workspaces: 401 missing API key: send X-API-Key or Authorization: Bearer/);
  });

  test("a bad key is 401", async () => {
    const err = await rejects(client("lk_" + "x".repeat(43)).listKeys(), AuthenticationError);
    assert.equal(err.status, 401);
    assert.ok(err.detail.length > 0);
  });

  test("LOCI_URL and LOCI_API_KEY configure a client without options", async () => {
    const t = await tenant("pro");
    const saved = { url: process.env.LOCI_URL, key: process.env.LOCI_API_KEY };
    process.env.LOCI_URL = srv.url + "/";
    process.env.LOCI_API_KEY = t.key;
    try {
      const fromEnv = new LociClient();
      assert.equal(fromEnv.baseUrl, srv.url);
      assert.equal((await fromEnv.getPlan()).tenant_id, t.id);
      // null overrides the environment: no key is sent.
      await rejects(new LociClient({ apiKey: null }).getPlan(), AuthenticationError);
    } finally {
      for (const [k, v] of [["LOCI_URL", saved.url], ["LOCI_API_KEY", saved.key]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test("register: a taken email is 409 with the admin key; a tenant key may not change plans", async () => {
    const email = `dup-${++seq}@example.com`;
    await admin.register({ email, plan: "pro" });
    const err = await rejects(admin.register({ email, plan: "pro" }), ConflictError);
    assert.match(err.detail, /already registered/);
    const t = await tenant("free");
    const denied = await rejects(t.loci.setPlan({ tenant_id: t.id, plan: "enterprise" }), PermissionDeniedError);
    assert.equal(denied.status, 403);
  });

  test("keys: create, list, use, revoke; the last key cannot be revoked", async () => {
    const t = await tenant("pro");
    const created = await t.loci.createKey();
    assert.match(created.api_key, /^lk_[0-9A-Za-z]{43}$/);
    assert.ok(created.api_key.startsWith(created.prefix));
    const list = await t.loci.listKeys();
    assert.equal(list.keys.length, 2);
    const listed = list.keys.find((k) => k.id === created.id);
    assert.ok(listed);
    assert.equal(listed.revoked, false);
    assert.equal(listed.prefix, created.prefix);

    const second = client(created.api_key);
    assert.equal((await second.getPlan()).tenant_id, t.id);
    const first = list.keys.find((k) => k.id !== created.id);
    assert.ok(first);
    assert.deepEqual(await second.revokeKey(first.id), { id: first.id, revoked: true });
    await rejects(t.loci.listKeys(), AuthenticationError);
    const last = await rejects(second.revokeKey(created.id), ConflictError);
    assert.equal(last.status, 409);
    const after = await second.listKeys();
    assert.deepEqual(
      after.keys.map((k) => [k.id, k.revoked]).sort(),
      [[first.id, true], [created.id, false]].sort(),
    );
  });

  test("tenant isolation: tenant B gets 404 for tenant A's artifact, receipt and job", async () => {
    const a = await tenant("pro");
    const b = await tenant("pro");
    const ws = "shared-name";
    const ing = await a.loci.ingest({ workspace_id: ws, actor_id: "alice", artifact_type: "note", raw_payload: { content: "Tenant A's secret: the vault code is 4417." } });
    const pack = await a.loci.contextPack({ workspace_id: ws, query: "vault code", max_tokens: 200 });
    assert.equal(pack.citations[0]?.artifact_id, ing.artifact_id);
    const queued = await a.loci.ingestBatch({ workspace_id: ws, actor_id: "alice", async_index: true, artifacts: [{ artifact_type: "note", raw_payload: "queued for A" }] });
    const jobId = queued.queued_jobs[0]!.job_id;

    for (const call of [
      () => b.loci.getArtifact(ing.artifact_id),
      () => b.loci.getArtifactStatus(ing.artifact_id),
      () => b.loci.eraseArtifact(ing.artifact_id),
      () => b.loci.getReceipt(pack.receipt_id),
      () => b.loci.getJob(jobId),
    ]) {
      const err = await rejects(call(), NotFoundError);
      assert.equal(err.status, 404);
    }
    // B's view of the same workspace id is its own, empty one.
    assert.deepEqual((await b.loci.listArtifacts(ws)).artifacts, []);
    assert.equal((await b.loci.listReceipts({ workspace_id: ws })).total, 0);
    assert.deepEqual((await b.loci.listWorkspaces()).workspaces, []);
    const bPack = await b.loci.contextPack({ workspace_id: ws, query: "vault code", max_tokens: 200 });
    assert.equal(bPack.abstain_flag, true);
    assert.deepEqual(bPack.citations, []);
    // A still reads its artifact.
    assert.deepEqual((await a.loci.getArtifact(ing.artifact_id)).raw_payload, { content: "Tenant A's secret: the vault code is 4417." });
    assert.equal((await a.loci.waitForJob(jobId, { intervalMs: 20 })).status, "done");
  });
});

describe("artifacts (v1 ingest)", () => {
  test("ingest, idempotent replay, read back, status", async () => {
    const { loci } = await tenant("pro");
    const raw_payload = { role: "user", content: "My daughter's name is Ilse and she likes rowing." };
    const req: IngestRequest = {
      workspace_id: "family",
      actor_id: "user-1",
      artifact_type: "chat_turn",
      raw_payload,
      idempotency_key: "turn-1",
      session_id: "s1",
      metadata: { source: "chat", lang: "en" },
      timestamp: "2026-03-01T10:00:00Z",
    };
    const first = await loci.ingest(req);
    assert.match(first.artifact_id, UUID);
    assert.equal(first.content_hash, sha256(JSON.stringify(raw_payload)));
    assert.equal(first.indexed, true);
    assert.equal(first.idempotent_replay, false);
    assert.ok(first.span_ids.length >= 1);

    const again = await loci.ingest(req);
    assert.equal(again.idempotent_replay, true);
    assert.equal(again.artifact_id, first.artifact_id);

    const other = await rejects(loci.ingest({ ...req, raw_payload: { role: "user", content: "something else" } }), ConflictError);
    assert.ok(other.detail.includes(first.artifact_id), other.detail);

    const art = await loci.getArtifact(first.artifact_id);
    assert.deepEqual(art.raw_payload, raw_payload);
    assert.equal(art.content_hash, first.content_hash);
    assert.deepEqual(art.metadata, { source: "chat", lang: "en" });
    assert.equal(art.session_id, "s1");
    assert.equal(art.thread_id, null);
    assert.equal(art.idempotency_key, "turn-1");
    assert.equal(art.timestamp, "2026-03-01T10:00:00Z");
    assert.equal(art.status, "indexed");
    assert.deepEqual(art.spans.map((s) => s.span_id), first.span_ids);

    const st = await loci.getArtifactStatus(first.artifact_id);
    assert.equal(st.status, "indexed");
    assert.equal(st.indexed, true);
    assert.equal(st.artifact_type, "chat_turn");
    assert.equal(st.span_count, first.span_ids.length);
    assert.equal(st.total_tokens, art.spans.reduce((n, s) => n + s.token_count, 0));
    assert.ok(["pending", "embedded"].includes(st.embedding), st.embedding);
  });

  test("strict input: a 400 whose detail names the field", async () => {
    const { loci } = await tenant("pro");
    const base = { workspace_id: "strict", actor_id: "a", artifact_type: "note", raw_payload: { content: "x" } };
    const unknown = await rejects(loci.ingest({ ...base, metdata: { a: "b" } } as unknown as IngestRequest), BadRequestError);
    assert.match(unknown.detail, /^metdata: unknown field; allowed fields here: .*metadata/);
    const badType = await rejects(loci.ingest({ ...base, artifact_type: "memo" } as unknown as IngestRequest), BadRequestError);
    assert.match(badType.detail, /^artifact_type: unknown value "memo"; allowed: .*chat_turn/);
    const badWs = await rejects(loci.ingest({ ...base, workspace_id: "team/prod" } as IngestRequest), BadRequestError);
    assert.match(badWs.detail, /^workspace_id: /);
    const badMeta = await rejects(loci.ingest({ ...base, metadata: { team: 7 } } as unknown as IngestRequest), BadRequestError);
    assert.match(badMeta.detail, /^metadata\.team: expected a string/);
    const badBatch = await rejects(
      loci.ingestBatch({
        workspace_id: "strict",
        actor_id: "a",
        artifacts: [{ artifact_type: "note", raw_payload: "ok" }, { artifact_type: "note", raw_payload: "x", metdata: {} } as unknown as ArtifactInput],
      }),
      BadRequestError,
    );
    assert.match(badBatch.detail, /^artifacts\[1\]\.metdata: unknown field/);
    assert.deepEqual((await loci.listWorkspaces()).workspaces, [], "nothing of a refused batch is stored");
  });

  test("a body over MAX_REQUEST_SIZE_BYTES is 413", async () => {
    const { loci } = await tenant("pro");
    const err = await rejects(
      loci.ingest({ workspace_id: "big", actor_id: "a", artifact_type: "note", raw_payload: "x".repeat(2 << 20) }),
      PayloadTooLargeError,
    );
    assert.equal(err.status, 413);
    assert.ok(err.detail.length > 0);
  });

  test("erase an artifact: gone at once, a second erase is 404", async () => {
    const { loci } = await tenant("pro");
    const keep = await loci.ingest({ workspace_id: "er", actor_id: "a", artifact_type: "note", raw_payload: { content: "keep me" } });
    const gone = await loci.ingest({ workspace_id: "er", actor_id: "a", artifact_type: "note", raw_payload: { content: "erase me" }, idempotency_key: "k" });
    const erased = await loci.eraseArtifact(gone.artifact_id);
    assert.deepEqual(erased, { artifact_id: gone.artifact_id, workspace_id: "er", artifacts_erased: 1, spans_erased: gone.span_ids.length });
    await rejects(loci.getArtifact(gone.artifact_id), NotFoundError);
    await rejects(loci.eraseArtifact(gone.artifact_id), NotFoundError);
    assert.deepEqual((await loci.listArtifacts("er")).artifacts.map((a) => a.artifact_id), [keep.artifact_id]);
    // The idempotency key is free again: the same request stores a new artifact.
    const anew = await loci.ingest({ workspace_id: "er", actor_id: "a", artifact_type: "note", raw_payload: { content: "erase me" }, idempotency_key: "k" });
    assert.equal(anew.idempotent_replay, false);
    assert.notEqual(anew.artifact_id, gone.artifact_id);
  });
});

describe("context packs, feedback and receipts", () => {
  const ws = "agent-memory";
  let loci: LociClient;
  const ids: Record<string, string> = {};

  before(async () => {
    ({ loci } = await tenant("pro"));
    const notes: Record<string, { content: string; tags?: string[]; team?: string }> = {
      deploy: { content: "The deploy window is Tuesday 14:00 UTC, approved by the release manager.", tags: ["ops"], team: "infra" },
      plant: { content: "The office plant needs water every Friday.", team: "office" },
      budget: { content: "The marketing budget for the third quarter is 40000 euros.", tags: ["finance"], team: "growth" },
    };
    // wait_for_embedding: the packs below must not race the embedder (an
    // embedding landing moves the data version and adds semantic candidates).
    const names = Object.keys(notes);
    const res = await loci.ingestBatch({
      workspace_id: ws,
      actor_id: "agent",
      wait_for_embedding: true,
      artifacts: names.map((name) => {
        const n = notes[name]!;
        return {
          artifact_type: "note",
          raw_payload: { content: n.content },
          permissions: n.tags ? { rbac_tags: n.tags } : undefined,
          metadata: n.team ? { team: n.team } : undefined,
        };
      }),
    });
    names.forEach((name, i) => {
      assert.equal(res.ingested[i]!.embedding, "embedded");
      ids[name] = res.ingested[i]!.artifact_id;
    });
  });

  test("v1 pack: cited evidence, deterministic, with a stored receipt", async () => {
    const req = { workspace_id: ws, query: "When is the deploy window?", max_tokens: 300, actor_id: "agent" };
    const pack = await loci.contextPack(req);
    assert.equal(pack.abstain_flag, false);
    assert.equal(pack.citations[0]?.artifact_id, ids.deploy);
    assert.equal(pack.citations[0]?.index, 1);
    // Each evidence line says when (UTC date and time) and who (the actor of a note).
    assert.match(pack.context_text, /\[cite:1\] \d{4}-\d{2}-\d{2}(?: \d{2}:\d{2})? agent: The deploy window is Tuesday 14:00 UTC/);
    assert.equal(pack.citations[0]?.actor_id, "agent");
    assert.equal(pack.citations[0]?.session_id, null);
    assert.match(pack.citations[0]?.timestamp ?? "", /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$/);
    assert.ok(pack.total_tokens > 0 && pack.total_tokens <= 300);
    assert.match(pack.pack_hash, /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual(await loci.contextPack(req), pack, "identical requests on identical data give identical packs");

    const receipt = await loci.getReceipt(pack.receipt_id);
    assert.equal(receipt.id, pack.receipt_id);
    assert.equal(receipt.query, req.query);
    assert.equal(receipt.workspace_id, ws);
    assert.equal(receipt.pack_hash, pack.pack_hash);
    assert.deepEqual(receipt.evidence, pack.citations);
    assert.equal(receipt.token_accounting.budget, 300);
    assert.equal(receipt.token_accounting.total_used, pack.total_tokens);
  });

  test("v1 pack with policy and metadata filter", async () => {
    const denied = await loci.contextPack({ workspace_id: ws, query: "When is the deploy window?", max_tokens: 300, policy: { rbac_required: ["finance"] } });
    assert.ok(!denied.citations.some((c) => c.artifact_id === ids.deploy));
    const receipt = await loci.getReceipt(denied.receipt_id);
    const excl = receipt.exclusions.find((e) => e.artifact_id === ids.deploy);
    assert.equal(excl?.reason, "POLICY");
    assert.equal(excl?.detail, 'missing required RBAC tag "finance"');
    assert.deepEqual(receipt.policy_summary.rbac_required, ["finance"]);

    const filtered = await loci.contextPack({ workspace_id: ws, query: "budget deploy plant", max_tokens: 500, metadata: { team: "growth" } });
    assert.deepEqual([...new Set(filtered.citations.map((c) => c.artifact_id))], [ids.budget]);

    const typo = await rejects(
      loci.contextPack({ workspace_id: ws, query: "x", policy: { rbac_requried: ["finance"] } } as never),
      BadRequestError,
    );
    assert.match(typo.detail, /^policy\.rbac_requried: unknown field/);
    const empty = await rejects(loci.contextPack({ workspace_id: ws, query: "" }), BadRequestError);
    assert.match(empty.detail, /query/);
  });

  test("dated evidence and a since/until window, v1 and v2", async () => {
    const dws = "dated-memory";
    const turns = [
      { day: "2026-10-01", content: "Maya: The launch is on November 20." },
      { day: "2026-10-13", content: "Maya: The launch is pushed to December 4." },
      { day: "2026-11-02", content: "Maya: The launch moved again, to December 11." },
    ];
    const days: Record<string, string> = {};
    for (const t of turns) {
      const r = await loci.ingest({
        workspace_id: dws, actor_id: "u-maya", artifact_type: "chat_turn", session_id: "s1",
        timestamp: `${t.day}T14:30:00Z`, raw_payload: { role: "user", content: t.content },
      });
      days[r.artifact_id] = t.day;
    }
    const q = { workspace_id: dws, query: "When is the launch?", max_tokens: 600 };
    const all = await loci.contextPack(q);
    assert.equal(all.citations.length, 3);
    assert.match(all.context_text, /\] 2026-10-13 14:30 Maya: The launch is pushed to December 4\.\n/);
    for (const c of all.citations) {
      assert.equal(c.timestamp, `${days[c.artifact_id]}T14:30:00Z`);
      assert.equal(c.actor_id, "u-maya");
      assert.equal(c.session_id, "s1");
    }
    assert.deepEqual((await loci.getReceipt(all.receipt_id)).evidence, all.citations);

    const windowed = await loci.contextPack({ ...q, since: "2026-10-13T14:30:00Z", until: "2026-11-01" });
    assert.deepEqual(windowed.citations.map((c) => days[c.artifact_id]), ["2026-10-13"]);
    const receipt = await loci.getReceipt(windowed.receipt_id);
    assert.equal(receipt.since, "2026-10-13T14:30:00Z");
    assert.equal(receipt.until, "2026-11-01T00:00:00Z");
    assert.notEqual(windowed.receipt_id, (await loci.contextPack({ ...q, since: "2026-10-13T14:30:00Z" })).receipt_id);

    const v2 = await loci.contextPackV2({ ...q, profile: "balanced", since: "2026-10-02" });
    assert.deepEqual(v2.snippets.map((s) => days[s.artifact_id]).sort(), ["2026-10-13", "2026-11-02"]);
    for (const s of v2.snippets) {
      assert.equal(s.timestamp, `${days[s.artifact_id]}T14:30:00Z`);
      assert.equal(s.actor_id, "u-maya");
      assert.equal(s.session_id, "s1");
    }
    assert.match(v2.context_text, /\] 2026-11-02 14:30 Maya: The launch moved again/);
    assert.ok(Array.isArray(v2.conflicts));

    const bad = await rejects(loci.contextPack({ ...q, since: "2026-11-02", until: "2026-10-01" }), BadRequestError);
    assert.match(bad.detail, /^since: 2026-11-02T00:00:00Z is after until \(2026-10-01T00:00:00Z\)/);
  });

  test("v2 pack with a profile; v2 is refused on plan free", async () => {
    const pack = await loci.contextPackV2({ workspace_id: ws, query: "When is the deploy window?", max_tokens: 300, profile: "low_latency" });
    assert.equal(pack.serving_profile, "low_latency");
    assert.equal(pack.snippets[0]?.artifact_id, ids.deploy);
    assert.match(pack.snippets[0]?.content ?? "", /Tuesday 14:00 UTC/);
    assert.equal(pack.snippets[0]?.citation, 1);
    assert.equal(pack.token_accounting.snippets, pack.snippets.length);
    assert.ok(pack.token_accounting.used <= 300);
    assert.equal(pack.citation_count, new Set(pack.snippets.map((s) => s.artifact_id)).size);
    assert.equal((await loci.getReceipt(pack.receipt_id)).id, pack.receipt_id);

    const free = await tenant("free");
    const err = await rejects(free.loci.contextPackV2({ workspace_id: ws, query: "x", max_tokens: 100 }), PermissionDeniedError);
    assert.match(err.detail, /^plan free does not include the v2 API/);
  });

  test("feedback: pin puts a span in every pack; mark_wrong excludes it; clear undoes", async () => {
    const pin = await loci.feedback({ workspace_id: ws, action: "pin", artifact_id: ids.plant!, actor_id: "agent", reason: "always relevant" });
    assert.equal(pin.action, "pin");
    assert.equal(pin.applied, 1);
    assert.match(pin.created_at, /^\d{4}-\d\d-\d\dT/);
    const pinned = await loci.contextPack({ workspace_id: ws, query: "When is the deploy window?", max_tokens: 400 });
    assert.match(pinned.context_text, /^=== PINNED CONTEXT \(Authoritative\) ===/);
    assert.equal(pinned.citations.find((c) => c.artifact_id === ids.plant)?.pinned, true);

    await loci.feedback({ workspace_id: ws, action: "mark_wrong", artifact_id: ids.deploy! });
    const wrong = await loci.contextPack({ workspace_id: ws, query: "When is the deploy window?", max_tokens: 400 });
    assert.ok(!wrong.citations.some((c) => c.artifact_id === ids.deploy));
    const receipt = await loci.getReceipt(wrong.receipt_id);
    assert.equal(receipt.exclusions.find((e) => e.artifact_id === ids.deploy)?.reason, "MARKED_WRONG");

    for (const id of [ids.deploy!, ids.plant!]) await loci.feedback({ workspace_id: ws, action: "clear", artifact_id: id });
    const cleared = await loci.contextPack({ workspace_id: ws, query: "When is the deploy window?", max_tokens: 400 });
    assert.equal(cleared.citations[0]?.artifact_id, ids.deploy);
    assert.ok(!cleared.citations.some((c) => c.pinned));

    const missing = await rejects(loci.feedback({ workspace_id: ws, action: "pin" }), BadRequestError);
    assert.match(missing.detail, /artifact_id/);
    await rejects(loci.feedback({ workspace_id: ws, action: "pin", artifact_id: "00000000-0000-4000-8000-000000000000" }), NotFoundError);
  });

  test("receipts: list pages by offset, filter by pack hash, iterate all", async () => {
    const page = await loci.listReceipts({ workspace_id: ws, limit: 2 });
    assert.equal(page.limit, 2);
    assert.equal(page.offset, 0);
    assert.equal(page.receipts.length, 2);
    assert.ok(page.total >= 6, `total ${page.total}`);
    const all = [];
    for await (const r of loci.iterReceipts({ workspace_id: ws, limit: 2 })) all.push(r);
    assert.equal(all.length, page.total);
    assert.equal(new Set(all.map((r) => r.id)).size, page.total);
    assert.deepEqual(all.slice(0, 2), page.receipts);
    const ts = all.map((r) => r.timestamp);
    assert.deepEqual(ts, [...ts].sort().reverse(), "newest first");

    const one = all[all.length - 1]!;
    const byHash = await loci.listReceipts({ workspace_id: ws, pack_hash: one.pack_hash });
    assert.ok(byHash.receipts.length >= 1);
    assert.ok(byHash.receipts.every((r) => r.pack_hash === one.pack_hash));
    const bad = await rejects(loci.listReceipts({ workspace_id: ws, limit: 501 }), BadRequestError);
    assert.match(bad.detail, /limit/);
  });
});

describe("workspaces, listing and settings", () => {
  test("list artifacts with cursor paging and filters; list and erase workspaces", async () => {
    const { loci } = await tenant("pro");
    const artifacts: ArtifactInput[] = Array.from({ length: 7 }, (_, i) => ({
      artifact_type: i % 2 ? "note" : "document",
      raw_payload: i % 2 ? { content: `note ${i}` } : { title: `doc ${i}`, content: `document ${i}` },
      timestamp: `2026-01-0${i + 1}T09:00:00Z`,
      session_id: i < 4 ? "early" : "late",
    }));
    const res = await loci.ingestBatch({ workspace_id: "paging", actor_id: "a", artifacts });
    const newestFirst = res.ingested.map((r) => r.artifact_id).reverse();

    const first = await loci.listArtifacts("paging", { limit: 3 });
    assert.equal(first.limit, 3);
    assert.deepEqual(first.artifacts.map((a) => a.artifact_id), newestFirst.slice(0, 3));
    assert.equal(typeof first.next_cursor, "string");
    const second = await loci.listArtifacts("paging", { limit: 3, cursor: first.next_cursor! });
    assert.deepEqual(second.artifacts.map((a) => a.artifact_id), newestFirst.slice(3, 6));

    const all = [];
    for await (const a of loci.iterArtifacts("paging", { limit: 3 })) all.push(a.artifact_id);
    assert.deepEqual(all, newestFirst);

    const docs = [];
    for await (const a of loci.iterArtifacts("paging", { artifact_type: "document", limit: 2 })) docs.push(a);
    assert.deepEqual(docs.map((a) => a.timestamp), ["2026-01-07T09:00:00Z", "2026-01-05T09:00:00Z", "2026-01-03T09:00:00Z", "2026-01-01T09:00:00Z"]);
    const late = await loci.listArtifacts("paging", { session_id: "late", since: "2026-01-06T00:00:00Z" });
    assert.deepEqual(late.artifacts.map((a) => a.timestamp), ["2026-01-07T09:00:00Z", "2026-01-06T09:00:00Z"]);
    assert.equal(late.next_cursor, null);
    const bad = await rejects(loci.listArtifacts("paging", { since: "yesterday" }), BadRequestError);
    assert.match(bad.detail, /since/);

    await loci.ingest({ workspace_id: "other", actor_id: "a", artifact_type: "note", raw_payload: "x" });
    const listed = await loci.listWorkspaces();
    assert.deepEqual(listed.workspaces.map((w) => [w.workspace_id, w.artifact_count]), [["other", 1], ["paging", 7]]);
    assert.equal(listed.workspaces[1]?.newest_artifact_at, "2026-01-07T09:00:00Z");

    const erased = await loci.eraseWorkspace("paging");
    assert.equal(erased.workspace_id, "paging");
    assert.equal(erased.artifacts_erased, 7);
    assert.equal(erased.spans_erased, res.ingested.reduce((n, r) => n + r.span_ids.length, 0));
    assert.deepEqual((await loci.listWorkspaces()).workspaces.map((w) => w.workspace_id), ["other"]);
    await rejects(loci.getArtifact(newestFirst[0]!), NotFoundError);
  });

  test("a workspace id with a slash stays one path segment", async () => {
    const { loci } = await tenant("pro");
    const err = await rejects(loci.eraseWorkspace("team/../prod"), BadRequestError);
    assert.match(err.detail, /workspace/);
  });

  test("retention settings: get, set, clear, and their effect", async () => {
    const { loci } = await tenant("pro");
    assert.deepEqual(await loci.getWorkspaceSettings("ret"), { workspace_id: "ret", retention_days: null });
    const old = await loci.ingest({ workspace_id: "ret", actor_id: "a", artifact_type: "note", raw_payload: "old", timestamp: "2025-01-01T00:00:00Z" });
    const recent = await loci.ingest({ workspace_id: "ret", actor_id: "a", artifact_type: "note", raw_payload: "recent", timestamp: "2025-06-01T00:00:00Z" });
    assert.deepEqual(await loci.setWorkspaceSettings("ret", { retention_days: 30 }), { workspace_id: "ret", retention_days: 30 });
    assert.equal((await loci.getWorkspaceSettings("ret")).retention_days, 30);
    assert.deepEqual((await loci.listArtifacts("ret")).artifacts.map((a) => a.artifact_id), [recent.artifact_id]);
    await rejects(loci.getArtifact(old.artifact_id), NotFoundError);
    assert.deepEqual(await loci.setWorkspaceSettings("ret", { retention_days: null }), { workspace_id: "ret", retention_days: null });
    const bad = await rejects(loci.setWorkspaceSettings("ret", { retention_days: 0 }), BadRequestError);
    assert.match(bad.detail, /retention_days/);
  });
});

describe("v2 batches and jobs", () => {
  test("batch with idempotency keys: a resend replays, another artifact under a key is 409", async () => {
    const { loci } = await tenant("pro");
    const artifacts: ArtifactInput[] = [
      { artifact_type: "chat_turn", raw_payload: { role: "user", content: "I moved to Lisbon in May." }, idempotency_key: "m1" },
      { artifact_type: "chat_turn", raw_payload: { role: "assistant", content: "Noted: Lisbon since May." }, idempotency_key: "m2" },
    ];
    const first = await loci.ingestBatch({ workspace_id: "b", actor_id: "a", artifacts });
    assert.equal(first.workspace_id, "b");
    assert.equal(first.ingested.length, 2);
    first.ingested.forEach((it, i) => {
      assert.match(it.artifact_id, UUID);
      assert.equal(it.idempotent_replay, false);
      assert.equal(it.content_hash, sha256(JSON.stringify(artifacts[i]!.raw_payload)));
      assert.ok(it.span_ids.length >= 1);
    });
    const again = await loci.ingestBatch({ workspace_id: "b", actor_id: "a", artifacts });
    assert.deepEqual(again.ingested.map((i) => [i.artifact_id, i.idempotent_replay]), first.ingested.map((i) => [i.artifact_id, true]));

    const clash = await rejects(
      loci.ingestBatch({ workspace_id: "b", actor_id: "a", artifacts: [{ ...artifacts[0]!, raw_payload: { role: "user", content: "Porto, actually." } }] }),
      ConflictError,
    );
    assert.match(clash.detail, /^artifacts\[0\]\.idempotency_key/);
    assert.ok(clash.detail.includes(first.ingested[0]!.artifact_id));
    assert.equal((await loci.listArtifacts("b")).artifacts.length, 2);
  });

  test("wait_for_embedding answers once every item is embedded", async () => {
    const { loci } = await tenant("pro");
    const res = await loci.ingestBatch({
      workspace_id: "emb",
      actor_id: "a",
      wait_for_embedding: true,
      artifacts: [{ artifact_type: "note", raw_payload: { content: "Rowing practice is on Saturday mornings." } }, { artifact_type: "note", raw_payload: "Ilse's coach is Marta." }],
    });
    assert.deepEqual(res.ingested.map((i) => i.embedding), ["embedded", "embedded"]);
    assert.equal((await loci.getArtifactStatus(res.ingested[0]!.artifact_id)).embedding, "embedded");
    const both = await rejects(
      loci.ingestBatch({ workspace_id: "emb", actor_id: "a", wait_for_embedding: true, async_index: true, artifacts: [{ artifact_type: "note", raw_payload: "x" }] }),
      BadRequestError,
    );
    assert.match(both.detail, /wait_for_embedding|async_index/);
  });

  test("async jobs: queued, polled to done, the artifact readable", async () => {
    const { loci } = await tenant("pro");
    const queued = await loci.ingestBatch({
      workspace_id: "jobs",
      actor_id: "a",
      async_index: true,
      artifacts: [
        { artifact_type: "note", raw_payload: { content: "first queued note" }, idempotency_key: "q1" },
        { artifact_type: "note", raw_payload: { content: "second queued note" } },
      ],
    });
    assert.equal(queued.workspace_id, "jobs");
    assert.equal(queued.queued_jobs.length, 2);
    assert.equal(queued.queued_jobs[0]!.idempotency_key, "q1");
    assert.equal(queued.queued_jobs[1]!.idempotency_key, undefined);
    const jobs = await Promise.all(queued.queued_jobs.map((j) => loci.waitForJob(j.job_id, { intervalMs: 20, deadlineMs: 30_000 })));
    for (const [i, job] of jobs.entries()) {
      assert.equal(job.status, "done");
      assert.equal(job.job_id, queued.queued_jobs[i]!.job_id);
      assert.equal(job.workspace_id, "jobs");
      assert.equal(job.error_message, null);
      assert.match(job.artifact_id ?? "", UUID);
    }
    const art = await loci.getArtifact(jobs[0]!.artifact_id!);
    assert.deepEqual(art.raw_payload, { content: "first queued note" });
    assert.equal(art.idempotency_key, "q1");
    assert.equal((await loci.getJob(jobs[1]!.job_id)).status, "done");
    await rejects(loci.getJob("no-such-job"), NotFoundError);
  });
});

describe("billing", () => {
  test("plans, a tenant's plan, plan changes, usage", async () => {
    const plans = await admin.listPlans();
    assert.deepEqual(
      plans.plans.map((p) => [p.name, p.rpm, p.v2, p.workspaces]),
      [["free", 30, false, 1], ["pro", 120, true, 5], ["team", 300, true, 20], ["enterprise", 1000, true, null]],
    );
    const t = await tenant("pro");
    await t.loci.ingest({ workspace_id: "u", actor_id: "a", artifact_type: "note", raw_payload: "usage one" });
    await t.loci.ingest({ workspace_id: "u", actor_id: "a", artifact_type: "note", raw_payload: "usage two" });
    const pack = await t.loci.contextPack({ workspace_id: "u", query: "usage", max_tokens: 100 });

    const plan = await t.loci.getPlan();
    assert.deepEqual(plan, { tenant_id: t.id, plan: "pro", rpm: 120, v2: true, workspaces: 5, workspaces_used: 1 });
    const changed = await admin.setPlan({ tenant_id: t.id, plan: "team" });
    assert.equal(changed.plan, "team");
    assert.equal(changed.rpm, 300);
    assert.equal((await admin.getPlan({ tenant_id: t.id })).plan, "team");
    await rejects(t.loci.getPlan({ tenant_id: "someone-else" }), PermissionDeniedError);
    // The admin lists every tenant with its plan and workspaces; a tenant key may not.
    const listed = (await admin.listTenants()).tenants.find((x) => x.tenant_id === t.id);
    assert.equal(listed?.plan, "team");
    assert.deepEqual(listed?.workspaces.map((w) => w.workspace_id), ["u"]);
    await rejects(t.loci.listTenants(), PermissionDeniedError);

    const period = new Date().toISOString().slice(0, 7);
    const usage = await admin.getUsage({ tenant_id: t.id, period });
    assert.equal(usage.tenant_id, t.id);
    assert.equal(usage.period, period);
    assert.equal(usage.artifacts_ingested, 2);
    // Raw bytes are the payloads' JSON as sent, quotes of a string included.
    assert.equal(usage.raw_bytes_stored, JSON.stringify("usage one").length + JSON.stringify("usage two").length);
    assert.equal(usage.context_packs, 1);
    assert.equal(usage.tokens_packed, pack.total_tokens);
    assert.equal(usage.requests["POST /v1/ingest"], 2);
    assert.equal(usage.requests["POST /v1/context-pack"], 1);
    assert.equal(usage.rate_limited, 0);
    const bad = await rejects(admin.getUsage({ period: "2026-13" }), BadRequestError);
    assert.match(bad.detail, /period/);
  });

  test("plan free: one workspace", async () => {
    const free = await tenant("free");
    await free.loci.ingest({ workspace_id: "one", actor_id: "a", artifact_type: "note", raw_payload: "x" });
    const err = await rejects(free.loci.ingest({ workspace_id: "two", actor_id: "a", artifact_type: "note", raw_payload: "y" }), PermissionDeniedError);
    assert.equal(err.status, 403);
    assert.ok(err.detail.length > 0);
  });
});

describe("rate limits, retries and timeouts", () => {
  test("over the plan's rate: RateLimitError with Retry-After, thrown at once when Retry-After exceeds maxDelayMs", async () => {
    const seen: ResponseInfo[] = [];
    const free = await tenant("free", { onResponse: (r) => seen.push(r), retry: { maxRetries: 3, initialDelayMs: 20, maxDelayMs: 2000 } });
    let ok = 0;
    let err: unknown;
    for (let i = 0; i < 40 && err === undefined; i++) {
      try {
        await free.loci.listWorkspaces();
        ok++;
      } catch (e) {
        err = e;
      }
    }
    assert.equal(ok, 30, "plan free serves 30 requests a minute");
    assert.ok(err instanceof RateLimitError, String(err));
    assert.equal(err.status, 429);
    assert.match(err.detail, /^rate limit of 30 requests per minute exceeded for plan free; retry after \d+ s$/);
    const ra = err.retryAfterSeconds ?? 0;
    assert.ok(ra >= 1 && ra <= 60, `Retry-After ${ra}`);
    assert.equal(err.limit, 30);
    assert.equal(err.remaining, 0);
    // Retry-After (tens of seconds) is beyond maxDelayMs: one attempt, no waiting.
    assert.equal(seen.length, 31);
    assert.deepEqual(seen.slice(-1).map((r) => [r.status, r.attempt]), [[429, 0]]);
    assert.equal(seen[0]!.headers.get("x-ratelimit-remaining"), "29");

    const usage = await admin.getUsage({ tenant_id: free.id });
    assert.equal(usage.rate_limited, 1);
  });

  test("registration limit: the client waits Retry-After and retries; retries are bounded", async () => {
    const attempts = new Map<string, number[]>();
    const open = (name: string, maxRetries: number, signal?: AbortSignal) =>
      client(null, {
        retry: { maxRetries, maxDelayMs: 5000 },
        onResponse: (r) => attempts.set(name, [...(attempts.get(name) ?? []), r.status]),
      }).register({ email: `${name}-${++seq}@example.com` }, { signal });

    // Let any earlier open registration's window pass.
    await new Promise((r) => setTimeout(r, 2100));
    const first = await open("first", 0);
    assert.equal(first.plan, "free");

    const noRetry = await rejects(open("noretry", 0), RateLimitError);
    assert.match(noRetry.detail, /^open registration is limited to 1 per 2s per client address/);
    assert.ok((noRetry.retryAfterSeconds ?? 0) >= 1 && (noRetry.retryAfterSeconds ?? 0) <= 2);

    const aborter = new AbortController();
    setTimeout(() => aborter.abort(new Error("caller gave up")), 150);
    const started = Date.now();
    await assert.rejects(open("aborted", 3, aborter.signal), /caller gave up/);
    assert.ok(Date.now() - started < 1500, "an abort ends the wait before a retry");

    // Two clients refused together, one retry each: after Retry-After one
    // gets the freed slot, the other is refused again and has no retry left.
    const t0 = Date.now();
    const results = await Promise.allSettled([open("b", 1), open("c", 1)]);
    const waited = Date.now() - t0;
    assert.ok(waited >= 1000, `waited ${waited} ms, Retry-After is honoured`);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    assert.equal(won.length, 1);
    assert.equal(lost.length, 1);
    assert.ok(lost[0]!.reason instanceof RateLimitError);
    assert.deepEqual([attempts.get("b"), attempts.get("c")].map((a) => a?.length), [2, 2]);
    assert.deepEqual(attempts.get("first"), [201]);
    assert.deepEqual(attempts.get("noretry"), [429]);
  });

  test("a per-attempt timeout is a LociTimeoutError; a refused connection a LociConnectionError", async () => {
    // A listener that accepts and never answers.
    const sockets: Socket[] = [];
    const silent: Server = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const addr = silent.address();
    const port = typeof addr === "object" && addr ? addr.port : 0;
    try {
      const slow = new LociClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: null, timeoutMs: 200 });
      const t0 = Date.now();
      const err = await rejects(slow.health(), LociTimeoutError);
      assert.ok(Date.now() - t0 >= 190);
      assert.equal(err.status, 0);
      assert.ok(err instanceof LociConnectionError && err instanceof LociError);

      const aborter = new AbortController();
      setTimeout(() => aborter.abort(new Error("stop")), 50);
      await assert.rejects(new LociClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: null }).health({ signal: aborter.signal }), /stop/);
    } finally {
      sockets.forEach((s) => s.destroy());
      await new Promise((r) => silent.close(r));
    }
    // The port is closed now: nothing listens there.
    const refused = await rejects(new LociClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: null }).health(), LociConnectionError);
    assert.equal(refused.status, 0);
    assert.ok(!(refused instanceof LociTimeoutError));
  });

  test("bad retry options are refused", () => {
    assert.throws(() => new LociClient({ retry: { maxRetries: -1 } }), RangeError);
  });
});
