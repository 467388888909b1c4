/**
 * Several base URLs: failover to the next node, the data version carried
 * across nodes, and a real cluster. Nodes that misbehave (a refused
 * connection, a 503, a lost answer) are stood for by a dead port and tiny
 * local HTTP servers; every request that succeeds is served by a real
 * `loci serve`. The last test runs three `nats-server` processes and two
 * `loci serve --cluster-nats` nodes, and kills the node the client used.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server as HttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { existsSync } from "node:fs";
import { after, before, test } from "node:test";

import { LociClient, LociConnectionError, mergeDataVersions, ServiceUnavailableError } from "../src/index.js";
import { buildLoci, removeBinary, startLoci, type LociServer } from "./server.js";

let srv: LociServer;
let apiKey: string;
let seq = 0;

before(async () => {
  srv = await startLoci();
  const admin = new LociClient({ baseUrl: srv.url, apiKey: srv.adminKey });
  apiKey = (await admin.register({ email: "cluster-tests@example.com", plan: "enterprise" })).api_key;
});

after(async () => {
  await srv?.close();
  await removeBinary();
});

/** A free loopback port (asked of the kernel, then released). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const addr = s.address();
  await new Promise((r) => s.close(r));
  return typeof addr === "object" && addr ? addr.port : 0;
}

/** A loopback URL nothing listens on. */
async function deadUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}

/**
 * A tiny HTTP server standing for a node: records each request's headers and
 * answers as `reply` says: "503" with Retry-After, "drop" (reads the request
 * and closes the connection without an answer), or "ok".
 */
class Recorder {
  readonly requests: IncomingHttpHeaders[] = [];
  reply: "503" | "drop" | "ok";
  url = "";
  readonly #server: HttpServer;

  constructor(reply: "503" | "drop" | "ok", readonly version = "") {
    this.reply = reply;
    this.#server = createHttpServer((req, res) => {
      req.resume();
      req.on("end", () => {
        this.requests.push(req.headers);
        if (this.reply === "drop") {
          req.socket.destroy();
          return;
        }
        const headers: Record<string, string> = { "Content-Type": "application/json" };
        if (this.version) headers["X-Loci-Data-Version"] = this.version;
        if (this.reply === "503") {
          res.writeHead(503, { ...headers, "Retry-After": "1" }).end('{"detail":"not now"}');
        } else {
          res.writeHead(200, headers).end('{"plans":[]}');
        }
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.#server.listen(0, "127.0.0.1", r));
    const addr = this.#server.address();
    this.url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
    return this;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((r) => this.#server.close(() => r()));
  }
}

const cited = (pack: { citations: { artifact_id: string }[] }) => new Set(pack.citations.map((c) => c.artifact_id));

test("mergeDataVersions: element-wise maximum; another length keeps the latest; malformed values are ignored", () => {
  assert.equal(mergeDataVersions(undefined, "65.12.10"), "65.12.10");
  assert.equal(mergeDataVersions("65.12.10", "64.13.10"), "65.13.10");
  assert.equal(mergeDataVersions("7.100.3", "70.2.30"), "70.100.30"); // numbers, not strings
  assert.equal(mergeDataVersions("18446744073709551615.1", "18446744073709551614.2"), "18446744073709551615.2");
  assert.equal(mergeDataVersions("65.12.10", "3.4"), "3.4");
  for (const bad of ["", "1..2", "a.1", "-1.2", " ", "1.2."]) assert.equal(mergeDataVersions("5.5", bad), "5.5");
  assert.equal(mergeDataVersions(undefined, "x"), undefined);
});

test("base URLs: a list, or LOCI_URL comma-separated; none is refused", () => {
  const c = new LociClient({ baseUrl: ["http://a:1/", " http://b:2"] });
  assert.deepEqual(c.baseUrls, ["http://a:1", "http://b:2"]);
  assert.equal(c.baseUrl, "http://a:1");
  assert.equal(new LociClient({ baseUrl: "http://a:1/" }).baseUrl, "http://a:1");
  const saved = process.env.LOCI_URL;
  process.env.LOCI_URL = "http://a:1, http://b:2/,";
  try {
    assert.deepEqual(new LociClient().baseUrls, ["http://a:1", "http://b:2"]);
  } finally {
    if (saved === undefined) delete process.env.LOCI_URL;
    else process.env.LOCI_URL = saved;
  }
  assert.throws(() => new LociClient({ baseUrl: [] }), TypeError);
});

test("a dead first URL: every call is served by the next node", async () => {
  const ws = `ws-dead-${++seq}`;
  const statuses: number[] = [];
  const loci = new LociClient({ baseUrl: [await deadUrl(), srv.url], apiKey, onResponse: (r) => statuses.push(r.status) });
  const stored = await loci.ingest({ workspace_id: ws, actor_id: "alice", artifact_type: "note", raw_payload: "The failover drill is on Friday." });
  assert.equal(loci.baseUrl, srv.url); // the next request starts at the node that answered
  assert.equal((await loci.getArtifact(stored.artifact_id)).artifact_id, stored.artifact_id);
  const pack = await loci.contextPack({ workspace_id: ws, query: "when is the failover drill?", max_tokens: 512 });
  assert.ok(cited(pack).has(stored.artifact_id));
  await loci.feedback({ workspace_id: ws, action: "pin", artifact_id: stored.artifact_id });
  assert.deepEqual((await loci.listWorkspaces()).workspaces.map((w) => w.workspace_id).filter((w) => w === ws), [ws]);
  assert.equal(statuses.length, 5); // one answer per call: the dead node gave none
  assert.ok(statuses.every((s) => s === 200 || s === 201), String(statuses));
  assert.equal(loci.dataVersion, undefined); // a single-node server sends no data version

  // Every node dead: the connection error of the last one.
  const none = new LociClient({ baseUrl: [await deadUrl(), await deadUrl()], apiKey });
  await assert.rejects(none.listPlans(), LociConnectionError);
});

test("X-Loci-Min-Data-Version: never with one URL; with several, the highest version seen", async () => {
  const one = await new Recorder("ok", "5.1.2").start();
  const other = await new Recorder("ok", "4.3.2").start();
  try {
    const single = new LociClient({ baseUrl: one.url, apiKey: "k" });
    await single.listPlans();
    await single.listPlans();
    assert.equal(single.dataVersion, "5.1.2");
    assert.deepEqual(one.requests.map((h) => h["x-loci-min-data-version"]), [undefined, undefined]);

    const pair = new LociClient({ baseUrl: [one.url, other.url], apiKey: "k" });
    await pair.listPlans();
    await pair.listPlans();
    assert.deepEqual(one.requests.slice(2).map((h) => h["x-loci-min-data-version"]), [undefined, "5.1.2"]);

    one.reply = "503";
    const fresh = new LociClient({ baseUrl: [one.url, other.url], apiKey: "k" });
    await fresh.listPlans(); // one's 503 carried its version too: merged with other's answer
    assert.equal(fresh.baseUrl, other.url);
    assert.equal(fresh.dataVersion, "5.3.2");
    await fresh.listPlans();
    assert.deepEqual(other.requests.map((h) => h["x-loci-min-data-version"]), ["5.1.2", "5.3.2"]);
  } finally {
    await one.close();
    await other.close();
  }
});

test("503 with Retry-After: the next node serves the call; every node refusing is a ServiceUnavailableError", async () => {
  const busy = await new Recorder("503").start();
  try {
    const ws = `ws-busy-${++seq}`;
    const loci = new LociClient({ baseUrl: [busy.url, srv.url], apiKey });
    const t0 = Date.now();
    const stored = await loci.ingest({ workspace_id: ws, actor_id: "bob", artifact_type: "note", raw_payload: "Rotate the signing key monthly." });
    assert.ok(Date.now() - t0 < 900, "moved on at once, without waiting the Retry-After");
    assert.equal((await loci.getArtifact(stored.artifact_id)).content_hash, stored.content_hash);
    assert.equal(busy.requests.length, 1);

    const refused = new LociClient({ baseUrl: [busy.url, busy.url], apiKey, retry: { maxRetries: 0 } });
    const err = await refused.listPlans().then(
      () => assert.fail("every node answered 503"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ServiceUnavailableError, String(err));
    assert.equal(err.retryAfterSeconds, 1);
    assert.equal(busy.requests.length, 3);
  } finally {
    await busy.close();
  }
});

test("an answer lost after the request was sent: resent to the next node only when harmless", async () => {
  const ws = `ws-drop-${++seq}`;
  const direct = new LociClient({ baseUrl: srv.url, apiKey });
  const stored = await direct.ingest({ workspace_id: ws, actor_id: "carol", artifact_type: "note", raw_payload: "Backups run at 02:00." });
  const dropper = await new Recorder("drop").start();
  try {
    const loci = new LociClient({ baseUrl: [dropper.url, srv.url], apiKey });
    const pack = await loci.contextPack({ workspace_id: ws, query: "when do backups run?", max_tokens: 512 });
    assert.ok(cited(pack).has(stored.artifact_id));
    assert.equal(dropper.requests.length, 1);

    const again = new LociClient({ baseUrl: [dropper.url, srv.url], apiKey });
    await assert.rejects(again.feedback({ workspace_id: ws, action: "pin", artifact_id: stored.artifact_id }), LociConnectionError);
    const keyed = await again.ingest({
      workspace_id: ws,
      actor_id: "carol",
      artifact_type: "note",
      raw_payload: "Restores are tested weekly.",
      idempotency_key: "restore-1",
    });
    assert.ok(keyed.indexed);
    const fresh = new LociClient({ baseUrl: [dropper.url, srv.url], apiKey }); // again now starts at srv
    await assert.rejects(
      fresh.ingestBatch({ workspace_id: ws, actor_id: "carol", artifacts: [{ artifact_type: "note", raw_payload: "unkeyed" }] }),
      LociConnectionError,
    );
    assert.equal(dropper.requests.length, 4);
  } finally {
    await dropper.close();
  }
});

// ---- a real cluster ----

function onPath(name: string): boolean {
  return (process.env.PATH ?? "").split(delimiter).some((d) => d !== "" && existsSync(join(d, name)));
}

async function waitHealthy(url: string, proc: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${url} exited with ${proc.exitCode}:\n${log()}`);
    try {
      const r = await fetch(`${url}/health`);
      await r.arrayBuffer();
      if (r.status === 200) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`${url} not healthy after 45 s:\n${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("a real cluster: the node the client used is killed, the next pack comes from the other with the artifact", async (t) => {
  if (!onPath("nats-server")) {
    if (process.env.CI === "true") assert.fail("nats-server is not on PATH and CI=true (install Debian's nats-server)");
    t.skip("nats-server is not on PATH");
    return;
  }
  const { bin } = await buildLoci();
  const work = await mkdtemp(join(tmpdir(), "loci-ts-cluster-"));
  const procs: ChildProcess[] = [];
  const logs = new Map<ChildProcess, string>();
  const exits = new Map<ChildProcess, Promise<unknown>>();
  const run = (cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env) => {
    const p = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    exits.set(p, once(p, "exit"));
    logs.set(p, "");
    const add = (d: Buffer) => logs.set(p, logs.get(p) + d.toString());
    p.stdout?.on("data", add);
    p.stderr?.on("data", add);
    procs.push(p);
    return p;
  };
  try {
    const names = ["n1", "n2", "n3"];
    const clientPorts: number[] = [];
    const routePorts: number[] = [];
    for (const _ of names) {
      clientPorts.push(await freePort());
      routePorts.push(await freePort());
    }
    for (const [i, name] of names.entries()) {
      const routes = routePorts.filter((_, j) => j !== i).map((p) => `    "nats-route://127.0.0.1:${p}"`).join("\n");
      const conf = join(work, `${name}.conf`);
      await writeFile(
        conf,
        `server_name: "${name}"\nlisten: "127.0.0.1:${clientPorts[i]}"\n` +
          `jetstream {\n  store_dir: "${join(work, name)}"\n  max_memory_store: 64MB\n  max_file_store: 1GB\n}\n` +
          `cluster {\n  name: "loci-ts"\n  listen: "127.0.0.1:${routePorts[i]}"\n  routes: [\n${routes}\n  ]\n}\n`,
      );
      run("nats-server", ["-c", conf]);
    }
    const natsUrls = clientPorts.map((p) => `nats://127.0.0.1:${p}`).join(",");
    const adminKey = "admin-" + Math.random().toString(36).slice(2);
    const urls: string[] = [];
    const nodes: ChildProcess[] = [];
    for (const name of ["n1", "n2"]) {
      const port = await freePort();
      const args = ["serve", "--addr", `127.0.0.1:${port}`, "--data", join(work, `loci-${name}`), "--cluster-nats", natsUrls,
        "--cluster-node", name, "--cluster-shards", "2", "--embedder", "glove", "--log-level", "warn"];
      const p = run(bin, args, { ...process.env, API_KEY: adminKey });
      nodes.push(p);
      urls.push(`http://127.0.0.1:${port}`);
      // One after the other: two nodes creating a new cluster's settings together can fail to read back the
      // embedder the other one recorded (cluster/node.go checkEmbedder: "nats: key not found").
      await waitHealthy(urls.at(-1)!, p, () => logs.get(p) ?? "");
    }

    const admin = new LociClient({ baseUrl: urls, apiKey: adminKey });
    const key = (await admin.register({ email: "cluster-node-killed@example.com", plan: "enterprise" })).api_key;
    const loci = new LociClient({ baseUrl: urls, apiKey: key });
    const ws = "ws-cluster";
    const stored = await loci.ingest({ workspace_id: ws, actor_id: "dana", artifact_type: "note", raw_payload: "The cluster drill restores node two from the log." });
    const used = urls.indexOf(loci.baseUrl);
    const seen = loci.dataVersion;
    assert.ok(seen !== undefined && seen.split(".").length === 3, `data version ${seen}: control stream and two shards`);
    const killed = nodes[used]!;
    killed.kill("SIGKILL");
    await exits.get(killed);

    const pack = await loci.contextPack({ workspace_id: ws, query: "what does the cluster drill restore?", max_tokens: 512 });
    assert.equal(loci.baseUrl, urls[1 - used]);
    assert.ok(cited(pack).has(stored.artifact_id));
    assert.equal(mergeDataVersions(seen, loci.dataVersion!), loci.dataVersion); // not behind what was seen
  } finally {
    for (const p of procs.reverse()) {
      if (p.exitCode === null && p.signalCode === null) {
        p.kill("SIGTERM");
        const timer = setTimeout(() => p.kill("SIGKILL"), 10_000);
        await exits.get(p);
        clearTimeout(timer);
      }
    }
    await rm(work, { recursive: true, force: true });
  }
});
