"""Publishing on moto: routing, the message on the queue, batching, retries, and every refusal."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest

from tests.support.stack import FlakySqs, received_bodies
from tiered_jobs.contract import envelope
from tiered_jobs.contract.names import SQS_MAX_MESSAGE_BYTES
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES, RUNTIME_ATTRIBUTES_HEADROOM_BYTES
from tiered_jobs.publisher import (
    InvalidJobError,
    Job,
    Publisher,
    PublishError,
    ResendPolicy,
)
from tiered_jobs.publisher.models import JOB_FIELDS

SCHEMA = json.loads((Path(envelope.__file__).parent / "envelope.schema.json").read_text())


def _depth(sqs, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesDelayed"])


def _nothing_sent(sqs, deployment) -> bool:
    return all(_depth(sqs, url) == 0 for url in deployment.queue_urls.values())


# -- routing and the message itself -----------------------------------------------------------


def test_publish_routes_by_the_table_and_sends_a_valid_envelope(publisher, deployment):
    result = publisher.publish("testjobs.effect", {"counter": "acc_1", "amount": 500}, "pay_1")

    assert result.ok and result.tier == "critical" and result.attempts == 1
    assert result.queue_url == deployment.queue_urls["critical"]
    [body] = received_bodies(deployment.queue_urls["critical"])
    jsonschema.validate(body, SCHEMA)  # what non-Python publishers are held to
    parsed = envelope.parse(json.dumps(body))  # what the consumer accepts
    assert (parsed.type, parsed.idempotency_key, parsed.payload) == (
        "testjobs.effect",
        "pay_1",
        {"counter": "acc_1", "amount": 500},
    )
    assert parsed.published_at is not None


def test_an_exact_route_beats_a_glob(deployment, sqs):
    routes = Routes({"payments.*": "critical", "payments.monthly_report": "bulk"})
    publisher = Publisher(deployment.queue_urls, routes, sqs=sqs)

    assert publisher.publish("payments.monthly_report", {}, "r1").tier == "bulk"
    assert publisher.publish("payments.capture", {}, "c1").tier == "critical"
    assert [b["idempotency_key"] for b in received_bodies(deployment.queue_urls["bulk"])] == ["r1"]
    assert [b["idempotency_key"] for b in received_bodies(deployment.queue_urls["critical"])] == ["c1"]


def test_an_explicit_tier_overrides_the_route(publisher, deployment):
    result = publisher.publish("payments.capture", {"id": 1}, "k1", tier="bulk")

    assert result.tier == "bulk"
    assert [b["type"] for b in received_bodies(deployment.queue_urls["bulk"])] == ["payments.capture"]
    assert received_bodies(deployment.queue_urls["critical"]) == []


def test_an_unknown_job_type_is_refused_naming_the_routes(publisher, sqs, deployment):
    with pytest.raises(InvalidJobError) as caught:
        publisher.publish("billing.invoice", {}, "k1")

    assert "no route for job type 'billing.invoice'" in str(caught.value)
    assert "payments.*" in str(caught.value) and "analytics.*" in str(caught.value)
    assert _nothing_sent(sqs, deployment)


def test_an_unknown_explicit_tier_lists_the_known_ones(publisher):
    with pytest.raises(InvalidJobError, match=r"unknown tier 'urgent'; known tiers: bulk, critical, transactional"):
        publisher.publish("payments.capture", {}, "k1", tier="urgent")


def test_a_route_to_a_tier_without_a_queue_is_refused(deployment, sqs):
    publisher = Publisher({"critical": deployment.queue_urls["critical"]}, Routes({"analytics.*": "bulk"}), sqs=sqs)

    with pytest.raises(InvalidJobError, match=r"unknown tier 'bulk'; known tiers: critical \(routed by the table\)"):
        publisher.publish("analytics.page_view", {}, "k1")


def test_a_delay_is_passed_to_sqs(publisher, sqs, deployment):
    sent: dict[str, int] = {}  # each job's DelaySeconds as SQS is asked: no wait on SQS's clock, however slow the run

    def record(params, **_):
        for entry in params.get("Entries", [params]):
            sent[json.loads(entry["MessageBody"])["idempotency_key"]] = entry.get("DelaySeconds", 0)

    sqs.meta.events.register("before-parameter-build.sqs.SendMessage", record)
    sqs.meta.events.register("before-parameter-build.sqs.SendMessageBatch", record)
    publisher.publish("analytics.page_view", {}, "k1", delay=120)
    publisher.publish("analytics.page_view", {}, "k2", delay=timedelta(seconds=1.5))  # rounded up, never early

    assert sent == {"k1": 120, "k2": 2}
    visible = [body["idempotency_key"] for body in received_bodies(deployment.queue_urls["bulk"])]
    assert "k1" not in visible  # its 120 s are not over on any machine (k2's 2 s may be)


@pytest.mark.parametrize(
    ("delay", "message"),
    [
        (-1, "delay must be 0 seconds or more, got -1"),
        (1.5, "delay must be whole seconds (int) or a timedelta, got float"),
        (True, "delay must be whole seconds (int) or a timedelta, got bool"),
    ],
)
def test_a_bad_delay_is_refused(publisher, delay, message):
    with pytest.raises(InvalidJobError) as caught:
        publisher.publish("payments.capture", {}, "k1", delay=delay)
    assert message in str(caught.value)


# -- refused before sending --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job_type", "payload", "key", "message"),
    [
        ("payments.capture", {}, "", "'idempotency_key' must be 1-256 characters, got 0"),
        ("payments.capture", {}, "k" * 257, "'idempotency_key' must be 1-256 characters, got 257"),
        ("payments.capture", {}, 42, "'idempotency_key' must be a string, got a number"),
        ("Payments.Capture", {}, "k1", "'type' must match"),
        ("payments.capture", ["not", "an", "object"], "k1", "'payload' must be a JSON object, got an array"),
        (
            "payments.capture",
            {"when": datetime(2026, 1, 1)},
            "k1",
            "payload['when'] is a datetime, which is not JSON-serialisable",
        ),
        (
            "payments.capture",
            {"lines": [{"amount": Decimal("1.10")}]},
            "k1",
            "payload['lines'][0]['amount'] is a Decimal, which is not JSON-serialisable",
        ),
        ("payments.capture", {"ratio": float("nan")}, "k1", "payload['ratio'] is nan, which JSON cannot represent"),
        ("payments.capture", {1: "one"}, "k1", "payload has the key 1 (int); JSON object keys must be strings"),
    ],
)
def test_invalid_jobs_are_refused_with_a_clear_message(publisher, sqs, deployment, job_type, payload, key, message):
    with pytest.raises(InvalidJobError) as caught:
        publisher.publish(job_type, payload, key)

    assert message in str(caught.value)
    assert str(caught.value).startswith("nothing was published: job ")
    assert _nothing_sent(sqs, deployment)


def test_a_circular_payload_is_refused(publisher):
    payload: dict = {"id": 1}
    payload["self"] = payload
    with pytest.raises(InvalidJobError, match=r"payload\['self'\] contains itself"):
        publisher.publish("payments.capture", payload, "k1")


def test_a_message_over_one_mib_says_pass_ids_not_objects(publisher, sqs, deployment):
    with pytest.raises(InvalidJobError) as caught:
        publisher.publish("analytics.export", {"rows": "x" * SQS_MAX_MESSAGE_BYTES}, "export-1")

    assert (
        f"over the {MAX_JOB_MESSAGE_BYTES}-byte limit (SQS's {SQS_MAX_MESSAGE_BYTES} less "
        f"{RUNTIME_ATTRIBUTES_HEADROOM_BYTES} for the runtime's own attributes); pass IDs, not objects"
    ) in str(caught.value)
    assert "analytics.export (key 'export-1')" in str(caught.value)
    assert _nothing_sent(sqs, deployment)


def test_one_bad_job_in_a_batch_sends_nothing_and_every_bad_job_is_named(publisher, sqs, deployment):
    jobs = [
        Job("payments.capture", {"id": 1}, "good-1"),
        Job("payments.capture", {"id": 2}, ""),
        {"job_type": "nowhere.to_go", "payload": {}, "idempotency_key": "k3"},
        {"job_type": "payments.capture", "payload": {}, "key": "k4"},
    ]
    with pytest.raises(InvalidJobError) as caught:
        publisher.publish_batch(jobs)

    problems = caught.value.problems
    assert len(problems) == 3
    assert problems[0].startswith("job #1 payments.capture (key ''): 'idempotency_key' must be 1-256")
    assert problems[1].startswith("job #2 nowhere.to_go (key 'k3'): no route for job type")
    assert problems[2] == (
        f"job #3 has unknown key(s) 'key'; lacks key(s) 'idempotency_key' (keys: {', '.join(JOB_FIELDS)})"
    )
    assert JOB_FIELDS[:7] == ("job_type", "payload", "idempotency_key", "tier", "delay", "at", "tenant")
    assert _nothing_sent(sqs, deployment)


# -- batching ----------------------------------------------------------------------------------


def test_25_jobs_go_in_3_send_message_batch_calls(publisher, deployment, batch_calls):
    jobs = [Job("analytics.page_view", {"n": n}, f"view-{n}") for n in range(25)]

    results = publisher.publish_batch(jobs)

    assert [len(keys) for _, keys in batch_calls] == [10, 10, 5]
    assert {url for url, _ in batch_calls} == {deployment.queue_urls["bulk"]}
    assert [r.job.idempotency_key for r in results] == [f"view-{n}" for n in range(25)]  # input order
    assert all(r.ok and r.message_id for r in results)
    assert sorted(b["payload"]["n"] for b in received_bodies(deployment.queue_urls["bulk"])) == list(range(25))


def test_a_batch_is_split_per_tier(publisher, deployment, batch_calls):
    jobs = [
        Job("payments.capture", {}, "p1"),
        Job("analytics.page_view", {}, "a1"),
        Job("payments.refund", {}, "p2"),
        Job("demo.hello", {}, "d1"),
    ]

    results = publisher.publish_batch(jobs)

    assert batch_calls == [
        (deployment.queue_urls["critical"], ["p1", "p2"]),
        (deployment.queue_urls["bulk"], ["a1"]),
        (deployment.queue_urls["transactional"], ["d1"]),
    ]
    assert [r.tier for r in results] == ["critical", "bulk", "critical", "transactional"]


def test_a_batch_is_split_by_the_1_mib_limit(publisher, deployment, batch_calls):
    # moto 5.2.5 enforces SQS's current limits (1 MiB per message and per batch; older moto
    # versions used 256 KiB), so three 400 KB messages must go as 2 + 1: 1.2 MB in one call
    # would be refused with BatchRequestTooLong.
    jobs = [Job("analytics.export", {"blob": "x" * 400_000}, f"export-{n}") for n in range(3)]

    results = publisher.publish_batch(jobs)

    assert [keys for _, keys in batch_calls] == [["export-0", "export-1"], ["export-2"]]
    assert all(r.ok for r in results)
    assert len(received_bodies(deployment.queue_urls["bulk"])) == 3


# -- failures SQS reports ----------------------------------------------------------------------


def test_failed_entries_are_retried_with_backoff_until_they_succeed(deployment, sqs, waits):
    flaky = FlakySqs(sqs, {"k2": 2, "k4": 1})
    publisher = Publisher(
        deployment.queue_urls, Routes(deployment.routes), sqs=flaky, sleep=waits.append, random=lambda: 0.5
    )

    results = publisher.publish_batch([Job("payments.capture", {"n": n}, f"k{n}") for n in range(1, 6)])

    assert flaky.calls == [["k1", "k2", "k3", "k4", "k5"], ["k2", "k4"], ["k2"]]  # only the failed ones again
    assert waits == [0.05, 0.1]  # full jitter: 0.5 x 0.1 s, then 0.5 x 0.2 s
    assert [r.attempts for r in results] == [1, 3, 1, 2, 1]
    assert all(r.ok for r in results)
    assert sorted(b["idempotency_key"] for b in received_bodies(deployment.queue_urls["critical"])) == [
        "k1",
        "k2",
        "k3",
        "k4",
        "k5",
    ]


def test_entries_that_keep_failing_raise_a_publish_error_naming_them(deployment, sqs, waits):
    flaky = FlakySqs(sqs, {"k2": 99}, code="KmsThrottled")
    publisher = Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=flaky,
        sleep=waits.append,
        random=lambda: 1.0,
        resend=ResendPolicy(max_attempts=3, base_seconds=1, max_seconds=1.5),
    )

    with pytest.raises(PublishError) as caught:
        publisher.publish_batch([Job("payments.capture", {}, f"k{n}") for n in range(1, 4)])

    error = caught.value
    assert str(error) == (
        "1 of 3 job(s) not published: payments.capture (key 'k2') -> critical: "
        "KmsThrottled: injected KmsThrottled (after 3 attempts)"
    )
    assert waits == [1.0, 1.5]  # capped by max_seconds
    assert [r.ok for r in error.results] == [True, False, True]
    assert [r.job.idempotency_key for r in error.failed] == ["k2"]
    # the others were published and stay published
    assert sorted(b["idempotency_key"] for b in received_bodies(deployment.queue_urls["critical"])) == ["k1", "k3"]


def test_sender_faults_are_not_retried(deployment, sqs, waits):
    flaky = FlakySqs(sqs, {"k1": 1}, code="InvalidMessageContents", sender_fault=True)
    publisher = Publisher(deployment.queue_urls, Routes(deployment.routes), sqs=flaky, sleep=waits.append)

    with pytest.raises(PublishError) as caught:
        publisher.publish("payments.capture", {}, "k1")

    [failed] = caught.value.failed
    assert (failed.error_code, failed.sender_fault, failed.attempts) == ("InvalidMessageContents", True, 1)
    assert flaky.calls == [["k1"]] and waits == []


def test_a_rejected_call_fails_its_chunk_and_the_other_chunks_still_go(deployment, sqs):
    queues = dict(deployment.queue_urls, bulk=deployment.queue_urls["bulk"] + "-deleted")
    publisher = Publisher(queues, Routes(deployment.routes), sqs=sqs)

    with pytest.raises(PublishError) as caught:
        publisher.publish_batch([Job("analytics.page_view", {}, "a1"), Job("payments.capture", {}, "p1")])

    bulk, critical = caught.value.results
    assert not bulk.ok and "NonExistentQueue" in bulk.error_code
    assert critical.ok
    assert caught.value.__cause__ is not None  # the client error, for callers who need it
    assert [b["idempotency_key"] for b in received_bodies(deployment.queue_urls["critical"])] == ["p1"]


def test_an_entry_sqs_does_not_report_is_a_failure_not_a_success(deployment):
    class Silent:
        def send_message_batch(self, QueueUrl, Entries):
            return {"Successful": [], "Failed": []}

    publisher = Publisher(deployment.queue_urls, Routes(deployment.routes), sqs=Silent())

    with pytest.raises(PublishError, match="Unreported: SQS did not report this entry"):
        publisher.publish("payments.capture", {}, "k1")


def test_retry_policy_is_validated():
    with pytest.raises(ValueError, match="max_attempts must be at least 1, got 0"):
        ResendPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="need 0 <= base_seconds <= max_seconds"):
        ResendPolicy(base_seconds=3, max_seconds=1)
