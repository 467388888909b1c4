/**
 * Named request and response types of the Loci API, taken from the types
 * that scripts/generate.mjs generates from docs/openapi.yaml: one name per
 * schema of the API description, so the client's signatures follow the
 * server's contract and a change to it breaks the build, not the caller.
 */
import type { components, operations } from "./generated/openapi.js";

type S = components["schemas"];

export type Artifact = S["Artifact"];
export type ArtifactErased = S["ArtifactErased"];
export type ArtifactInput = S["ArtifactInput"];
export type ArtifactList = S["ArtifactList"];
export type ArtifactStatus = S["ArtifactStatus"];
export type ArtifactSummary = S["ArtifactSummary"];
export type ArtifactType = S["ArtifactType"];
export type BatchIngestQueued = S["BatchIngestQueued"];
export type BatchIngestRequest = S["BatchIngestRequest"];
export type BatchIngestResponse = S["BatchIngestResponse"];
export type BatchIngested = S["BatchIngested"];
export type ChannelContribution = S["ChannelContribution"];
export type Citation = S["Citation"];
export type ClaimRef = S["ClaimRef"];
export type Conflict = S["Conflict"];
export type ContextPackRequest = S["ContextPackRequest"];
export type ContextPackResponse = S["ContextPackResponse"];
export type EmbeddingState = S["EmbeddingState"];
export type Exclusion = S["Exclusion"];
export type ExclusionReason = S["ExclusionReason"];
export type FeedbackAction = S["FeedbackAction"];
export type FeedbackRequest = S["FeedbackRequest"];
export type FeedbackResponse = S["FeedbackResponse"];
export type HealthOK = S["HealthOK"];
export type HealthUnavailable = S["HealthUnavailable"];
export type IndexStatus = S["IndexStatus"];
export type IngestRequest = S["IngestRequest"];
export type IngestResponse = S["IngestResponse"];
export type Job = S["Job"];
export type JobStatus = S["JobStatus"];
export type KeyCreated = S["KeyCreated"];
export type KeyInfo = S["KeyInfo"];
export type KeyList = S["KeyList"];
export type KeyRevoked = S["KeyRevoked"];
export type Metadata = S["Metadata"];
export type MetadataOut = S["MetadataOut"];
export type Permissions = S["Permissions"];
export type Plan = S["Plan"];
export type TenantList = S["TenantList"];
export type PlanChangeRequest = S["PlanChangeRequest"];
export type PlanList = S["PlanList"];
export type PlanName = S["PlanName"];
export type Policy = S["Policy"];
export type PolicySummary = S["PolicySummary"];
export type QueuedJob = S["QueuedJob"];
export type Receipt = S["Receipt"];
export type ReceiptList = S["ReceiptList"];
export type ReceiptSummary = S["ReceiptSummary"];
export type RegisterRequest = S["RegisterRequest"];
export type RegisterResponse = S["RegisterResponse"];
export type Snippet = S["Snippet"];
export type Span = S["Span"];
export type TenantPlan = S["TenantPlan"];
export type TokenAccounting = S["TokenAccounting"];
export type Usage = S["Usage"];
export type V2ContextPackRequest = S["V2ContextPackRequest"];
export type V2ContextPackResponse = S["V2ContextPackResponse"];
export type V2TokenAccounting = S["V2TokenAccounting"];
export type WorkspaceErased = S["WorkspaceErased"];
export type WorkspaceList = S["WorkspaceList"];
export type WorkspaceSettings = S["WorkspaceSettings"];
export type WorkspaceSettingsChange = S["WorkspaceSettingsChange"];
export type WorkspaceSummary = S["WorkspaceSummary"];
export type ErrorBody = S["Error"];

/** Query parameters of GET /v1/workspaces/{workspace_id}/artifacts. */
export type ListArtifactsParams = NonNullable<operations["listArtifacts"]["parameters"]["query"]>;
/** Query parameters of GET /v1/receipts. */
export type ListReceiptsParams = operations["listReceipts"]["parameters"]["query"];
/** Query parameters of GET /v1/billing/usage. */
export type UsageParams = NonNullable<operations["getUsage"]["parameters"]["query"]>;
/** Query parameters of GET /v1/billing/plan. */
export type PlanParams = NonNullable<operations["getPlan"]["parameters"]["query"]>;

/** The v1 ingest answer, with whether it was an idempotent replay (the Idempotent-Replay header). */
export type IngestResult = IngestResponse & {
  /** True when the idempotency_key was already used for this artifact: nothing new was stored (status 200). */
  idempotent_replay: boolean;
};
