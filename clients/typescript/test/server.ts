/**
 * Test harness: builds the loci binary from this repository and runs
 * `loci serve` on a free loopback port with a temporary data directory, so
 * that the client's tests run against the real server.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The repository root: the nearest directory above this file holding go.mod. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "go.mod"))) return dir;
    const up = resolve(dir, "..");
    if (up === dir) throw new Error("test/server: no go.mod above " + fileURLToPath(import.meta.url));
    dir = up;
  }
}

let built: Promise<{ bin: string; dir: string }> | undefined;

/** Builds ./cmd/loci once per test process into a temporary directory (go's build cache keeps it quick). */
export function buildLoci(): Promise<{ bin: string; dir: string }> {
  built ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), "loci-ts-bin-"));
    const bin = join(dir, "loci");
    await run("go", ["build", "-o", bin, "./cmd/loci"], { cwd: repoRoot(), maxBuffer: 16 << 20 });
    return { bin, dir };
  })();
  return built;
}

/** A free loopback port (asked of the kernel, then released for the server to take). */
async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => res(port));
    });
  });
}

/** Whether something accepts TCP connections on the port. */
function accepting(port: number): Promise<boolean> {
  return new Promise((res) => {
    const c = connect(port, "127.0.0.1");
    c.once("connect", () => {
      c.destroy();
      res(true);
    });
    c.once("error", () => res(false));
  });
}

export interface LociServer {
  url: string;
  port: number;
  /** The operator's admin key (API_KEY). */
  adminKey: string;
  dataDir: string;
  /** Everything the server wrote to stderr and stdout so far. */
  output(): string;
  /** Kills the process with SIGKILL (a crash) and waits for it. */
  crash(): Promise<void>;
  /** Stops the process with SIGTERM (a clean shutdown) and waits for it. */
  stop(): Promise<void>;
  /** Starts the server again on the same port and data directory; `ready` false returns once the port accepts. */
  restart(ready?: boolean): Promise<void>;
  /** Stops the server and removes its data directory. */
  close(): Promise<void>;
}

export interface ServerOptions {
  /** Extra environment variables of `loci serve`. */
  env?: Record<string, string>;
  /** Extra flags of `loci serve`. */
  args?: string[];
}

/**
 * Starts `loci serve` with authentication on (a fresh admin key), the GloVe
 * embedder and open registration limited to 1 per 2 s per address, and
 * waits until GET /health answers 200.
 *
 * The embedder is glove, not the default minilm: both start at once, but
 * GloVe embeds a span by averaging word vectors (microseconds), where MiniLM
 * runs a transformer per span (milliseconds on a shared core), so that
 * wait_for_embedding and the asynchronous jobs of the tests finish in
 * moments and the suite stays quick. The client does not depend on which
 * embedder runs.
 */
export async function startLoci(options: ServerOptions = {}): Promise<LociServer> {
  const { bin } = await buildLoci();
  const dataDir = await mkdtemp(join(tmpdir(), "loci-ts-data-"));
  const adminKey = "admin-" + Math.random().toString(36).slice(2);
  const port = await freePort();
  let out = "";
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const launch = async (ready: boolean) => {
    const env = {
      ...process.env,
      API_KEY: adminKey,
      OPEN_REGISTRATION: "true",
      LOCI_REGISTER_LIMIT: "1",
      LOCI_REGISTER_WINDOW: "2s",
      LOG_LEVEL: "warn",
      ...options.env,
    };
    const args = ["serve", "--addr", `127.0.0.1:${port}`, "--data", dataDir, "--embedder", "glove", ...(options.args ?? [])];
    const p = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    child = p;
    p.stdout?.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr?.on("data", (d: Buffer) => (out += d.toString()));
    let gone = false;
    exited = new Promise((res) => p.once("exit", () => ((gone = true), res())));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (gone) throw new Error(`loci serve exited before it was ready:\n${out}`);
      if (Date.now() > deadline) throw new Error(`loci serve was not ready within 30 s:\n${out}`);
      if (!ready) {
        if (await accepting(port)) return;
      } else {
        try {
          const r = await fetch(`http://127.0.0.1:${port}/health`);
          await r.arrayBuffer();
          if (r.status === 200) return;
        } catch {
          // Not listening yet.
        }
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  const kill = async (signal: NodeJS.Signals) => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child?.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };

  await launch(true);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    adminKey,
    dataDir,
    output: () => out,
    crash: () => kill("SIGKILL"),
    stop: () => kill("SIGTERM"),
    restart: (ready = true) => launch(ready),
    close: async () => {
      await kill("SIGTERM");
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Removes the temporary binary (call once, after every server of the process is closed). */
export async function removeBinary(): Promise<void> {
  if (!built) return;
  const { dir } = await built;
  await rm(dir, { recursive: true, force: true });
}
