// The console's client of the Loci HTTP API. The API key lives in
// sessionStorage only (gone when the tab closes), never in localStorage or a
// cookie.

const keyName = "loci.apiKey";

export function storedKey(): string {
  return sessionStorage.getItem(keyName) ?? "";
}
export function storeKey(key: string) {
  if (key) sessionStorage.setItem(keyName, key);
  else sessionStorage.removeItem(keyName);
}

/** unauthorizedEvent is dispatched on window when the stored key is refused. */
export const unauthorizedEvent = "loci:unauthorized";

/** ApiError is a non-2xx answer: its status and the body's detail. */
export class ApiError extends Error {
  constructor(public status: number, public detail: string) {
    super(`${status}: ${detail}`);
  }
}

async function request<T>(method: string, path: string, body?: unknown, key = storedKey()): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (key) headers["X-API-Key"] = key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  const text = await res.text();
  if (!res.ok) {
    let detail = text || res.statusText;
    try {
      const j = JSON.parse(text);
      if (typeof j.detail === "string") detail = j.detail;
    } catch {
      /* not JSON: keep the text */
    }
    // A key that stops working (revoked, or the server's admin key changed) signs the tab out.
    if (res.status === 401 && key && key === storedKey()) dispatchEvent(new CustomEvent(unauthorizedEvent, { detail }));
    throw new ApiError(res.status, detail);
  }
  return (text ? JSON.parse(text) : {}) as T;
}

export type ArtifactType =
  | "chat_turn" | "tool_call" | "tool_result" | "document" | "note"
  | "meeting_transcript" | "email" | "calendar_event" | "attachment";
export const artifactTypes: ArtifactType[] = [
  "chat_turn", "tool_call", "tool_result", "document", "note", "meeting_transcript", "email", "calendar_event", "attachment",
];

export interface WorkspaceSummary {
  workspace_id: string;
  artifact_count: number;
  span_count: number;
  newest_artifact_at: string | null;
  data_version: number;
}
export interface TenantWorkspaces {
  tenant_id: string;
  email: string | null;
  plan: string;
  workspaces: WorkspaceSummary[];
}
export interface ArtifactSummary {
  artifact_id: string;
  workspace_id: string;
  actor_id: string;
  artifact_type: ArtifactType;
  content_hash: string;
  timestamp: string;
  created: string;
  idempotency_key: string | null;
  session_id: string | null;
  thread_id: string | null;
  metadata: Record<string, string>;
  /** the start of its text (the first 160 code points of its first span); absent on a single artifact's read */
  preview?: string;
}
export interface ArtifactList {
  workspace_id: string;
  artifacts: ArtifactSummary[];
  limit: number;
  next_cursor: string | null;
}
export interface Span {
  span_id: string;
  start_offset: number;
  end_offset: number;
  token_count: number;
  /** the span's text: the artifact's extracted text between the offsets */
  text: string;
}
export interface Artifact extends ArtifactSummary {
  raw_payload: unknown;
  permissions: { visibility?: string; allowed_actors?: string[]; denied_actors?: string[]; rbac_tags?: string[] };
  status: string;
  spans: Span[];
}
export interface ArtifactStatus {
  artifact_id: string;
  status: string;
  indexed: boolean;
  span_count: number;
  total_tokens: number;
  indexed_at: string | null;
  error_message: string | null;
  embedding: string;
}
export interface Citation {
  index: number;
  artifact_id: string;
  span_id: string;
  start_offset: number;
  end_offset: number;
  content_hash: string;
  source_type: string;
  relevance_score: number;
  content_preview: string;
  pinned: boolean;
  // When and who (absent from receipts stored before servers sent them).
  timestamp?: string;
  actor_id?: string | null;
  session_id?: string | null;
}
export interface ClaimRef {
  artifact_id: string;
  span_id: string;
  content_hash: string;
}
export interface Conflict {
  id: string;
  claim_a: ClaimRef;
  claim_b: ClaimRef;
  description: string;
  resolution: string | null;
  resolved_by: string | null;
}
export interface PackV1 {
  context_text: string;
  citations: Citation[];
  confidence: number;
  abstain_flag: boolean;
  abstain_reason: string | null;
  receipt_id: string;
  total_tokens: number;
  pack_hash: string;
  conflicts: Conflict[];
}
export interface Snippet {
  content: string;
  artifact_id: string;
  span_id: string;
  score: number;
  artifact_type: string;
  start_offset: number;
  end_offset: number;
  citation: number;
  timestamp?: string;
  actor_id?: string | null;
  session_id?: string | null;
}
export interface PackV2 {
  snippets: Snippet[];
  pack_hash: string;
  serving_profile: string;
  token_accounting: { budget: number; used: number; snippets: number };
  citation_count: number;
  receipt_id: string;
  confidence: number;
  abstain_flag: boolean;
  assumptions: string[];
  // The dated [cite:N] lines and the conflicts, as v1's (an extension of the v2 contract).
  context_text?: string;
  conflicts?: Conflict[];
}
export interface Exclusion {
  span_id: string;
  artifact_id: string;
  reason: string;
  detail: string;
  relevance_score: number;
}
export interface Receipt {
  id: string;
  query: string;
  timestamp: string;
  workspace_id: string;
  actor_id?: string;
  evidence: Citation[];
  channel_contributions: { channel: string; candidate_count: number; selected_count: number; weight: number }[];
  exclusions: Exclusion[];
  conflicts: Conflict[];
  token_accounting: { budget: number; prefix_tokens: number; working_set_tokens: number; total_used: number; remaining: number };
  confidence: number;
  abstain_flag: boolean;
  abstain_reason: string | null;
  assumptions: string[];
  policy_summary: Record<string, unknown>;
  pack_hash: string;
}
export interface ReceiptSummary {
  id: string;
  query: string;
  timestamp: string;
  actor_id: string;
  confidence: number;
  abstain_flag: boolean;
  pack_hash: string;
  total_tokens: number;
}
export interface ReceiptList {
  receipts: ReceiptSummary[];
  total: number;
  limit: number;
  offset: number;
}
export interface Health {
  status: string;
  version?: string;
  uptime_s?: number;
  reason?: string;
  storage?: Record<string, unknown>;
}
export type FeedbackAction = "pin" | "unpin" | "private" | "mark_wrong" | "outdated" | "resolve_conflict" | "clear";
export interface FeedbackRequest {
  workspace_id: string;
  action: FeedbackAction;
  actor_id?: string;
  artifact_id?: string;
  span_id?: string;
  reason?: string;
  conflict_id?: string;
  preferred_span_id?: string;
}
export interface FeedbackResponse {
  feedback_id: string;
  action: string;
  applied: number;
  created_at: string;
}

const enc = encodeURIComponent;

function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

export const api = {
  /** probe lists workspaces with the given key (or none): 200 means it signs in. */
  probe: (key: string) => request<{ workspaces: WorkspaceSummary[] }>("GET", "/v1/workspaces", undefined, key),
  workspaces: () => request<{ workspaces: WorkspaceSummary[] }>("GET", "/v1/workspaces"),
  /** tenants: every tenant with its workspaces; the admin key only (403 otherwise). */
  tenants: () => request<{ tenants: TenantWorkspaces[] }>("GET", "/v1/tenants"),
  artifacts: (ws: string, f: Record<string, string | undefined>) =>
    request<ArtifactList>("GET", `/v1/workspaces/${enc(ws)}/artifacts${query(f)}`),
  artifact: (id: string) => request<Artifact>("GET", `/v1/artifacts/${enc(id)}`),
  artifactStatus: (id: string) => request<ArtifactStatus>("GET", `/v1/artifacts/${enc(id)}/status`),
  packV1: (body: Record<string, unknown>) => request<PackV1>("POST", "/v1/context-pack", body),
  packV2: (body: Record<string, unknown>) => request<PackV2>("POST", "/v2/context-pack", body),
  receipts: (ws: string, packHash: string, offset: number, limit: number) =>
    request<ReceiptList>("GET", `/v1/receipts${query({ workspace_id: ws, pack_hash: packHash, offset, limit })}`),
  receipt: (id: string) => request<Receipt>("GET", `/v1/receipts/${enc(id)}`),
  feedback: (f: FeedbackRequest) => request<FeedbackResponse>("POST", "/v1/feedback", f),
  /** health answers 503 with a health body while starting or degraded; that body is returned too. */
  health: async (): Promise<Health> => {
    const headers: Record<string, string> = { Accept: "application/json" };
    const key = storedKey();
    if (key) headers["X-API-Key"] = key;
    const res = await fetch("/health", { headers, cache: "no-store" });
    const text = await res.text();
    let body: unknown;
    try { body = JSON.parse(text); } catch { body = null; }
    if ((res.ok || res.status === 503) && body && typeof (body as Health).status === "string") return body as Health;
    throw new ApiError(res.status, (body as { detail?: string } | null)?.detail ?? text);
  },
  /** metrics: the Prometheus text; 401/403 for keys that may not read it. */
  metrics: async (): Promise<string> => {
    const headers: Record<string, string> = { Accept: "text/plain" };
    const key = storedKey();
    if (key) headers["X-API-Key"] = key;
    const res = await fetch("/ui/api/metrics", { headers, cache: "no-store" });
    const text = await res.text();
    if (!res.ok) {
      let detail = text;
      try { detail = JSON.parse(text).detail ?? text; } catch { /* plain */ }
      throw new ApiError(res.status, detail);
    }
    return text;
  },
};
