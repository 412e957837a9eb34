// The publisher beyond the vectors: re-sends under full jitter, one aggregate error, discovery, refused paths.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  defaultSqs,
  DiscoveryError,
  fromEnv,
  fromStage,
  InvalidJobError,
  NotSupportedError,
  PublishError,
  Publisher,
} from "../dist/esm/index.js";
import { FakeSqs, publisherFor, queueUrl } from "./support.mjs";

/** Answers each call by failing the entries whose key `failing(key, call)` names, with `code`. */
function failing(failingKey, { code = "InternalError", senderFault = false } = {}) {
  return (input, call) => {
    const answer = { Successful: [], Failed: [] };
    for (const entry of input.Entries) {
      const key = JSON.parse(entry.MessageBody).idempotency_key;
      if (failingKey(key, call)) {
        answer.Failed.push({ Id: entry.Id, Code: code, Message: `${code} for ${key}`, SenderFault: senderFault });
      } else {
        answer.Successful.push({ Id: entry.Id, MessageId: `m-${key}`, MD5OfMessageBody: "" });
      }
    }
    return answer;
  };
}

function jobs(count) {
  return Array.from({ length: count }, (_, index) => ({ type: "conformance.job", payload: {}, idempotencyKey: `k${index}` }));
}

describe("re-sending failed entries", () => {
  it("sends only the failed entries again, waiting a full-jitter draw after each try", async () => {
    const waits = [];
    const sqs = new FakeSqs(failing((key, call) => key === "k1" && call < 3));
    const publisher = publisherFor(sqs, undefined, { sleep: async (seconds) => waits.push(seconds), random: () => 0.5 });
    const results = await publisher.publishBatch(jobs(3));
    assert.deepEqual(
      sqs.calls.map((call) => call.Entries.map((entry) => JSON.parse(entry.MessageBody).idempotency_key)),
      [["k0", "k1", "k2"], ["k1"], ["k1"]],
    );
    // Drawn from [0, 0.1 s] then [0, 0.2 s]: random() * min(5, 0.1 * 2^(n-1)).
    assert.deepEqual(waits, [0.05, 0.1]);
    assert.deepEqual(results.map((result) => [result.idempotencyKey, result.attempts, result.messageId]), [
      ["k0", 1, "m-k0"],
      ["k1", 3, "m-k1"],
      ["k2", 1, "m-k2"],
    ]);
  });

  it("names every unsent job in one error once the attempts are spent, and the sent ones in its results", async () => {
    const sqs = new FakeSqs(failing((key) => key === "k3" || key === "k11"));
    const publisher = publisherFor(sqs, undefined, { resend: { maxAttempts: 2, baseSeconds: 0.1, maxSeconds: 5 } });
    const error = await publisher.publishBatch(jobs(12)).then(
      () => assert.fail("expected a PublishError"),
      (thrown) => thrown,
    );
    assert.ok(error instanceof PublishError);
    assert.deepEqual(error.failed.map((result) => [result.idempotencyKey, result.errorCode, result.attempts]), [
      ["k3", "InternalError", 2],
      ["k11", "InternalError", 2],
    ]);
    assert.equal(error.results.length, 12);
    assert.equal(error.results.filter((result) => result.messageId !== undefined).length, 10);
    assert.match(error.message, /^2 of 12 job\(s\) not published: job conformance\.job \(key "k3"\).*key "k11"/);
    assert.equal(sqs.calls.length, 4); // two chunks, each tried twice
  });

  it("does not send a sender's fault again", async () => {
    const sqs = new FakeSqs(failing((key) => key === "k0", { code: "InvalidParameterValue", senderFault: true }));
    await assert.rejects(publisherFor(sqs).publishBatch(jobs(1)), (error) => {
      assert.deepEqual(error.failed.map((result) => [result.errorCode, result.senderFault, result.attempts]), [
        ["InvalidParameterValue", true, 1],
      ]);
      return true;
    });
    assert.equal(sqs.calls.length, 1);
  });

  it("never takes an entry SQS did not report for sent", async () => {
    const sqs = new FakeSqs(() => ({ Successful: [], Failed: [] }));
    await assert.rejects(publisherFor(sqs).publish("conformance.job", {}, "k"), (error) => {
      assert.equal(error.failed[0].errorCode, "Unreported");
      return error instanceof PublishError;
    });
  });

  it("fails every job of a call the SDK gave up on, with the SDK's error as the cause, and sends the other calls", async () => {
    const refused = Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" });
    const sqs = new FakeSqs((input, call) => {
      if (call === 1) throw refused;
      return FakeSqs.acceptAll(input);
    });
    const error = await publisherFor(sqs).publishBatch(jobs(11)).catch((thrown) => thrown);
    assert.ok(error instanceof PublishError);
    assert.equal(error.cause, refused);
    assert.equal(error.failed.length, 10);
    assert.deepEqual(new Set(error.failed.map((result) => result.errorCode)), new Set(["ThrottlingException"]));
    assert.equal(error.results[10].messageId, "m-0");
  });
});

describe("refusals", () => {
  for (const [option, value] of [
    ["at", new Date()],
    ["debounce", 60],
    ["uniqueFor", 60],
    ["largePayloads", true],
  ]) {
    it(`refuses ${option}, naming the Python publisher, and sends nothing`, async () => {
      const sqs = new FakeSqs();
      await assert.rejects(
        publisherFor(sqs).publish("conformance.job", {}, "k", { [option]: value }),
        (error) => error instanceof NotSupportedError && /the Python publisher/.test(error.message),
      );
      assert.deepEqual(sqs.calls, []);
    });
  }

  it("refuses batches and chains, naming the Python publisher", () => {
    const publisher = publisherFor(new FakeSqs());
    assert.throws(() => publisher.batch(), /Python publisher/);
    assert.throws(() => publisher.chain(), /Python publisher/);
  });

  it("refuses an unknown option by name", async () => {
    await assert.rejects(publisherFor(new FakeSqs()).publish("conformance.job", {}, "k", { dealy: 5 }), /unknown job option "dealy"/);
  });

  it("names every bad job of a batch, by its place, and sends none", async () => {
    const sqs = new FakeSqs();
    const error = await publisherFor(sqs)
      .publishBatch([
        { type: "conformance.job", payload: {}, idempotencyKey: "" },
        { type: "conformance.job", payload: {}, idempotencyKey: "ok" },
        { type: "billing.invoice", payload: {}, idempotencyKey: "b" },
      ])
      .catch((thrown) => thrown);
    assert.ok(error instanceof InvalidJobError);
    assert.deepEqual(error.problems.map((problem) => [problem.job, problem.code]), [
      ['job #0 conformance.job (key "")', "invalid_field"],
      ['job #2 billing.invoice (key "b")', "no_route"],
    ]);
    assert.deepEqual(sqs.calls, []);
  });
});

describe("trace context", () => {
  it("carries the ambient trace header of the request when the job names none, and leaves a malformed one out", async () => {
    for (const [ambient, expected] of [
      ["Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"],
      ["garbage", undefined],
    ]) {
      const sqs = new FakeSqs();
      await publisherFor(sqs, undefined, { traceContext: () => ambient }).publish("conformance.job", {}, "k");
      assert.equal(sqs.entries()[0].MessageSystemAttributes?.AWSTraceHeader?.StringValue, expected);
    }
  });
});

describe("discovery", () => {
  it("reads each tier's queue URL and the routes from the environment", () => {
    const deployment = fromEnv({
      TIERED_JOBS_QUEUE_URL_CRITICAL: queueUrl("critical"),
      TIERED_JOBS_QUEUE_URL_BULK_EU: queueUrl("bulk-eu"),
      TIERED_JOBS_ROUTES: '{"payments.*": "critical", "*": "bulk-eu"}',
      OTHER: "x",
    });
    assert.deepEqual(deployment.queues, { critical: queueUrl("critical"), "bulk-eu": queueUrl("bulk-eu") });
    assert.deepEqual(deployment.routes.tierFor("mail.send"), { tier: "bulk-eu" });
  });

  it("says which variables to set when the environment has no queue", () => {
    assert.throws(() => fromEnv({}), (error) => error instanceof DiscoveryError && /TIERED_JOBS_QUEUE_URL_<TIER>/.test(error.message));
    assert.throws(
      () => fromEnv({ TIERED_JOBS_QUEUE_URL_BULK: "u", TIERED_JOBS_ROUTES: "[1" }),
      /routes in \$TIERED_JOBS_ROUTES are not a JSON object/,
    );
  });

  it("reads the stage's SSM parameters, ten names a call", async () => {
    const tiers = Array.from({ length: 12 }, (_, index) => `t${index}`);
    const parameters = {
      "/tiered-jobs/dev/tiers": tiers.join(","),
      "/tiered-jobs/dev/routes": '{"*": "t11"}',
      ...Object.fromEntries(tiers.map((tier) => [`/tiered-jobs/dev/tiers/${tier}/queue-url`, queueUrl(tier)])),
    };
    const asked = [];
    const ssm = {
      async send(command) {
        assert.equal(command.constructor.name, "GetParametersCommand");
        asked.push(command.input.Names);
        return { Parameters: command.input.Names.filter((name) => name in parameters).map((Name) => ({ Name, Value: parameters[Name] })) };
      },
    };
    const publisher = await Publisher.fromStage("dev", { ssm, sqs: new FakeSqs(), traceContext: null });
    assert.deepEqual(asked.map((names) => names.length), [2, 10, 2]);
    assert.equal(publisher.queues.t11, queueUrl("t11"));
    assert.deepEqual(publisher.routes.tierFor("any.job"), { tier: "t11" });
    await assert.rejects(fromStage("prod", ssm), /SSM parameter \/tiered-jobs\/prod\/tiers not found: is stage "prod" deployed/);
  });
});

describe("the default SQS client", () => {
  it("sends to the environment's endpoint, not to each queue URL's host", async () => {
    for (const [env, expected] of [
      [{ AWS_ENDPOINT_URL: "http://127.0.0.1:4566" }, "127.0.0.1"],
      [{ AWS_ENDPOINT_URL: "http://127.0.0.1:4566", AWS_ENDPOINT_URL_SQS: "http://localhost:9324" }, "localhost"],
    ]) {
      const client = defaultSqs(env);
      assert.equal((await client.config.endpoint()).hostname, expected);
    }
    assert.equal(defaultSqs({}).config.endpoint, undefined); // the SDK's own resolution, and the queue URL's host
  });
});
