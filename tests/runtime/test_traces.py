"""One trace from the publishing request to the job: every run of a job is a subsegment annotated with
its type, key, tier and attempt and naming its publisher's trace, and every message the runtime sends
for the job (a held or deferred copy, a newer producer's held copy, its letter, the letter's replay,
a cancel sweep's copy) carries the publisher's ``AWSTraceHeader`` on, so none of them loses the link.

No X-Ray daemon here: a recording tracer stands in for Powertools' (what the consumer calls on it is
the whole contract), and the header is checked on what SQS is sent, and, where moto keeps system
attributes (``SendMessage``), on what it gives back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.runtime.test_copies import FREE, HOG, LIMITED, FakeTime, limited, registry
from tests.runtime.test_envelope_too_new import newer
from tests.runtime.test_time_budget import MARGIN_MS, TIMEOUT_MS, LambdaClock
from tests.support.recording import Recording
from tiered_jobs.contract import trace_header
from tiered_jobs.contract.envelope import build
from tiered_jobs.operations import bulk_cancel
from tiered_jobs.replay import TierQueues, parse_event, run
from tiered_jobs.runtime.tracing import JobTracer

ROOT = "1-5759e988-bd862e3fe1be46a994272793"
HEADER = f"Root={ROOT};Parent=53995c3f42cd8ad8;Sampled=1"
#: The consumer's own invocation: sampled, a trace of its own (Lambda's), not the publisher's.
INVOCATION = "Root=1-67891233-abcdef012345678912345678;Parent=0123456789abcdef;Sampled=1"


class Subsegment:
    def __init__(self, name: str):
        self.name = name
        self.annotations: dict[str, object] = {}

    def put_annotation(self, key: str, value: object) -> None:
        self.annotations[key] = value


class RecordingTracer:
    """Powertools' ``Tracer`` as the consumer uses it: ``provider.in_subsegment(name=)``."""

    def __init__(self) -> None:
        self.segments: list[Subsegment] = []
        self.provider = self

    @contextmanager
    def in_subsegment(self, name: str) -> Iterator[Subsegment]:
        segment = Subsegment(name)
        self.segments.append(segment)
        yield segment


@pytest.fixture
def tracer() -> RecordingTracer:
    return RecordingTracer()


def traced(consumer, tracer: RecordingTracer, invocation: str = INVOCATION):
    consumer.tracer = JobTracer(environ={trace_header.ENVIRONMENT_VARIABLE: invocation}, factory=lambda: tracer)
    return consumer


def publish(tier, job_type: str, payload: dict, key: str, body: str | None = None) -> str:
    """A job sent as the publisher sends one, with its caller's trace header (moto keeps it on SendMessage)."""
    return tier.sqs.send_message(
        QueueUrl=tier.queue_url,
        MessageBody=body or build(job_type, payload, key).to_json(),
        MessageSystemAttributes=trace_header.system_attributes(HEADER),
    )["MessageId"]


def headers(entries: list[dict]) -> list[str | None]:
    return [e.get("MessageSystemAttributes", {}).get(trace_header.ATTRIBUTE, {}).get("StringValue") for e in entries]


def sent(sqs: Recording) -> list[dict]:
    return [entry for call in sqs.of("send_message_batch") for entry in call["Entries"]]


# -- the runs ----------------------------------------------------------------------------------------


def test_a_job_runs_in_its_own_subsegment_annotated_and_naming_its_publishers_trace(tier, tracer, recorded):
    consumer = traced(tier.consumer(), tracer)
    publish(tier, "testjobs.ok", {"label": "signup"}, "evt-1")
    tier.run_batch(consumer)
    assert recorded == [("evt-1", {"label": "signup"})]
    (segment,) = tracer.segments
    assert segment.name == "## testjobs.ok"
    assert segment.annotations == {
        "job_type": "testjobs.ok",
        "job_key": "evt-1",
        "tier": "critical",
        "attempt": 1,
        "publisher_trace_id": ROOT,
    }


def test_a_retry_is_the_same_message_and_its_run_names_the_same_trace_with_its_attempt(tier, tracer):
    consumer = traced(tier.consumer(), tracer)
    publish(tier, "testjobs.transient", {"fail_times": 1}, "flaky-1")
    assert tier.run_batch(consumer)["batchItemFailures"]  # attempt 1 failed, retried
    tier.make_visible()
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    assert [(s.annotations["attempt"], s.annotations["publisher_trace_id"]) for s in tracer.segments] == [
        (1, ROOT),
        (2, ROOT),
    ]


def test_an_unsampled_invocation_or_a_disabled_tier_records_nothing_and_builds_no_tracer(tier, recorded):
    def never() -> None:
        raise AssertionError("the tracer was built")

    consumer = tier.consumer()
    for tracer in (
        JobTracer(
            environ={trace_header.ENVIRONMENT_VARIABLE: INVOCATION.replace("Sampled=1", "Sampled=0")}, factory=never
        ),
        JobTracer(environ={}, factory=never),
        JobTracer(disabled=True, environ={trace_header.ENVIRONMENT_VARIABLE: INVOCATION}, factory=never),
    ):
        consumer.tracer = tracer
        publish(tier, "testjobs.ok", {"label": "x"}, f"k-{len(recorded)}")
        tier.run_batch(consumer)
    assert len(recorded) == 3  # every job ran; none was traced


@pytest.mark.parametrize(("value", "disabled"), [("true", True), ("1", True), ("false", False), (None, False)])
def test_tracing_follows_powertools_switch(value, disabled):
    environ = {trace_header.ENVIRONMENT_VARIABLE: INVOCATION}
    if value is not None:
        environ["POWERTOOLS_TRACE_DISABLED"] = value
    assert JobTracer.from_env(environ).sampled() is not disabled


# -- every message sent for the job carries the header on ---------------------------------------------


def test_a_held_copy_carries_the_publishers_trace(tier):
    sqs = Recording(tier.sqs)
    consumer = limited(tier, tier.consumer(registry=registry([])), FakeTime(), sqs=sqs)
    for i in range(2):
        publish(tier, LIMITED, {}, f"limited-{i}")
    tier.run_batch(consumer)
    assert headers(sent(sqs)) == [HEADER]  # one token: the other job is held, its copy linked


def test_a_deferred_copy_carries_the_publishers_trace(tier):
    sqs = Recording(tier.sqs)
    clock = {"context": LambdaClock(TIMEOUT_MS)}
    consumer = tier.consumer(
        registry=registry([], clock), margin_ms=MARGIN_MS, client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__
    )
    publish(tier, HOG, {}, "hog")
    publish(tier, FREE, {}, "later")
    messages = sorted(tier.receive_for_batch(), key=lambda m: HOG not in m["Body"])
    tier.run_messages(consumer, messages, clock["context"])
    (copy,) = sent(sqs)
    assert json.loads(copy["MessageBody"])["idempotency_key"] == "later" and headers([copy]) == [HEADER]


def test_a_newer_producers_held_copy_carries_the_publishers_trace(tier):
    sqs = Recording(tier.sqs)
    consumer = tier.consumer(client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__)
    publish(tier, "", {}, "", body=newer("from-v2", version=2))
    tier.run_batch(consumer)
    assert headers(sent(sqs)) == [HEADER]


def test_a_letter_keeps_the_publishers_trace_and_its_replay_sends_it_on(tier, tracer):
    consumer = traced(tier.consumer(), tracer)
    publish(tier, "testjobs.permanent", {}, "refused-1")
    tier.run_batch(consumer)
    (letter,) = tier.dlq_messages()
    assert letter["Attributes"][trace_header.ATTRIBUTE] == HEADER  # moto keeps SendMessage's system attribute
    sqs = Recording(tier.sqs)
    tiers = {"critical": TierQueues(tier.queue_url, tier.dlq_url, idempotency_ttl_seconds=86400 * 18)}
    tier.sqs.change_message_visibility(
        QueueUrl=tier.dlq_url, ReceiptHandle=letter["ReceiptHandle"], VisibilityTimeout=0
    )
    answer = run(parse_event({"tier": "critical"}, tiers=tiers), sqs=sqs, tiers=tiers, wait_seconds=0)
    assert answer["moved"] == 1
    assert headers(sent(sqs)) == [HEADER]
    assert tracer.segments[0].annotations["publisher_trace_id"] == ROOT


def test_a_cancel_sweeps_copy_keeps_the_publishers_trace(tier, monkeypatch):
    monkeypatch.setattr(bulk_cancel, "COPY_DELAY_SECONDS", 0)  # the copy at once, to read it here
    publish(tier, "testjobs.ok", {"label": "x"}, "swept-1")
    (message,) = tier.receive_for_batch()
    assert bulk_cancel._recopy(tier.sqs, tier.queue_url, message, None)
    (copy,) = tier.receive()
    assert copy["Attributes"][trace_header.ATTRIBUTE] == HEADER
