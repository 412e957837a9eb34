"""A job carries its caller's trace: the X-Ray header (or a W3C ``traceparent``, converted) goes out as
the message's ``AWSTraceHeader`` system attribute, never as one of its 10 message attributes."""

from __future__ import annotations

import botocore.session
import pytest

from tiered_jobs.contract import trace_header
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES, message_size
from tiered_jobs.publisher import InvalidJobError, Job, Publisher

HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
TRACEPARENT = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"


@pytest.fixture
def entries(sqs) -> list[dict]:
    """Every entry the publisher hands SendMessageBatch, as botocore builds the call."""
    sent: list[dict] = []
    sqs.meta.events.register(
        "before-parameter-build.sqs.SendMessageBatch", lambda params, **_: sent.extend(params["Entries"])
    )
    return sent


def traced_publisher(deployment, sqs, context) -> Publisher:
    return Publisher(
        deployment.queue_urls, Routes(deployment.routes), sqs=sqs, sleep=lambda _: None, trace_context=context
    )


def test_awstraceheader_is_the_only_system_attribute_sqs_takes_and_is_outside_the_budget():
    model = botocore.session.get_session().get_service_model("sqs")
    assert model.shape_for("MessageSystemAttributeNameForSends").enum == [trace_header.ATTRIBUTE]
    doc = model.operation_model("SendMessage").input_shape.members["MessageSystemAttributes"].documentation
    assert "doesn't count towards the total size of a message" in doc


def test_a_named_header_goes_as_the_system_attribute_and_costs_no_message_attribute(publisher, entries):
    result = publisher.publish("payments.capture", {"n": 1}, "k-1", trace_header=HEADER)
    (entry,) = entries
    assert entry["MessageSystemAttributes"] == {trace_header.ATTRIBUTE: {"DataType": "String", "StringValue": HEADER}}
    assert "MessageAttributes" not in entry  # all 10 left to the runtime's own attributes
    assert result.ok


def test_a_w3c_traceparent_is_converted_to_the_same_trace(publisher, entries):
    publisher.publish_batch([Job("payments.capture", {}, "k-1", trace_header=TRACEPARENT)])
    sent = entries[0]["MessageSystemAttributes"][trace_header.ATTRIBUTE]["StringValue"]
    assert sent == HEADER
    unsampled = trace_header.normalise(TRACEPARENT[:-2] + "00")
    assert trace_header.root(unsampled) == "1-5759e988-bd862e3fe1be46a994272793" and not trace_header.sampled(unsampled)


def test_without_a_named_header_the_lambda_invocations_is_carried(deployment, sqs, entries, monkeypatch):
    monkeypatch.setenv(trace_header.ENVIRONMENT_VARIABLE, HEADER + ";Lineage=a87bd80c:1|68fd508a:5")
    publisher = traced_publisher(deployment, sqs, trace_header.from_environment)
    publisher.publish_batch(
        [Job("payments.capture", {}, "k-1"), Job("payments.capture", {}, "k-2", trace_header=TRACEPARENT[:-2] + "00")]
    )
    ambient, named = (entry["MessageSystemAttributes"][trace_header.ATTRIBUTE]["StringValue"] for entry in entries)
    assert ambient == HEADER + ";Lineage=a87bd80c:1|68fd508a:5"
    assert named.endswith("Sampled=0")  # the one the caller named wins


def test_an_ambient_context_never_fails_a_publish_and_none_sends_no_system_attribute(deployment, sqs, entries):
    traced_publisher(deployment, sqs, lambda: "not a header").publish("payments.capture", {}, "k-1")
    traced_publisher(deployment, sqs, None).publish("payments.capture", {}, "k-2")
    assert [("MessageSystemAttributes" in entry) for entry in entries] == [False, False]


@pytest.mark.parametrize("bad", ["Root=1-xyz", "Parent=53995c3f42cd8ad8;Sampled=1", HEADER + ";no equals", "00-zz"])
def test_a_named_header_sqs_would_refuse_is_refused_before_sending(publisher, batch_calls, bad):
    with pytest.raises(InvalidJobError, match="trace_header .* is not an X-Ray trace header"):
        publisher.publish("payments.capture", {}, "k-1", trace_header=bad)
    assert batch_calls == []


def test_a_job_of_the_largest_size_is_still_sent_with_its_header(publisher, entries):
    """The header is outside the message's size: a job exactly at the publisher's limit still goes."""
    publisher.publish("payments.capture", {"pad": ""}, "k-1")
    overhead = message_size(entries[0]["MessageBody"])
    publisher.publish("payments.capture", {"pad": "x" * (MAX_JOB_MESSAGE_BYTES - overhead)}, "k-2", trace_header=HEADER)
    assert message_size(entries[1]["MessageBody"]) == MAX_JOB_MESSAGE_BYTES
    assert entries[1]["MessageSystemAttributes"][trace_header.ATTRIBUTE]["StringValue"] == HEADER
