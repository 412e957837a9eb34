/** @tiered-jobs/publisher: publish Tiered Jobs from TypeScript, as the Python publisher does on its common path. */
export { Publisher, DEFAULT_RESEND } from "./publisher.js";
export { defaultSqs } from "./clients.js";
export type { JobMap, JobOf, PublisherOptions, ResendPolicy, SqsSender } from "./publisher.js";
export type { Job, PublishOptions } from "./prepare.js";
export { DiscoveryError, InvalidJobError, NotSupportedError, PublishError } from "./errors.js";
export type { JobProblem, Problem, ProblemCode, PublishResult } from "./errors.js";
export { fromEnv, fromStage, ssmNames } from "./discovery.js";
export type { Deployment, SsmSender } from "./discovery.js";
export { Routes } from "./routing.js";
export { PayloadSchemas } from "./payloads.js";
export * as envelope from "./envelope.js";
export { normalise as normaliseTraceHeader } from "./traceHeader.js";
export {
  MAX_JOB_MESSAGE_BYTES,
  RUNTIME_ATTRIBUTES_HEADROOM_BYTES,
  SQS_MAX_MESSAGE_BYTES,
  firstRefusedCharacter,
  messageSize,
  packBatches,
} from "./limits.js";
