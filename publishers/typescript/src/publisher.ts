/**
 * The publisher: jobs validated, routed and sent to their tier's queue in as few `SendMessageBatch` calls as
 * SQS allows; entries SQS reports failed are sent again under full jitter, and one aggregate error names every
 * job not sent, never a silent drop (tiered_jobs/publisher/client.py's common path).
 */
import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
} from "@aws-sdk/client-sqs";
import { defaultSqs } from "./clients.js";
import { type Deployment, fromEnv, fromStage, type SsmSender } from "./discovery.js";
import { NotSupportedError, PublishError, type PublishResult } from "./errors.js";
import { SQS_MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES, packBatches } from "./limits.js";
import { PayloadSchemas } from "./payloads.js";
import { type Job, prepare, type Prepared, type PublishOptions } from "./prepare.js";
import type { Routes } from "./routing.js";
import { normalise } from "./traceHeader.js";

/** Job types and their payloads, e.g. generated from the payload schemas by `tiered-jobs-types`. */
// An interface (as the generator writes) has no index signature, so any object type is a map.
export type JobMap = object;

/** One job of `Jobs`: its type, and the payload that type takes. */
export type JobOf<Jobs extends JobMap> = { [T in keyof Jobs & string]: Job<T, Jobs[T]> }[keyof Jobs & string];

/** What the publisher asks of an SQS client: the SDK v3 `SQSClient` has it; a test passes a fake. */
export interface SqsSender {
  send(command: SendMessageBatchCommand): Promise<SendMessageBatchCommandOutput>;
}

/**
 * How entries SQS reports failed inside a successful call are sent again: up to `maxAttempts` tries, waiting a
 * draw from [0, min(maxSeconds, baseSeconds * 2^(n-1))] after try n ("full jitter"). Whole-call errors are the
 * SDK's own retry strategy's, not retried twice here.
 */
export interface ResendPolicy {
  maxAttempts: number;
  baseSeconds: number;
  maxSeconds: number;
}

export const DEFAULT_RESEND: ResendPolicy = { maxAttempts: 4, baseSeconds: 0.1, maxSeconds: 5 };

/** The publisher's settings beyond its queues and routes; every one has a default. */
export interface PublisherOptions {
  sqs?: SqsSender;
  /** Payload schemas (default: `TIERED_JOBS_SCHEMA_DIRS`'s folders). */
  schemas?: PayloadSchemas;
  resend?: ResendPolicy;
  /** Waits the given seconds (injectable so tests never wait). */
  sleep?: (seconds: number) => Promise<void>;
  /** A draw from [0, 1). */
  random?: () => number;
  clock?: () => Date;
  /** The caller's current trace header, for jobs that name none (default: Lambda's `_X_AMZN_TRACE_ID`). */
  traceContext?: (() => string | undefined) | null;
}

const ENTRY_IDS = Array.from({ length: SQS_MAX_BATCH_ENTRIES }, (_, place) => String(place));

function lambdaTrace(): string | undefined {
  return process.env["_X_AMZN_TRACE_ID"];
}

/** The `SendMessageBatch` entry of a job: its body, and only the parameters it has a value for. */
function entryOf(id: string, item: Prepared): SendMessageBatchRequestEntry {
  const entry: SendMessageBatchRequestEntry = { Id: id, MessageBody: item.body };
  if (item.delaySeconds) entry.DelaySeconds = item.delaySeconds;
  // A standard queue with message group ids is an SQS fair queue; nothing FIFO is implied.
  if (item.job.tenant !== undefined) entry.MessageGroupId = item.job.tenant;
  if (item.traceHeader !== undefined) {
    // A system attribute: none of the 10 message attributes, none of the message's size.
    entry.MessageSystemAttributes = { AWSTraceHeader: { DataType: "String", StringValue: item.traceHeader } };
  }
  return entry;
}

function resultOf(item: Prepared, attempts: number, outcome: Partial<PublishResult>): PublishResult {
  return {
    jobType: item.job.type,
    idempotencyKey: item.job.idempotencyKey,
    tier: item.tier,
    queueUrl: item.queueUrl,
    attempts,
    ...outcome,
  };
}

/** Publishes jobs to a deployment's tier queues: build it once per process. */
export class Publisher<Jobs extends JobMap = Record<string, Record<string, unknown>>> {
  readonly queues: Readonly<Record<string, string>>;
  readonly routes: Routes;
  readonly schemas: PayloadSchemas;
  private readonly sqs: SqsSender;
  private readonly resend: ResendPolicy;
  private readonly sleep: (seconds: number) => Promise<void>;
  private readonly random: () => number;
  private readonly clock: () => Date;
  private readonly traceContext: (() => string | undefined) | null;

  constructor(queues: Record<string, string>, routes: Routes, options: PublisherOptions = {}) {
    if (Object.keys(queues).length === 0) {
      throw new TypeError("a publisher needs the queue URL of at least one tier");
    }
    const resend = options.resend ?? DEFAULT_RESEND;
    if (!Number.isInteger(resend.maxAttempts) || resend.maxAttempts < 1) {
      throw new RangeError(`resend.maxAttempts must be an integer of at least 1, got ${resend.maxAttempts}`);
    }
    if (!(resend.baseSeconds >= 0 && resend.baseSeconds <= resend.maxSeconds)) {
      throw new RangeError(`resend needs 0 <= baseSeconds <= maxSeconds, got ${resend.baseSeconds} and ${resend.maxSeconds}`);
    }
    this.queues = { ...queues };
    this.routes = routes;
    this.schemas = options.schemas ?? PayloadSchemas.fromEnv();
    this.sqs = options.sqs ?? defaultSqs();
    this.resend = resend;
    this.sleep = options.sleep ?? ((seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000)));
    this.random = options.random ?? Math.random;
    this.clock = options.clock ?? (() => new Date());
    this.traceContext = options.traceContext === undefined ? lambdaTrace : options.traceContext;
  }

  /** From a found deployment (see `fromEnv`, `fromStage`). */
  static fromDeployment<J extends JobMap = Record<string, Record<string, unknown>>>(
    deployment: Deployment,
    options: PublisherOptions = {},
  ): Publisher<J> {
    return new Publisher<J>(deployment.queues, deployment.routes, options);
  }

  /** From `TIERED_JOBS_QUEUE_URL_<TIER>` and `TIERED_JOBS_ROUTES`: no AWS look-up. */
  static fromEnv<J extends JobMap = Record<string, Record<string, unknown>>>(
    options: PublisherOptions & { env?: Record<string, string | undefined> } = {},
  ): Publisher<J> {
    const { env, ...rest } = options;
    return Publisher.fromDeployment<J>(fromEnv(env), rest);
  }

  /** From the SSM parameters the stack writes for `stage` (`@aws-sdk/client-ssm` must be installed). */
  static async fromStage<J extends JobMap = Record<string, Record<string, unknown>>>(
    stage: string,
    options: PublisherOptions & { ssm?: SsmSender } = {},
  ): Promise<Publisher<J>> {
    const { ssm, ...rest } = options;
    return Publisher.fromDeployment<J>(await fromStage(stage, ssm), rest);
  }

  /** Publish one job; throws `InvalidJobError` (nothing sent), `NotSupportedError` or `PublishError`. */
  async publish<T extends keyof Jobs & string>(
    type: T,
    payload: Jobs[T],
    idempotencyKey: string,
    options: PublishOptions = {},
  ): Promise<PublishResult> {
    const [result] = await this.publishBatch([{ ...options, type, payload, idempotencyKey } as unknown as JobOf<Jobs>]);
    return result as PublishResult;
  }

  /**
   * Publish many jobs with as few calls as SQS allows; results in input order. Every job is validated first
   * (`InvalidJobError` names every problem; nothing is sent); then `PublishError` names every job not sent.
   */
  async publishBatch(jobs: readonly JobOf<Jobs>[]): Promise<PublishResult[]> {
    const prepared = prepare(this.destinations(), jobs as readonly Job[]);
    const results = new Map<number, PublishResult>();
    let firstError: unknown;
    for (const chunk of chunks(prepared)) {
      const error = await this.sendChunk(chunk, results);
      firstError ??= error;
    }
    const ordered = prepared.map((item) => results.get(item.index) as PublishResult);
    if (ordered.some((result) => result.messageId === undefined)) {
      throw new PublishError(ordered, firstError);
    }
    return ordered;
  }

  /** Throws `InvalidJobError` if `job` would be refused (e.g. before a commit); sends nothing. */
  validate(job: Job): void {
    prepare(this.destinations(), [job]);
  }

  /** Batches and chains (`publisher.batch`, `publisher.chain`) are the Python publisher's. */
  batch(): never {
    throw new NotSupportedError("a batch (publisher.batch, with callbacks)");
  }

  chain(): never {
    throw new NotSupportedError("a chain (publisher.chain)");
  }

  private destinations() {
    return {
      queues: this.queues,
      routes: this.routes,
      schemas: this.schemas,
      now: this.clock,
      ambientTrace: () => {
        const found = this.traceContext?.();
        // A publisher never fails for what its environment holds: a malformed header is left out.
        return found ? normalise(found) : undefined;
      },
    };
  }

  /** One chunk (one queue, at most 10 entries and 1 MiB), re-sending only failed entries; returns the error that ended it. */
  private async sendChunk(chunk: Prepared[], results: Map<number, PublishResult>): Promise<unknown> {
    let pending = chunk;
    let attempt = 0;
    while (pending.length > 0) {
      attempt += 1;
      const byId = new Map(pending.map((item, place) => [ENTRY_IDS[place] as string, item]));
      let answer: SendMessageBatchCommandOutput;
      try {
        answer = await this.sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: (pending[0] as Prepared).queueUrl,
            Entries: [...byId].map(([id, item]) => entryOf(id, item)),
          }),
        );
      } catch (error) {
        // The SDK has retried what is worth retrying. A timeout leaves the outcome unknown; publishing again is
        // safe because the key makes it idempotent.
        const code = (error as { name?: string }).name ?? "Error";
        for (const item of pending) {
          results.set(item.index, resultOf(item, attempt, { errorCode: code, errorMessage: String(error) }));
        }
        return error;
      }
      for (const entry of answer.Successful ?? []) {
        const item = byId.get(entry.Id ?? "");
        if (item === undefined) continue;
        byId.delete(entry.Id ?? "");
        results.set(item.index, resultOf(item, attempt, { messageId: entry.MessageId ?? "" }));
      }
      const retry: Prepared[] = [];
      for (const entry of answer.Failed ?? []) {
        const item = byId.get(entry.Id ?? "");
        if (item === undefined) continue;
        byId.delete(entry.Id ?? "");
        if (entry.SenderFault || attempt >= this.resend.maxAttempts) {
          results.set(
            item.index,
            resultOf(item, attempt, {
              errorCode: entry.Code ?? "",
              errorMessage: entry.Message ?? "",
              senderFault: Boolean(entry.SenderFault),
            }),
          );
        } else {
          retry.push(item);
        }
      }
      for (const item of byId.values()) {
        // Neither Successful nor Failed: never assume it was sent.
        results.set(item.index, resultOf(item, attempt, { errorCode: "Unreported", errorMessage: "SQS did not report this entry" }));
      }
      if (retry.length > 0) {
        const ceiling = Math.min(this.resend.maxSeconds, this.resend.baseSeconds * 2 ** (attempt - 1));
        await this.sleep(this.random() * ceiling);
      }
      pending = retry;
    }
    return undefined;
  }
}

/** Per queue (in first-seen order), greedy chunks of at most 10 entries and 1 MiB in all. */
function chunks(prepared: Prepared[]): Prepared[][] {
  const byQueue = new Map<string, Prepared[]>();
  for (const item of prepared) {
    const list = byQueue.get(item.queueUrl) ?? [];
    list.push(item);
    byQueue.set(item.queueUrl, list);
  }
  return [...byQueue.values()].flatMap((items) =>
    packBatches(items, (item) => item.size, SQS_MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES),
  );
}
