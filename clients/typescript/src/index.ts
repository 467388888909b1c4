/**
 * @loci-memory/client: the official TypeScript client of Loci, the memory
 * store for AI agents. See README.md.
 */
export { LociClient, DEFAULT_BASE_URL, mergeDataVersions } from "./client.js";
export type { LociClientOptions, RequestOptions, RetryOptions, PollOptions, ResponseInfo } from "./client.js";
export {
  LociError,
  LociAPIError,
  BadRequestError,
  AuthenticationError,
  PermissionDeniedError,
  NotFoundError,
  ConflictError,
  PayloadTooLargeError,
  RateLimitError,
  InternalServerError,
  ServiceUnavailableError,
  InsufficientStorageError,
  LociConnectionError,
  LociTimeoutError,
} from "./errors.js";
export type { APIErrorInit } from "./errors.js";
export type * from "./types.js";
export type { paths, components, operations } from "./generated/openapi.js";
