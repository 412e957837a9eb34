// What the tests share: an in-memory SQS client (the SDK v3 `send` of a command), and a publisher on it.
import { PayloadSchemas, Publisher, Routes } from "../dist/esm/index.js";

export const QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/{tier}";

export function queueUrl(tier) {
  return QUEUE_URL.replace("{tier}", tier);
}

/** An SQS client held in memory: each `SendMessageBatch` call's input is recorded and answered by `answer`. */
export class FakeSqs {
  constructor(answer = FakeSqs.acceptAll) {
    this.calls = [];
    this.answer = answer;
  }

  static acceptAll(input) {
    return {
      Successful: input.Entries.map((entry) => ({ Id: entry.Id, MessageId: `m-${entry.Id}`, MD5OfMessageBody: "" })),
      Failed: [],
    };
  }

  async send(command) {
    if (command.constructor.name !== "SendMessageBatchCommand") {
      throw new Error(`the fake SQS answers SendMessageBatch only, got ${command.constructor.name}`);
    }
    const input = structuredClone(command.input);
    this.calls.push(input);
    return this.answer(input, this.calls.length);
  }

  entries() {
    return this.calls.flatMap((call) => call.Entries);
  }
}

/** A publisher on `sqs` with the vectors' queues, no waits and no ambient trace. */
export function publisherFor(sqs, routes = { "conformance.*": "critical" }, options = {}) {
  const tiers = new Set([...Object.values(routes), "critical", "bulk"]);
  const queues = Object.fromEntries([...tiers].sort().map((tier) => [tier, queueUrl(tier)]));
  return new Publisher(queues, new Routes(routes), {
    sqs,
    schemas: new PayloadSchemas({}),
    traceContext: null,
    sleep: async () => {},
    ...options,
  });
}
