/**
 * A job made ready to send: every problem SQS or the consumer would refuse named before anything is sent
 * (tiered_jobs/publisher/prepare.py's common path), its body built once.
 */
import { build, toJson } from "./envelope.js";
import { describeJob, InvalidJobError, type JobProblem, NotSupportedError, type Problem } from "./errors.js";
import { MAX_JOB_MESSAGE_BYTES, messageSize, RUNTIME_ATTRIBUTES_HEADROOM_BYTES, SQS_MAX_DELAY_SECONDS, SQS_MAX_MESSAGE_BYTES } from "./limits.js";
import type { PayloadSchemas } from "./payloads.js";
import type { Routes } from "./routing.js";
import { isoText, parseZoned } from "./times.js";
import { normalise, traceHeaderProblem } from "./traceHeader.js";

/** A job's options on the common path. */
export interface PublishOptions {
  /** The tier to send to, in place of the routing table's. */
  tier?: string;
  /** Whole seconds (0-900) before the job is due: the message's `DelaySeconds`. */
  delay?: number;
  /** The job's deadline, in whole seconds after it is due: not started by then, it is archived unrun. */
  expiresIn?: number;
  /** The job's deadline as a moment (a `Date`, or ISO 8601 text with a time zone). */
  expiresAt?: Date | string;
  /** Whom the job is for: the envelope's `tenant` and the message's `MessageGroupId` (SQS fair queues). */
  tenant?: string;
  /** The caller's X-Ray header or W3C `traceparent` (default: the publisher's `traceContext`). */
  traceHeader?: string;
  /** Up to 10 short `name: value` pairs on each of the job's log lines, to find it by (`tiered-jobs search --tag`). */
  tags?: Record<string, string>;
}

/** One job of a `publishBatch` call. */
export interface Job<Type extends string = string, Payload = Record<string, unknown>> extends PublishOptions {
  type: Type;
  payload: Payload;
  idempotencyKey: string;
}

/** The Python publisher's options this package refuses (with the Python publisher named), by name. */
const PYTHON_ONLY: Record<string, string> = {
  at: "at (a job for a moment, through a one-time schedule)",
  debounce: "debounce",
  uniqueFor: "uniqueFor (unique jobs)",
  unique_for: "unique_for (unique jobs)",
  largePayloads: "largePayloads (bodies stored in S3)",
  batch: "batch (a batch or chain membership)",
};
const OPTIONS = new Set(["type", "payload", "idempotencyKey", "tier", "delay", "expiresIn", "expiresAt", "tenant", "traceHeader", "tags"]);

/** A validated job, ready to send: its body is final and its queue known. */
export interface Prepared {
  index: number;
  job: Job;
  tier: string;
  queueUrl: string;
  body: string;
  size: number;
  delaySeconds: number;
  traceHeader: string | undefined;
}

/** What preparing a job reads of its publisher. */
export interface Destinations {
  queues: Readonly<Record<string, string>>;
  routes: Routes;
  schemas: PayloadSchemas;
  now(): Date;
  ambientTrace(): string | undefined;
}

function timingProblem(code: "invalid_delay" | "invalid_deadline", message: string): Problem {
  return { code, message };
}

/** Whole seconds before the job is due, or the problem; a delay SQS cannot hold is refused as Python-only. */
function delaySeconds(delay: unknown): number | Problem {
  if (delay === undefined) return 0;
  if (typeof delay !== "number" || !Number.isInteger(delay)) {
    return timingProblem("invalid_delay", `delay must be whole seconds (an integer), got ${JSON.stringify(delay)}`);
  }
  if (delay < 0) {
    return timingProblem("invalid_delay", `delay must be 0 seconds or more, got ${delay}`);
  }
  if (delay > SQS_MAX_DELAY_SECONDS) {
    throw new NotSupportedError(
      `a delay of ${delay} s (over SQS's ${SQS_MAX_DELAY_SECONDS} s, a one-time schedule)`,
    );
  }
  return delay;
}

/** The envelope's `expires_at`, counted from when the job is due; refused when it could never be met. */
function deadline(job: Job, due: Date, now: Date): string | undefined | Problem {
  const { expiresAt, expiresIn } = job;
  if (expiresAt === undefined && expiresIn === undefined) return undefined;
  if (expiresAt !== undefined && expiresIn !== undefined) {
    return timingProblem(
      "invalid_deadline",
      "give either expiresAt (a moment) or expiresIn (seconds after the job is due), not both",
    );
  }
  if (expiresIn !== undefined) {
    if (typeof expiresIn !== "number" || !Number.isInteger(expiresIn) || expiresIn <= 0) {
      return timingProblem(
        "invalid_deadline",
        `expiresIn must be whole seconds more than 0, got ${JSON.stringify(expiresIn)}: the job would never run`,
      );
    }
    return isoText(new Date(due.getTime() + expiresIn * 1000));
  }
  const moment = expiresAt instanceof Date ? expiresAt : typeof expiresAt === "string" ? parseZoned(expiresAt) : undefined;
  if (moment === undefined || Number.isNaN(moment.getTime())) {
    return timingProblem(
      "invalid_deadline",
      `expiresAt must be a Date or ISO 8601 text with a time zone, got ${JSON.stringify(expiresAt)}`,
    );
  }
  if (moment <= now) {
    return timingProblem("invalid_deadline", `expiresAt ${isoText(moment)} has passed (now ${isoText(now)}): the job would never run`);
  }
  if (moment <= due) {
    return timingProblem(
      "invalid_deadline",
      `expiresAt ${isoText(moment)} is not after the job is due (${isoText(due)}): it would expire before it could start`,
    );
  }
  return isoText(moment);
}

function isProblem(value: unknown): value is Problem {
  return typeof value === "object" && value !== null && "code" in value;
}

function refuseOptionsOfPython(job: Job): void {
  for (const name of Object.keys(job)) {
    const python = PYTHON_ONLY[name];
    if (python !== undefined && (job as unknown as Record<string, unknown>)[name] !== undefined) {
      throw new NotSupportedError(python);
    }
    if (python === undefined && !OPTIONS.has(name)) {
      throw new TypeError(`unknown job option ${JSON.stringify(name)}; options: ${[...OPTIONS].join(", ")}`);
    }
  }
}

/** One job: what it is sent as, when and where, or the problems of its fields, payload, route, timing and message. */
function prepareOne(publisher: Destinations, index: number, job: Job, ambient: string | undefined): Prepared | Problem[] {
  refuseOptionsOfPython(job);
  const fields: Problem[] = [];
  let traced = ambient;
  if (job.traceHeader !== undefined) {
    traced = typeof job.traceHeader === "string" ? normalise(job.traceHeader) : undefined;
    if (traced === undefined) {
      fields.push({ code: "invalid_trace_header", message: traceHeaderProblem(String(job.traceHeader)) });
    }
  }
  const routing: Problem[] = [];
  let tier = "";
  if (typeof job.type === "string") {
    if (job.tier !== undefined) {
      tier = job.tier;
    } else {
      const routed = publisher.routes.tierFor(job.type);
      if ("problem" in routed) routing.push(routed.problem);
      else tier = routed.tier;
    }
    if (tier && publisher.queues[tier] === undefined) {
      const known = Object.keys(publisher.queues).sort().join(", ") || "(none)";
      routing.push({ code: "unknown_tier", message: `unknown tier ${JSON.stringify(tier)}; known tiers: ${known}` });
    }
  }
  const timing: Problem[] = [];
  const now = publisher.now();
  const delay = delaySeconds(job.delay);
  if (isProblem(delay)) timing.push(delay);
  const due = new Date(now.getTime() + (isProblem(delay) ? 0 : delay) * 1000);
  const expiresAt = deadline(job, due, now);
  if (isProblem(expiresAt)) timing.push(expiresAt);
  const built = build({
    type: job.type,
    idempotency_key: job.idempotencyKey,
    payload: job.payload,
    published_at: isoText(now),
    ...(job.tenant !== undefined ? { tenant: job.tenant } : {}),
    ...(job.tags !== undefined ? { tags: job.tags } : {}),
    ...(typeof expiresAt === "string" ? { expires_at: expiresAt } : {}),
  });
  fields.push(...built.problems);
  if (built.envelope !== undefined) {
    fields.push(...publisher.schemas.problems(built.envelope.type, built.envelope.payload));
  }
  const message: Problem[] = [];
  let body = "";
  let size = 0;
  if (built.envelope !== undefined) {
    body = toJson(built.envelope);
    size = messageSize(body);
    if (size > MAX_JOB_MESSAGE_BYTES) {
      // The runtime adds its own attributes to a job's letter and to its held copies: a body that leaves them
      // no room would reach the DLQ without its reasons.
      message.push({
        code: "message_too_large",
        message:
          `the message is ${size} bytes, over the ${MAX_JOB_MESSAGE_BYTES}-byte limit (SQS's ${SQS_MAX_MESSAGE_BYTES} ` +
          `less ${RUNTIME_ATTRIBUTES_HEADROOM_BYTES} for the runtime's own attributes); pass IDs, not objects, or ` +
          "publish it with the Python publisher and large_payloads on the tier, which stores such bodies in S3",
      });
    }
  }
  const problems = [...fields, ...routing, ...timing, ...message];
  if (problems.length > 0) return problems;
  return {
    index,
    job,
    tier,
    queueUrl: publisher.queues[tier] as string,
    body,
    size,
    delaySeconds: delay as number,
    traceHeader: traced,
  };
}

/** Every job checked and its message built, in order; else {@link InvalidJobError} names every problem of every job, and none is sent. */
export function prepare(publisher: Destinations, jobs: readonly Job[]): Prepared[] {
  const ambient = publisher.ambientTrace(); // once per call: every job of it comes from the same request
  const prepared: Prepared[] = [];
  const problems: JobProblem[] = [];
  jobs.forEach((job, index) => {
    const outcome = prepareOne(publisher, index, job, ambient);
    if (Array.isArray(outcome)) {
      const label = jobs.length > 1 ? `#${index} ` : "";
      const named = describeJob(job.type, job.idempotencyKey).replace(/^job /, `job ${label}`);
      problems.push(...outcome.map((problem) => ({ ...problem, job: named })));
    } else {
      prepared.push(outcome);
    }
  });
  if (problems.length > 0) {
    throw new InvalidJobError(problems);
  }
  return prepared;
}
