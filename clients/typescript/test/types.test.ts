/**
 * Compile-time checks that each LociClient method takes and returns the
 * types the generated API description gives its route: `npm test` compiles
 * this file, so a method wired to the wrong schema, or a route whose
 * schema changed under it, fails the build.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import type { IngestResult, LociClient, operations } from "../src/index.js";

type Op = keyof operations;
/** The JSON body of an operation's answer with status `Code`. */
type Answer<O extends Op, Code extends PropertyKey> = Code extends keyof operations[O]["responses"]
  ? operations[O]["responses"][Code] extends { content: { "application/json": infer T } }
    ? T
    : never
  : never;
/** The JSON request body of an operation. */
type Body<O extends Op> = operations[O] extends { requestBody: { content: { "application/json": infer T } } }
  ? T
  : operations[O] extends { requestBody?: { content: { "application/json": infer T } } }
    ? T
    : never;
/** The query parameters of an operation. */
type Query<O extends Op> = NonNullable<operations[O]["parameters"]["query"]>;
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Returns<M extends keyof LociClient> = LociClient[M] extends (...a: never[]) => Promise<infer R> ? R : never;
type Arg<M extends keyof LociClient, N extends number> = LociClient[M] extends (...a: infer P) => unknown ? NonNullable<P[N]> : never;

/** Compiles only when T is true: one check per call. */
function is<T extends true>(): T {
  return true as T;
}

const checks = {
  health: is<Same<Returns<"health">, Answer<"getHealth", 200>>>(),
  register: is<Same<Returns<"register">, Answer<"register", 201>>>(),
  registerBody: is<Same<Arg<"register", 0>, Body<"register">>>(),
  createKey: is<Same<Returns<"createKey">, Answer<"createKey", 201>>>(),
  listKeys: is<Same<Returns<"listKeys">, Answer<"listKeys", 200>>>(),
  revokeKey: is<Same<Returns<"revokeKey">, Answer<"revokeKey", 200>>>(),
  ingest: is<Same<Returns<"ingest">, Answer<"ingest", 201> & Omit<IngestResult, keyof Answer<"ingest", 201>>>>(),
  ingestBody: is<Same<Arg<"ingest", 0>, Body<"ingest">>>(),
  ingestBatchBody: is<Same<Arg<"ingestBatch", 0>, Body<"ingestBatchV2">>>(),
  ingestBatch: is<Same<Returns<"ingestBatch">, Answer<"ingestBatchV2", 201> | Answer<"ingestBatchV2", 202>>>(),
  getArtifact: is<Same<Returns<"getArtifact">, Answer<"getArtifact", 200>>>(),
  getArtifactStatus: is<Same<Returns<"getArtifactStatus">, Answer<"getArtifactStatus", 200>>>(),
  eraseArtifact: is<Same<Returns<"eraseArtifact">, Answer<"eraseArtifact", 200>>>(),
  listArtifacts: is<Same<Returns<"listArtifacts">, Answer<"listArtifacts", 200>>>(),
  listArtifactsQuery: is<Same<Arg<"listArtifacts", 1>, Query<"listArtifacts">>>(),
  contextPack: is<Same<Returns<"contextPack">, Answer<"contextPack", 200>>>(),
  contextPackBody: is<Same<Arg<"contextPack", 0>, Body<"contextPack">>>(),
  contextPackV2: is<Same<Returns<"contextPackV2">, Answer<"contextPackV2", 200>>>(),
  contextPackV2Body: is<Same<Arg<"contextPackV2", 0>, Body<"contextPackV2">>>(),
  feedback: is<Same<Returns<"feedback">, Answer<"submitFeedback", 201>>>(),
  feedbackBody: is<Same<Arg<"feedback", 0>, Body<"submitFeedback">>>(),
  getReceipt: is<Same<Returns<"getReceipt">, Answer<"getReceipt", 200>>>(),
  listReceipts: is<Same<Returns<"listReceipts">, Answer<"listReceipts", 200>>>(),
  listReceiptsQuery: is<Same<Arg<"listReceipts", 0>, Query<"listReceipts">>>(),
  listWorkspaces: is<Same<Returns<"listWorkspaces">, Answer<"listWorkspaces", 200>>>(),
  eraseWorkspace: is<Same<Returns<"eraseWorkspace">, Answer<"eraseWorkspace", 200>>>(),
  getWorkspaceSettings: is<Same<Returns<"getWorkspaceSettings">, Answer<"getWorkspaceSettings", 200>>>(),
  setWorkspaceSettings: is<Same<Returns<"setWorkspaceSettings">, Answer<"setWorkspaceSettings", 200>>>(),
  setWorkspaceSettingsBody: is<Same<Arg<"setWorkspaceSettings", 1>, Body<"setWorkspaceSettings">>>(),
  listPlans: is<Same<Returns<"listPlans">, Answer<"listPlans", 200>>>(),
  getPlan: is<Same<Returns<"getPlan">, Answer<"getPlan", 200>>>(),
  getPlanQuery: is<Same<Arg<"getPlan", 0>, Query<"getPlan">>>(),
  setPlan: is<Same<Returns<"setPlan">, Answer<"setPlan", 200>>>(),
  setPlanBody: is<Same<Arg<"setPlan", 0>, Body<"setPlan">>>(),
  getUsage: is<Same<Returns<"getUsage">, Answer<"getUsage", 200>>>(),
  getUsageQuery: is<Same<Arg<"getUsage", 0>, Query<"getUsage">>>(),
  getJob: is<Same<Returns<"getJob">, Answer<"getJobV2", 200>>>(),
};

test("every method's types are its route's generated types", () => {
  // The checks are compile-time; this only proves the file was compiled and run.
  assert.ok(Object.values(checks).every((v) => v === true));
  assert.equal(Object.keys(checks).length, 37);
});
