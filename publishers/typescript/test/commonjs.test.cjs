// The CommonJS build: `require` gets the same publisher as `import`.
const assert = require("node:assert/strict");
const { it } = require("node:test");

it("is required from CommonJS", async () => {
  const { Publisher, Routes, PayloadSchemas } = require("@tiered-jobs/publisher");
  const calls = [];
  const sqs = {
    async send(command) {
      calls.push(command.input);
      return { Successful: command.input.Entries.map((entry) => ({ Id: entry.Id, MessageId: "m" })), Failed: [] };
    },
  };
  const publisher = new Publisher({ bulk: "https://sqs.invalid/bulk" }, new Routes({ "*": "bulk" }), {
    sqs,
    schemas: new PayloadSchemas({}),
    traceContext: null,
  });
  const result = await publisher.publish("mail.send", { to: "a" }, "k");
  assert.equal(result.messageId, "m");
  assert.equal(JSON.parse(calls[0].Entries[0].MessageBody).type, "mail.send");
});
