"""Gap 19 of the moto adapter: a ``SendMessageBatch`` entry keeps its ``MessageSystemAttributes``, as SQS
(and moto's own ``SendMessage``) does, so locally a batched job still carries its ``AWSTraceHeader``."""

from __future__ import annotations

import boto3

from emulator import moto_patches
from tiered_jobs.contract import trace_header

HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def _headers(sqs, url: str) -> dict[str, str | None]:
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"])
    return {m["Body"]: m["Attributes"].get(trace_header.ATTRIBUTE) for m in messages["Messages"]}


def test_a_batch_entry_keeps_its_trace_header_and_one_without_gets_none(aws):
    moto_patches.sqs_batch_system_attributes()
    moto_patches.sqs_batch_system_attributes()  # idempotent: patched once
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="traced")["QueueUrl"]
    entries = [
        {"Id": "0", "MessageBody": "traced", "MessageSystemAttributes": trace_header.system_attributes(HEADER)},
        {"Id": "1", "MessageBody": "plain"},
        {"Id": "2", "MessageBody": "other", "MessageSystemAttributes": trace_header.system_attributes(HEADER + "0")},
    ]
    assert len(sqs.send_message_batch(QueueUrl=url, Entries=entries)["Successful"]) == 3
    sqs.send_message(QueueUrl=url, MessageBody="single", MessageSystemAttributes=trace_header.system_attributes(HEADER))
    assert _headers(sqs, url) == {"traced": HEADER, "plain": None, "other": HEADER + "0", "single": HEADER}
