/**
 * LociClient: one method per route of Loci's HTTP API, over the platform's
 * fetch (Node >= 18, Deno, Bun, browsers), with typed requests and answers,
 * errors carrying the server's `detail`, bounded retries on 429 and 503, and
 * per-attempt timeouts.
 */
import {
  apiErrorFor,
  LociConnectionError,
  LociTimeoutError,
  parseRetryAfter,
} from "./errors.js";
import type {
  Artifact,
  ArtifactErased,
  ArtifactList,
  ArtifactStatus,
  ArtifactSummary,
  BatchIngestQueued,
  BatchIngestRequest,
  BatchIngestResponse,
  ContextPackRequest,
  ContextPackResponse,
  FeedbackRequest,
  FeedbackResponse,
  HealthOK,
  IngestRequest,
  IngestResult,
  Job,
  KeyCreated,
  KeyList,
  KeyRevoked,
  ListArtifactsParams,
  ListReceiptsParams,
  PlanChangeRequest,
  PlanList,
  PlanParams,
  Receipt,
  ReceiptList,
  ReceiptSummary,
  RegisterRequest,
  RegisterResponse,
  TenantList,
  TenantPlan,
  Usage,
  UsageParams,
  V2ContextPackRequest,
  V2ContextPackResponse,
  WorkspaceErased,
  WorkspaceList,
  WorkspaceSettings,
  WorkspaceSettingsChange,
} from "./types.js";

/** The server the client talks to when neither `baseUrl` nor LOCI_URL says otherwise: `loci serve`'s default. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:3000";

/** How a call is retried when the server answers 429, or 503 with Retry-After (see the README). */
export interface RetryOptions {
  /** Retries after the first attempt; 0 turns retrying off. Default 3. */
  maxRetries: number;
  /** The first backoff delay when the answer has no Retry-After; it doubles on each retry. Default 500 ms. */
  initialDelayMs: number;
  /**
   * The longest the client waits before one retry. A Retry-After asking for
   * longer is not waited for: the error is thrown at once (a retry sooner
   * would only be refused again), with `retryAfterSeconds` set. Default 30 s.
   */
  maxDelayMs: number;
}

/** Options of a LociClient. */
export interface LociClientOptions {
  /**
   * The server's base URL, or the base URLs of a cluster's nodes (see the
   * README: failover, data versions). Default: the LOCI_URL environment
   * variable (comma-separated for several), else http://127.0.0.1:3000.
   */
  baseUrl?: string | readonly string[];
  /**
   * The API key sent as X-API-Key (a tenant key `lk_...`, or the operator's
   * admin key). Default: the LOCI_API_KEY environment variable; none when
   * that is unset too (a server without API_KEY needs none). `null` sends no
   * key even if LOCI_API_KEY is set.
   */
  apiKey?: string | null;
  /** Time each attempt may take before it is abandoned (LociTimeoutError); 0: no timeout. Default 60 s. */
  timeoutMs?: number;
  /** Retry behaviour on 429 and 503; fields left out keep their defaults. */
  retry?: Partial<RetryOptions>;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /**
   * Called with every HTTP answer the client receives, retried ones
   * included: for logging, or to watch X-RateLimit-Remaining.
   */
  onResponse?: (info: ResponseInfo) => void;
}

/** One HTTP answer, as given to `onResponse`. */
export interface ResponseInfo {
  method: string;
  path: string;
  status: number;
  headers: Headers;
  /** 0 for the first attempt, n for the n-th retry. */
  attempt: number;
}

/** Options of one call. */
export interface RequestOptions {
  /** Aborts the call, retries and waits between them included; the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Overrides the client's per-attempt timeout for this call. */
  timeoutMs?: number;
  /** Overrides retry fields for this call. */
  retry?: Partial<RetryOptions>;
  /** Sent as X-Request-ID (letters, digits and - _ . :, up to 128): the server logs it and echoes it. */
  requestId?: string;
}

/** How `waitForJob` polls. */
export interface PollOptions extends Omit<RequestOptions, "retry"> {
  /** The first delay between polls; each next one is 1.5 times longer. Default 2000 ms, as the API suggests. */
  intervalMs?: number;
  /** The longest delay between polls. Default 30 s, as the API suggests. */
  maxIntervalMs?: number;
  /** Give up (LociTimeoutError) when the job is not finished after this long. Default 5 minutes. */
  deadlineMs?: number;
}

type Query = Record<string, string | number | boolean | null | undefined>;

interface Call {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  query?: Query;
  body?: unknown;
}

/**
 * Whether sending `call` a second time has the effect of sending it once, so
 * that an answer lost after the request may have reached a node can be asked
 * of another: reads, PUTs (they set a value), context packs (a read; the
 * receipt id is derived from the request and the data, so a resent pack finds
 * the same one), and ingests whose every artifact carries an idempotency_key
 * (the server answers with the stored artifact). Feedback, registration, key
 * creation and erasures are not: a resent erasure of what the first one
 * erased answers 404, a resent feedback counts twice.
 */
function safeToResend(call: Call): boolean {
  if (call.method === "GET" || call.method === "PUT") return true;
  if (call.method !== "POST") return false;
  if (call.path === "/v1/context-pack" || call.path === "/v2/context-pack") return true;
  const body = call.body as { idempotency_key?: unknown; artifacts?: unknown } | undefined;
  if (call.path === "/v1/ingest") return typeof body?.idempotency_key === "string" && body.idempotency_key !== "";
  if (call.path === "/v2/ingest") {
    const items = body?.artifacts;
    return (
      Array.isArray(items) &&
      items.length > 0 &&
      items.every((a: { idempotency_key?: unknown } | null) => typeof a?.idempotency_key === "string" && a.idempotency_key !== "")
    );
  }
  return false;
}

/** Error codes (Node's and undici's) of a connection that was never opened: the request was not sent. */
const notConnected = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** Whether a failed fetch never reached a server (connection refused, DNS failure, connect timeout). */
function neverSent(err: unknown): boolean {
  for (let e = err, depth = 0; e !== null && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && notConnected.has(code)) return true;
    const errors = (e as { errors?: unknown }).errors; // an AggregateError of every address tried
    if (Array.isArray(errors) && errors.length > 0 && errors.every((x) => neverSent(x))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * The element-wise maximum of two data versions (X-Loci-Data-Version:
 * dot-separated stream positions, control stream first, then each shard).
 * Versions of different lengths do not compare (another cluster behind the
 * same URLs): the newer one, `next`, is kept. A malformed `next` leaves
 * `seen` as it was.
 */
export function mergeDataVersions(seen: string | undefined, next: string): string | undefined {
  const b = parseDataVersion(next);
  if (b === undefined) return seen;
  const a = seen === undefined ? undefined : parseDataVersion(seen);
  if (a === undefined || a.length !== b.length) return b.join(".");
  return a.map((x, i) => (x > b[i]! ? x : b[i]!)).join(".");
}

function parseDataVersion(v: string): bigint[] | undefined {
  const parts = v.trim().split(".");
  if (!parts.every((p) => /^[0-9]+$/.test(p))) return undefined;
  return parts.map((p) => BigInt(p));
}

/** The base URLs of the options or LOCI_URL, without trailing slashes. */
function baseUrls(option: string | readonly string[] | undefined): string[] {
  const given = option ?? env("LOCI_URL")?.split(",") ?? [DEFAULT_BASE_URL];
  const list = typeof given === "string" ? [given] : given;
  const urls: string[] = [];
  for (const u of list) {
    if (typeof u !== "string") throw new TypeError(`LociClient: baseUrl must hold strings, got ${typeof u}`);
    if (u.trim() !== "") urls.push(u.trim().replace(/\/+$/, ""));
  }
  if (urls.length === 0) throw new TypeError("LociClient: baseUrl holds no URL");
  return urls;
}

/** An HTTP answer with its body read. */
interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
}

interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

const defaultRetry: RetryOptions = { maxRetries: 3, initialDelayMs: 500, maxDelayMs: 30_000 };

/** The platform's environment variables, where there are any (Node, Bun, Deno with --allow-env). */
function env(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = proc?.env?.[name];
  return v === undefined || v === "" ? undefined : v;
}

/** Encodes one path parameter as a single path segment: a `/` in a workspace id never reaches another path. */
function seg(value: string): string {
  return encodeURIComponent(value);
}

/**
 * The client of one Loci server, or of the nodes of a cluster. Safe to
 * share: between calls it keeps only the node that answered last and the
 * highest data version it has seen.
 *
 * ```ts
 * const loci = new LociClient({ baseUrl: "http://127.0.0.1:3000", apiKey: process.env.LOCI_API_KEY });
 * await loci.ingest({ workspace_id: "ws", actor_id: "agent", artifact_type: "note", raw_payload: { content: "..." } });
 * const pack = await loci.contextPack({ workspace_id: "ws", query: "...", max_tokens: 1024 });
 * ```
 */
export class LociClient {
  /** Every base URL of the options, without trailing slashes. */
  readonly baseUrls: readonly string[];
  #current = 0;
  #dataVersion: string | undefined;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #retry: RetryOptions;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;
  readonly #onResponse: ((info: ResponseInfo) => void) | undefined;

  constructor(options: LociClientOptions = {}) {
    this.baseUrls = Object.freeze(baseUrls(options.baseUrl));
    this.#apiKey = options.apiKey === null ? undefined : (options.apiKey ?? env("LOCI_API_KEY"));
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#retry = { ...defaultRetry, ...options.retry };
    checkRetry(this.#retry);
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") {
      throw new TypeError("LociClient: no fetch in this runtime (Node >= 18 has one); pass options.fetch");
    }
    this.#fetch = f;
    this.#headers = { ...options.headers };
    this.#onResponse = options.onResponse;
  }

  /** The base URL requests go to first: the node that answered last (with one URL, that URL). */
  get baseUrl(): string {
    return this.baseUrls[this.#current]!;
  }

  /**
   * The highest X-Loci-Data-Version the client has seen (element-wise), or
   * undefined before any (a single-node server sends none). With several
   * base URLs it is sent as X-Loci-Min-Data-Version on every request, so
   * the node that answers has applied at least what earlier answers
   * acknowledged (the client's own writes included).
   */
  get dataVersion(): string | undefined {
    return this.#dataVersion;
  }

  // ---- system ----

  /** GET /health: status, version and uptime (and storage counters for a request with a valid key). */
  async health(options?: RequestOptions): Promise<HealthOK> {
    return (await this.#request<HealthOK>({ method: "GET", path: "/health" }, options)).body;
  }

  /** The running server's version, from GET /health. */
  async version(options?: RequestOptions): Promise<string> {
    return (await this.health(options)).version;
  }

  /** GET /openapi.json: the server's OpenAPI 3.1 description. */
  async openapi(options?: RequestOptions): Promise<Record<string, unknown>> {
    return (await this.#request<Record<string, unknown>>({ method: "GET", path: "/openapi.json" }, options)).body;
  }

  // ---- tenants and keys ----

  /** POST /v1/register: a new tenant and its first API key (shown once). Needs the admin key unless registration is open. */
  async register(request: RegisterRequest, options?: RequestOptions): Promise<RegisterResponse> {
    return (await this.#request<RegisterResponse>({ method: "POST", path: "/v1/register", body: request }, options)).body;
  }

  /** GET /v1/tenants (admin key only): every tenant with its plan, email and workspaces. */
  async listTenants(options?: RequestOptions): Promise<TenantList> {
    return (await this.#request<TenantList>({ method: "GET", path: "/v1/tenants" }, options)).body;
  }

  /** POST /v1/keys: a new key for the caller's tenant; `api_key` is shown only here. */
  async createKey(options?: RequestOptions): Promise<KeyCreated> {
    return (await this.#request<KeyCreated>({ method: "POST", path: "/v1/keys" }, options)).body;
  }

  /** GET /v1/keys: the caller's tenant's keys, revoked ones included, without secrets. */
  async listKeys(options?: RequestOptions): Promise<KeyList> {
    return (await this.#request<KeyList>({ method: "GET", path: "/v1/keys" }, options)).body;
  }

  /** DELETE /v1/keys/{key_id}: revokes a key at once. The last active key of a tenant is a ConflictError. */
  async revokeKey(keyId: string, options?: RequestOptions): Promise<KeyRevoked> {
    return (await this.#request<KeyRevoked>({ method: "DELETE", path: `/v1/keys/${seg(keyId)}` }, options)).body;
  }

  // ---- artifacts ----

  /**
   * POST /v1/ingest: stores one artifact. An idempotency_key already used
   * for the same artifact returns it with `idempotent_replay` true; used for
   * another artifact, a ConflictError naming the stored one.
   */
  async ingest(request: IngestRequest, options?: RequestOptions): Promise<IngestResult> {
    const a = await this.#request<IngestResult>({ method: "POST", path: "/v1/ingest", body: request }, options);
    return { ...a.body, idempotent_replay: a.headers.get("idempotent-replay") === "true" };
  }

  /**
   * POST /v2/ingest: stores up to 1,000 artifacts of one workspace and actor
   * (plans pro, team, enterprise). A bad item fails the whole batch and
   * stores nothing. With `async_index: true` the answer is one indexing job
   * per item (see waitForJob); with `wait_for_embedding: true` it comes once
   * every item is embedded (and, where packs run late interaction, has its
   * token rows, so that the packs asked next need not compute them).
   */
  ingestBatch(request: BatchIngestRequest & { async_index: true }, options?: RequestOptions): Promise<BatchIngestQueued>;
  ingestBatch(request: BatchIngestRequest & { async_index?: false }, options?: RequestOptions): Promise<BatchIngestResponse>;
  ingestBatch(request: BatchIngestRequest, options?: RequestOptions): Promise<BatchIngestResponse | BatchIngestQueued>;
  async ingestBatch(request: BatchIngestRequest, options?: RequestOptions): Promise<BatchIngestResponse | BatchIngestQueued> {
    return (await this.#request<BatchIngestResponse | BatchIngestQueued>({ method: "POST", path: "/v2/ingest", body: request }, options)).body;
  }

  /** GET /v1/artifacts/{artifact_id}: the artifact, its raw_payload exactly as ingested, its metadata and spans. */
  async getArtifact(artifactId: string, options?: RequestOptions): Promise<Artifact> {
    return (await this.#request<Artifact>({ method: "GET", path: `/v1/artifacts/${seg(artifactId)}` }, options)).body;
  }

  /** GET /v1/artifacts/{artifact_id}/status: indexing and embedding state, span and token counts. */
  async getArtifactStatus(artifactId: string, options?: RequestOptions): Promise<ArtifactStatus> {
    return (await this.#request<ArtifactStatus>({ method: "GET", path: `/v1/artifacts/${seg(artifactId)}/status` }, options)).body;
  }

  /** DELETE /v1/artifacts/{artifact_id}: erases one artifact at once; again, or another tenant's id, is a NotFoundError. */
  async eraseArtifact(artifactId: string, options?: RequestOptions): Promise<ArtifactErased> {
    return (await this.#request<ArtifactErased>({ method: "DELETE", path: `/v1/artifacts/${seg(artifactId)}` }, options)).body;
  }

  /** GET /v1/workspaces/{workspace_id}/artifacts: one page of a workspace's artifacts, newest first. */
  async listArtifacts(workspaceId: string, params: ListArtifactsParams = {}, options?: RequestOptions): Promise<ArtifactList> {
    return (
      await this.#request<ArtifactList>({ method: "GET", path: `/v1/workspaces/${seg(workspaceId)}/artifacts`, query: params }, options)
    ).body;
  }

  /**
   * Every artifact of a workspace matching `params`, newest first, fetched
   * page by page (`limit` per page) with the server's cursor: exact while
   * new artifacts arrive (each one present when paging began comes once).
   */
  async *iterArtifacts(workspaceId: string, params: Omit<ListArtifactsParams, "cursor"> = {}, options?: RequestOptions): AsyncGenerator<ArtifactSummary, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.listArtifacts(workspaceId, { ...params, cursor }, options);
      yield* page.artifacts;
      if (page.next_cursor === null) return;
      cursor = page.next_cursor;
    }
  }

  // ---- context packs ----

  /**
   * POST /v1/context-pack: the evidence for `query` packed into `max_tokens`,
   * as prompt-ready `context_text` with [cite:N] markers, with a receipt id.
   * Check `abstain_flag`: abstention is an answer, not an error.
   */
  async contextPack(request: ContextPackRequest, options?: RequestOptions): Promise<ContextPackResponse> {
    return (await this.#request<ContextPackResponse>({ method: "POST", path: "/v1/context-pack", body: request }, options)).body;
  }

  /** POST /v2/context-pack: the pack as scored snippets, with a serving profile (plans pro, team, enterprise). */
  async contextPackV2(request: V2ContextPackRequest, options?: RequestOptions): Promise<V2ContextPackResponse> {
    return (await this.#request<V2ContextPackResponse>({ method: "POST", path: "/v2/context-pack", body: request }, options)).body;
  }

  // ---- feedback and receipts ----

  /** POST /v1/feedback: pin, unpin, private, mark_wrong, outdated, clear, resolve_conflict; changes later packs. */
  async feedback(request: FeedbackRequest, options?: RequestOptions): Promise<FeedbackResponse> {
    return (await this.#request<FeedbackResponse>({ method: "POST", path: "/v1/feedback", body: request }, options)).body;
  }

  /** GET /v1/receipts/{receipt_id}: what a pack included and excluded and why. */
  async getReceipt(receiptId: string, options?: RequestOptions): Promise<Receipt> {
    return (await this.#request<Receipt>({ method: "GET", path: `/v1/receipts/${seg(receiptId)}` }, options)).body;
  }

  /** GET /v1/receipts: one page of a workspace's receipts, newest first. */
  async listReceipts(params: ListReceiptsParams, options?: RequestOptions): Promise<ReceiptList> {
    return (await this.#request<ReceiptList>({ method: "GET", path: "/v1/receipts", query: params }, options)).body;
  }

  /**
   * Every receipt of a workspace (matching `pack_hash` if given), newest
   * first, fetched `limit` at a time by offset. Receipts stored while
   * paging shift the offsets, so one may come twice; collect by id if that
   * matters.
   */
  async *iterReceipts(params: Omit<ListReceiptsParams, "offset">, options?: RequestOptions): AsyncGenerator<ReceiptSummary, void, undefined> {
    let offset = 0;
    for (;;) {
      const page = await this.listReceipts({ ...params, offset }, options);
      yield* page.receipts;
      offset += page.receipts.length;
      if (page.receipts.length === 0 || offset >= page.total) return;
    }
  }

  // ---- workspaces ----

  /**
   * GET /v1/workspaces: the caller's workspaces that hold artifacts. A
   * workspace is created by its first ingest (there is no create route);
   * the plan's workspace count bounds how many a tenant may create.
   */
  async listWorkspaces(options?: RequestOptions): Promise<WorkspaceList> {
    return (await this.#request<WorkspaceList>({ method: "GET", path: "/v1/workspaces" }, options)).body;
  }

  /** DELETE /v1/workspaces/{workspace_id}: erases the workspace's artifacts, spans, feedback and receipts. */
  async eraseWorkspace(workspaceId: string, options?: RequestOptions): Promise<WorkspaceErased> {
    return (await this.#request<WorkspaceErased>({ method: "DELETE", path: `/v1/workspaces/${seg(workspaceId)}` }, options)).body;
  }

  /** GET /v1/workspaces/{workspace_id}/settings: the retention in days, or null. */
  async getWorkspaceSettings(workspaceId: string, options?: RequestOptions): Promise<WorkspaceSettings> {
    return (await this.#request<WorkspaceSettings>({ method: "GET", path: `/v1/workspaces/${seg(workspaceId)}/settings` }, options)).body;
  }

  /**
   * PUT /v1/workspaces/{workspace_id}/settings: sets the retention in days
   * (1..36500; artifacts older than the cutoff are erased) or clears it with null.
   */
  async setWorkspaceSettings(workspaceId: string, settings: WorkspaceSettingsChange, options?: RequestOptions): Promise<WorkspaceSettings> {
    return (
      await this.#request<WorkspaceSettings>({ method: "PUT", path: `/v1/workspaces/${seg(workspaceId)}/settings`, body: settings }, options)
    ).body;
  }

  // ---- billing ----

  /** GET /v1/billing/plans: every plan with its requests per minute, v2 access and workspace count. */
  async listPlans(options?: RequestOptions): Promise<PlanList> {
    return (await this.#request<PlanList>({ method: "GET", path: "/v1/billing/plans" }, options)).body;
  }

  /** GET /v1/billing/plan: the caller's plan (or, with the admin key, `tenant_id`'s). */
  async getPlan(params: PlanParams = {}, options?: RequestOptions): Promise<TenantPlan> {
    return (await this.#request<TenantPlan>({ method: "GET", path: "/v1/billing/plan", query: params }, options)).body;
  }

  /** PUT /v1/billing/plan: changes a tenant's plan (admin key only). */
  async setPlan(request: PlanChangeRequest, options?: RequestOptions): Promise<TenantPlan> {
    return (await this.#request<TenantPlan>({ method: "PUT", path: "/v1/billing/plan", body: request }, options)).body;
  }

  /** GET /v1/billing/usage: a month's exact counts (`period` YYYY-MM, default the current month, UTC). */
  async getUsage(params: UsageParams = {}, options?: RequestOptions): Promise<Usage> {
    return (await this.#request<Usage>({ method: "GET", path: "/v1/billing/usage", query: params }, options)).body;
  }

  // ---- v2 jobs ----

  /** GET /v2/jobs/{job_id}: an asynchronous indexing job. A failed job is a job with status failed, not an error. */
  async getJob(jobId: string, options?: RequestOptions): Promise<Job> {
    return (await this.#request<Job>({ method: "GET", path: `/v2/jobs/${seg(jobId)}` }, options)).body;
  }

  /**
   * Polls GET /v2/jobs/{job_id} until the job is done or failed and returns
   * it (check `status`: failed carries `error_message`). Throws
   * LociTimeoutError when `deadlineMs` passes first.
   */
  async waitForJob(jobId: string, options: PollOptions = {}): Promise<Job> {
    const { intervalMs = 2000, maxIntervalMs = 30_000, deadlineMs = 300_000, ...rest } = options;
    const start = Date.now();
    let delay = intervalMs;
    for (;;) {
      const job = await this.getJob(jobId, rest);
      if (job.status === "done" || job.status === "failed") return job;
      const left = deadlineMs - (Date.now() - start);
      if (left <= 0) {
        throw new LociTimeoutError(`job ${jobId} still ${job.status} after ${deadlineMs} ms`, undefined, undefined);
      }
      await sleep(Math.min(delay, left), rest.signal);
      delay = Math.min(delay * 1.5, maxIntervalMs);
    }
  }

  // ---- transport ----

  /**
   * Sends a call, with failover and retries. With several base URLs, a node
   * that cannot be reached, that answers 503 with Retry-After, or whose
   * answer to a call safe to resend was lost, passes the call at once to the
   * next node, each node once per round; when every node has failed, the
   * retry policy decides whether to wait and start another round.
   */
  async #request<T>(call: Call, options: RequestOptions = {}): Promise<Answer<T>> {
    const retry = { ...this.#retry, ...options.retry };
    if (options.retry) checkRetry(retry);
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const target = this.#target(call);
    const headers: Record<string, string> = { Accept: "application/json", ...this.#headers };
    if (this.#apiKey !== undefined) headers["X-API-Key"] = this.#apiKey;
    if (options.requestId !== undefined) headers["X-Request-ID"] = options.requestId;
    let body: string | undefined;
    if (call.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(call.body);
    }
    const nodes = this.baseUrls.length;
    let node = this.#current;
    let round = 0; // retries of the policy, each a new round of the nodes
    let tried = 0; // nodes tried in this round
    for (let attempt = 0; ; attempt++) {
      options.signal?.throwIfAborted();
      tried++;
      const sent = { ...headers };
      if (nodes > 1 && this.#dataVersion !== undefined) sent["X-Loci-Min-Data-Version"] = this.#dataVersion;
      let response: RawAnswer;
      try {
        response = await this.#attempt(this.baseUrls[node] + target, { method: call.method, headers: sent, body }, timeoutMs, options);
      } catch (err) {
        const next = tried < nodes && err instanceof LociConnectionError && (neverSent(err.cause) || safeToResend(call));
        if (!next) throw err;
        node = (node + 1) % nodes;
        continue;
      }
      this.#onResponse?.({ method: call.method, path: call.path, status: response.status, headers: response.headers, attempt });
      const version = response.headers.get("x-loci-data-version");
      if (version !== null) this.#dataVersion = mergeDataVersions(this.#dataVersion, version);
      const text = response.text;
      if (response.status < 400) {
        this.#current = node;
        return { status: response.status, headers: response.headers, body: parseBody(text) as T };
      }
      const parsed = parseBody(text);
      const error = apiErrorFor({
        status: response.status,
        detail: detailOf(parsed, text, response.status),
        requestId: response.headers.get("x-request-id") ?? options.requestId,
        body: parsed,
        headers: response.headers,
        method: call.method,
        path: call.path,
      });
      const failover = response.status === 503 && response.headers.get("retry-after") !== null;
      if (failover && tried < nodes) {
        node = (node + 1) % nodes;
        continue;
      }
      if (failover) node = (node + 1) % nodes; // every node refused: the next round starts after this one
      else this.#current = node;
      const delay = retryDelay(response, parsed, round, retry);
      if (delay === undefined) throw error;
      round++;
      tried = 0;
      await sleep(delay, options.signal);
    }
  }

  /** One fetch, abandoned after timeoutMs (LociTimeoutError) or when the caller's signal aborts (its reason). */
  async #attempt(url: string, init: RequestInit, timeoutMs: number, options: RequestOptions): Promise<RawAnswer> {
    const controller = new AbortController();
    let timedOut = false;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            timedOut = true;
            controller.abort();
          }, timeoutMs)
        : undefined;
    const outer = options.signal;
    const onAbort = () => controller.abort(outer?.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    try {
      // The body is read inside the same signal, so a timeout covers a slow answer too.
      const response = await this.#fetch(url, { ...init, signal: controller.signal });
      return { status: response.status, headers: response.headers, text: await response.text() };
    } catch (err) {
      if (outer?.aborted) throw outer.reason;
      if (timedOut) {
        throw new LociTimeoutError(`${init.method} ${url}: no answer within ${timeoutMs} ms`, err, options.requestId);
      }
      throw new LociConnectionError(`${init.method} ${url}: ${messageOf(err)}`, err, options.requestId);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onAbort);
    }
  }

  /** The path and query of a call, to follow a base URL. */
  #target(call: Call): string {
    let url = call.path;
    if (call.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(call.query)) {
        if (v !== undefined && v !== null) q.append(k, String(v));
      }
      const s = q.toString();
      if (s) url += `?${s}`;
    }
    return url;
  }
}

function checkRetry(r: RetryOptions): void {
  for (const k of ["maxRetries", "initialDelayMs", "maxDelayMs"] as const) {
    if (!Number.isFinite(r[k]) || r[k] < 0) {
      throw new RangeError(`LociClient: retry.${k} must be a finite number >= 0, got ${r[k]}`);
    }
  }
}

/**
 * The wait before retrying a failed answer, or undefined when it is not
 * retried. Retried are 429 (over the plan's rate, the registration limit or
 * the job backlog) and 503 with Retry-After (starting, a pack that waited
 * too long for a slot): the server did nothing of such a request, so any
 * request, writes included, may be sent again. Not retried: a 503 without
 * Retry-After (shutting down, when a write may already be stored) and a
 * degraded /health (storage failed: waiting does not fix it). A Retry-After
 * is honoured, plus up to 10% jitter so that clients refused together do
 * not return together; without one the delay is exponential with jitter. A
 * Retry-After beyond maxDelayMs is not waited for.
 */
function retryDelay(response: RawAnswer, body: unknown, attempt: number, retry: RetryOptions): number | undefined {
  if (attempt >= retry.maxRetries) return undefined;
  const asked = parseRetryAfter(response.headers.get("retry-after"), Date.now());
  if (response.status === 503) {
    if (asked === undefined || field(body, "status") === "degraded") return undefined;
  } else if (response.status !== 429) {
    return undefined;
  }
  if (asked !== undefined) {
    if (asked > retry.maxDelayMs) return undefined;
    return asked + Math.random() * Math.max(100, asked * 0.1);
  }
  const backoff = Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** attempt);
  return backoff / 2 + Math.random() * (backoff / 2);
}

function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A string field of a JSON object body, if there is one. */
function field(body: unknown, name: string): string | undefined {
  if (body === null || typeof body !== "object") return undefined;
  const v = (body as Record<string, unknown>)[name];
  return typeof v === "string" ? v : undefined;
}

/** The human-readable error of an answer: its `detail`, or for /health its status and reason. */
function detailOf(parsed: unknown, text: string, status: number): string {
  const detail = field(parsed, "detail");
  if (detail !== undefined) return detail;
  const reason = field(parsed, "reason");
  if (reason !== undefined) return `${field(parsed, "status") ?? "unavailable"}: ${reason}`;
  return text.trim() === "" ? `HTTP ${status}` : text.trim().slice(0, 500);
}

function messageOf(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

/** Waits ms, or rejects with the signal's reason when it aborts first. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
