/** What a publish throws: jobs refused before sending, options this port leaves to Python, jobs SQS did not take. */

/** The rule a problem breaks, named as the conformance vectors name it (conformance/codes.py). */
export type ProblemCode =
  | "not_an_object"
  | "missing_field"
  | "unknown_field"
  | "invalid_field"
  | "refused_character"
  | "payload_schema"
  | "no_route"
  | "unknown_tier"
  | "invalid_delay"
  | "invalid_deadline"
  | "message_too_large"
  | "invalid_trace_header";

/** One problem: a sentence for people, and the rule it breaks for programs. */
export interface Problem {
  code: ProblemCode;
  message: string;
  /** The envelope field (`type`, `batch.step`...), where one is named. */
  field?: string;
  /** A payload schema's keyword and dotted path (`""`: the payload itself), for `payload_schema`. */
  keyword?: string;
  path?: string;
  /** A refused character's code-point index and `U+XXXX`, for `refused_character`. */
  index?: number;
  codePoint?: string;
}

/** A problem of one job of a call, named by its type and key. */
export interface JobProblem extends Problem {
  job: string;
}

/** One or more jobs refused before anything was sent: fix the call, retrying won't help. */
export class InvalidJobError extends Error {
  readonly problems: JobProblem[];

  constructor(problems: JobProblem[]) {
    super(`nothing was published: ${problems.map((p) => `${p.job}: ${p.message}`).join("; ")}`);
    this.name = "InvalidJobError";
    this.problems = problems;
  }
}

/** An option or a path the Python publisher has and this one does not: nothing was sent. */
export class NotSupportedError extends Error {
  constructor(what: string) {
    super(
      `${what} is not supported by @tiered-jobs/publisher: publish such jobs with the Python publisher ` +
        "(tiered_jobs.publisher.Publisher), which has it; nothing was published",
    );
    this.name = "NotSupportedError";
  }
}

/** The stage's queues could not be found (not deployed, wrong account or region, missing variables). */
export class DiscoveryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DiscoveryError";
  }
}

/** What happened to one job: a `messageId` when SQS accepted it, else the last error. */
export interface PublishResult {
  jobType: string;
  idempotencyKey: string;
  tier: string;
  queueUrl: string;
  attempts: number;
  messageId?: string;
  errorCode?: string;
  errorMessage?: string;
  senderFault?: boolean;
}

/** Some jobs were not accepted by SQS; `results` has every job's outcome, in input order, and the others were sent. */
export class PublishError extends Error {
  readonly results: PublishResult[];

  constructor(results: PublishResult[], cause?: unknown) {
    const failed = results.filter((result) => result.messageId === undefined);
    super(
      `${failed.length} of ${results.length} job(s) not published: ` +
        failed
          .map(
            (r) =>
              `${describeJob(r.jobType, r.idempotencyKey)} -> ${r.tier}: ${r.errorCode ?? "?"} ${r.errorMessage ?? ""}`.trim() +
              ` (after ${r.attempts} attempt(s))`,
          )
          .join("; ") +
        "; publishing them again with the same keys is safe",
      cause === undefined ? undefined : { cause },
    );
    this.name = "PublishError";
    this.results = results;
  }

  /** The jobs that were not published. */
  get failed(): PublishResult[] {
    return this.results.filter((result) => result.messageId === undefined);
  }
}

/** `job <type> (key "<key>")`, a long key cut so it cannot flood a message. */
export function describeJob(jobType: unknown, key: unknown): string {
  let shown = key;
  if (typeof key === "string") {
    const points = [...key];
    shown = points.length > 60 ? `${points.slice(0, 40).join("")}…(${points.length} characters)` : key;
  }
  return `job ${String(jobType)} (key ${JSON.stringify(shown)})`;
}
