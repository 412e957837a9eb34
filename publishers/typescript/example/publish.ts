// The generated payload types at work: this file is compiled (not run) by `npm test`, and each
// `@ts-expect-error` below fails the build if the compiler stops refusing that line.
import { Publisher } from "@tiered-jobs/publisher";
import { SQSClient } from "@aws-sdk/client-sqs";
import type { Jobs } from "./jobs.js";

export async function example(): Promise<void> {
  // From TIERED_JOBS_QUEUE_URL_<TIER> and TIERED_JOBS_ROUTES; Publisher.fromStage("prod") reads SSM instead.
  const publisher = Publisher.fromEnv<Jobs>({ sqs: new SQSClient({}) });

  await publisher.publish("payments.update_balance", { account_id: "acc_1", amount: 500 }, "pay_123", {
    tenant: "acme",
    expiresIn: 600,
  });
  await publisher.publishBatch([
    { type: "notifications.send_email", payload: { to: "a@example.com", subject: "Hi" }, idempotencyKey: "m-1" },
    { type: "analytics.record_event", payload: { event: "signup" }, idempotencyKey: "e-1", delay: 30 },
  ]);

  // @ts-expect-error: amount is a number
  await publisher.publish("payments.update_balance", { account_id: "acc_1", amount: "500" }, "pay_124");
  // @ts-expect-error: account_id is required
  await publisher.publish("payments.update_balance", { amount: 500 }, "pay_125");
  // @ts-expect-error: no such job type
  await publisher.publish("payments.update_balances", { account_id: "acc_1", amount: 500 }, "pay_126");
  await publisher.publishBatch([
    // @ts-expect-error: a batch entry's payload is its own type's
    { type: "notifications.send_email", payload: { account_id: "acc_1", amount: 5 }, idempotencyKey: "m-2" },
  ]);
}
