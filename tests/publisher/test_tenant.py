"""Tenants: the envelope's ``tenant`` is sent as the message's ``MessageGroupId`` (SQS fair queues on
a standard queue), refused before sending when SQS would refuse it, and nothing FIFO is assumed."""

from __future__ import annotations

import json
import re
import string

import botocore.session
import pytest

from tiered_jobs.contract.names import SQS_MESSAGE_GROUP_ID_PATTERN
from tiered_jobs.publisher import InvalidJobError, Job


def sqs_documented_group_id_punctuation() -> str:
    """The punctuation SQS's own API model lists as valid in a ``MessageGroupId``."""
    model = botocore.session.get_session().get_service_model("sqs")
    doc = model.shape_for("SendMessageBatchRequestEntry").members["MessageGroupId"].documentation
    listed = re.search(r"alphanumeric characters and punctuation <code>\((.*?)\)</code>", doc).group(1)
    return listed.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")


def test_the_tenant_rule_is_what_sqs_documents():
    punctuation = sqs_documented_group_id_punctuation()
    assert set(punctuation) == set(string.punctuation)
    assert SQS_MESSAGE_GROUP_ID_PATTERN.fullmatch(string.ascii_letters + string.digits + punctuation)
    assert SQS_MESSAGE_GROUP_ID_PATTERN.fullmatch("t" * 128) and not SQS_MESSAGE_GROUP_ID_PATTERN.fullmatch("t" * 129)


def test_the_tenant_becomes_the_message_group_id_and_an_envelope_field(publisher, sqs, deployment):
    entries = []
    sqs.meta.events.register(
        "before-parameter-build.sqs.SendMessageBatch", lambda params, **_: entries.extend(params["Entries"])
    )
    publisher.publish_batch(
        [Job("payments.capture", {"n": 1}, "k-1", tenant="acme"), Job("payments.capture", {"n": 2}, "k-2")]
    )
    with_tenant, without = entries
    assert with_tenant["MessageGroupId"] == "acme" and "MessageGroupId" not in without
    # FIFO-only parameters are never sent: fair queues are standard queues.
    assert not any("MessageDeduplicationId" in entry for entry in entries)
    assert json.loads(with_tenant["MessageBody"])["tenant"] == "acme"
    assert "tenant" not in json.loads(without["MessageBody"])
    # moto keeps the group id on a standard queue and returns it, as SQS does for fair queues.
    url = deployment.queue_urls["critical"]
    assert "FifoQueue" not in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    received = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["MessageGroupId"]
    )["Messages"]
    assert sorted(m["Attributes"].get("MessageGroupId", "-") for m in received) == ["-", "acme"]


@pytest.mark.parametrize("tenant", ["", "acme corp", "t" * 129, "café", "line\n"])
def test_a_tenant_sqs_would_refuse_is_refused_before_sending(publisher, batch_calls, tenant):
    with pytest.raises(InvalidJobError, match="'tenant' must be 1-128 characters"):
        publisher.publish("payments.capture", {}, "k-1", tenant=tenant)
    assert batch_calls == []
