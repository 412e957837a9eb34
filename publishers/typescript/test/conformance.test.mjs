// Every case of conformance/vectors, read as tests/contract/test_conformance.py reads it for the Python publisher.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { envelope, InvalidJobError, messageSize, NotSupportedError, PayloadSchemas } from "../dist/esm/index.js";
import { FakeSqs, publisherFor, queueUrl } from "./support.mjs";

const VECTORS = new URL("../../../conformance/vectors/", import.meta.url);
const JOB_TYPE = "conformance.job";
const PUBLISHED_AT = "2026-12-07T10:00:00.000Z";

function padded(payload, pad) {
  return pad ? { ...payload, [pad.field]: pad.char.repeat(pad.count) } : { ...payload };
}

/** The problems a publish is refused with, as the vectors name them, sorted as conformance/codes.py sorts them. */
async function refused(publish) {
  let thrown;
  try {
    await publish();
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown instanceof InvalidJobError, `expected InvalidJobError, got ${thrown}`);
  return thrown.problems;
}

function codes(problems) {
  return problems
    .map(({ code, field }) => (field !== undefined && code !== "refused_character" ? { code, field } : { code }))
    .sort((a, b) => (a.code + "\0" + (a.field ?? "")).localeCompare(b.code + "\0" + (b.field ?? "")));
}

function payloadCodes(problems) {
  return problems
    .map(({ keyword, path }) => ({ keyword, path }))
    .sort((a, b) => (a.path === b.path ? (a.keyword < b.keyword ? -1 : 1) : a.path < b.path ? -1 : 1));
}

function sentBody(sqs) {
  const entries = sqs.entries();
  assert.equal(entries.length, 1);
  return JSON.parse(entries[0].MessageBody);
}

function sortedByCodeAndField(expected) {
  return [...expected].sort((a, b) => (a.code + "\0" + (a.field ?? "")).localeCompare(b.code + "\0" + (b.field ?? "")));
}

const runners = {
  async envelopes(given, expect) {
    let parsed;
    try {
      parsed = envelope.parse(given.body);
    } catch (error) {
      assert.ok(error instanceof envelope.EnvelopeError, String(error));
      if (expect.error === "not_json" || expect.error === "body_too_large") {
        assert.equal(error.kind, expect.error);
      } else {
        assert.deepEqual({ error: error.kind, problems: codes(error.problems) }, {
          error: expect.error,
          problems: sortedByCodeAndField(expect.problems),
        });
      }
      return;
    }
    assert.deepEqual({ valid: true, envelope: parsed }, expect);
    // What a consumer accepts, this publisher sends: the same fields, stamped with its own time.
    const sqs = new FakeSqs();
    const options = parsed.tenant !== undefined ? { tenant: parsed.tenant } : {};
    await publisherFor(sqs, { [parsed.type]: "critical" }).publish(parsed.type, parsed.payload, parsed.idempotency_key, options);
    const body = sentBody(sqs);
    for (const name of ["type", "idempotency_key", "payload", "version"]) {
      assert.deepEqual(body[name], parsed[name]);
    }
  },

  async payload_schemas(given, expect, content) {
    const schemas = Object.fromEntries(
      Object.entries(content.schemas).map(([name, schema]) => [`conformance.schema_${name}`, schema]),
    );
    const sqs = new FakeSqs();
    const publisher = publisherFor(sqs, undefined, { schemas: new PayloadSchemas(schemas) });
    const type = `conformance.schema_${given.schema}`;
    const publish = () => publisher.publish(type, given.payload, "k");
    if (expect.valid) {
      await publish();
      assert.deepEqual(sentBody(sqs).payload, given.payload);
    } else {
      const problems = await refused(publish);
      assert.ok(problems.every((problem) => problem.code === "payload_schema"), JSON.stringify(problems));
      assert.deepEqual(payloadCodes(problems), expect.problems);
    }
  },

  async routing(given, expect) {
    const sqs = new FakeSqs();
    const publish = () => publisherFor(sqs, given.routes).publish(given.job_type, {}, "k");
    if ("tier" in expect) {
      const result = await publish();
      assert.deepEqual([result.tier, sqs.calls[0].QueueUrl], [expect.tier, queueUrl(expect.tier)]);
    } else {
      assert.deepEqual(codes(await refused(publish)), expect.problems);
    }
  },

  async keys_and_tenants(given, expect) {
    const sqs = new FakeSqs();
    const key = given.idempotency_key;
    const options = {
      ...(given.tenant !== undefined ? { tenant: given.tenant } : {}),
      ...(given.tags !== undefined ? { tags: given.tags } : {}),
    };
    const publish = () => publisherFor(sqs).publish(JOB_TYPE, {}, key, options);
    if (expect.valid) {
      await publish();
      const [entry] = sqs.entries();
      assert.equal(entry.MessageGroupId ?? null, expect.message_group_id);
      const body = JSON.parse(entry.MessageBody);
      assert.equal(body.idempotency_key, key);
      assert.deepEqual(body.tags, expect.tags);
    } else {
      assert.deepEqual(codes(await refused(publish)), expect.problems);
    }
  },

  async sqs_characters(given, expect) {
    const text = given.text;
    assert.deepEqual([...text].map((character) => character.codePointAt(0)), given.code_points);
    const sqs = new FakeSqs();
    const publish = () => publisherFor(sqs).publish(JOB_TYPE, { text }, "k");
    if (expect.first_refused === null) {
      await publish();
      assert.equal(sentBody(sqs).payload.text, text);
    } else {
      const problems = await refused(publish);
      assert.equal(problems.length, 1);
      assert.equal(problems[0].code, "refused_character");
      assert.deepEqual(
        { index: problems[0].index, code_point: problems[0].codePoint },
        expect.first_refused,
      );
    }
  },

  async message_size(given, expect) {
    if ("attributes" in given) {
      // The publisher sets none: the contract's count, for ports that do.
      const attributes = Object.fromEntries(
        Object.entries(given.attributes).map(([name, value]) => [
          name,
          "BinaryValue" in value ? { ...value, BinaryValue: Buffer.from(value.BinaryValue, "base64") } : value,
        ]),
      );
      assert.equal(messageSize(given.body, attributes), expect.bytes);
      return;
    }
    const sqs = new FakeSqs();
    const payload = padded(given.payload, given.pad);
    const options = given.tenant !== undefined ? { tenant: given.tenant } : {};
    const publisher = publisherFor(sqs, undefined, { clock: () => new Date(given.published_at) });
    const publish = () => publisher.publish(given.type, payload, given.idempotency_key, options);
    if (expect.valid) {
      await publish();
      const [entry] = sqs.entries();
      assert.equal(JSON.parse(entry.MessageBody).published_at.length, PUBLISHED_AT.length);
      assert.equal(Buffer.byteLength(entry.MessageBody, "utf8"), expect.bytes);
    } else {
      assert.deepEqual(codes(await refused(publish)), expect.problems);
    }
  },

  async batch_chunking(given, expect) {
    const sqs = new FakeSqs();
    const publisher = publisherFor(sqs, undefined, { clock: () => new Date(PUBLISHED_AT) });
    const jobs = given.entries.map((entry, index) => {
      const key = `k${index}`;
      // The body of a conformance.sized job with an empty `data` field, padded up to the entry's bytes.
      const base = JSON.stringify({
        type: "conformance.sized",
        idempotency_key: key,
        payload: { data: "" },
        version: 1,
        published_at: PUBLISHED_AT,
      });
      const data = "x".repeat(entry.bytes - Buffer.byteLength(base, "utf8"));
      return { type: "conformance.sized", payload: { data }, idempotencyKey: key, tier: entry.tier };
    });
    await publisher.publishBatch(jobs);
    const tierOf = Object.fromEntries(["critical", "bulk"].map((tier) => [queueUrl(tier), tier]));
    const calls = sqs.calls.map((call) => ({
      tier: tierOf[call.QueueUrl],
      entries: call.Entries.map((entry) => Number(JSON.parse(entry.MessageBody).idempotency_key.slice(1))),
    }));
    assert.deepEqual(calls, expect.calls);
    for (const call of sqs.calls) {
      assert.ok(call.Entries.length <= expect.limits.entries);
      const bytes = call.Entries.reduce((sum, entry) => sum + Buffer.byteLength(entry.MessageBody, "utf8"), 0);
      assert.ok(bytes <= expect.limits.bytes, `${bytes} bytes in one call`);
    }
    // Each message is as large as its entry says: the body is built byte for byte as the Python publisher builds it.
    const sent = new Map(sqs.entries().map((entry) => [JSON.parse(entry.MessageBody).idempotency_key, entry.MessageBody]));
    assert.deepEqual(
      given.entries.map((_, index) => Buffer.byteLength(sent.get(`k${index}`), "utf8")),
      given.entries.map((entry) => entry.bytes),
    );
  },

  async delay_and_deadline(given, expect) {
    const sqs = new FakeSqs();
    const publisher = publisherFor(sqs, undefined, { clock: () => new Date(given.now) });
    const options = {};
    if (given.delay !== undefined) options.delay = given.delay;
    if (given.expires_in !== undefined) options.expiresIn = given.expires_in;
    if (given.expires_at !== undefined) options.expiresAt = given.expires_at;
    const publish = () => publisher.publish(JOB_TYPE, {}, "k", options);
    if ("problems" in expect) {
      assert.deepEqual(codes(await refused(publish)), expect.problems);
    } else if (expect.scheduled) {
      // Past SQS's delay the job takes a one-time schedule: the Python publisher's path, refused here.
      await assert.rejects(publish, (error) => error instanceof NotSupportedError && /Python publisher/.test(error.message));
      assert.deepEqual(sqs.calls, []);
    } else {
      await publish();
      const [entry] = sqs.entries();
      assert.equal(entry.DelaySeconds ?? 0, expect.delay_seconds);
      assert.equal(JSON.parse(entry.MessageBody).expires_at ?? null, expect.expires_at);
    }
  },

  async trace_header(given, expect) {
    const sqs = new FakeSqs();
    const options = given.trace_header !== null ? { traceHeader: given.trace_header } : {};
    const publish = () => publisherFor(sqs).publish(JOB_TYPE, {}, "k", options);
    if ("problems" in expect) {
      assert.deepEqual(codes(await refused(publish)), expect.problems);
      return;
    }
    await publish();
    const [entry] = sqs.entries();
    assert.equal(entry.MessageSystemAttributes?.AWSTraceHeader?.StringValue ?? null, expect.AWSTraceHeader);
    assert.equal(entry.MessageAttributes, undefined); // a system attribute: none of the 10, not counted in the size
  },
};

const files = readdirSync(VECTORS).filter((name) => name.endsWith(".json")).sort();

it("reads the nine vector files", () => {
  assert.deepEqual(
    files.map((name) => JSON.parse(readFileSync(new URL(name, VECTORS), "utf8")).category).sort(),
    Object.keys(runners).sort(),
  );
});

for (const name of files) {
  const content = JSON.parse(readFileSync(new URL(name, VECTORS), "utf8"));
  describe(content.category, () => {
    for (const vector of content.cases) {
      it(vector.name, () => runners[content.category](vector.input, vector.expect, content));
    }
  });
}
