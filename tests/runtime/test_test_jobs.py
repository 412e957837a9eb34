"""The library's own test jobs (``tests/support/jobs``) are what the library's tests take them for: a
job package registered as the consumer registers one, every type with a payload schema within the
supported subset, and each job doing what its tests count on."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.support import jobs
from tests.support.jobs import effect
from tests.support.tier import COUNTERS_RESOURCE
from tiered_jobs.contract import payloads
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime.registry import registry

ROOT = Path(__file__).resolve().parents[2]
#: Payloads each test job's schema accepts, and ones it refuses.
VALID = {
    "testjobs.ok": [
        {"label": "a"},
        {"label": "a:b-c.d_e", "note": "", "data": {"n": 1}, "priority": "high", "blob": "x"},
    ],
    "testjobs.transient": [{"fail_times": 0}, {"fail_times": 3, "memo": "m"}],
    "testjobs.permanent": [{}, {"reason": "r" * 200}],
    "testjobs.slow": [{"steps": 1, "step_ms": 0}, {"steps": 1000, "step_ms": 10_000}],
    "testjobs.effect": [
        {"counter": "c-1", "amount": -5},
        {"counter": "c", "amount": 10**12},
        {"counter": "c", "amount": 7.0},
    ],
}
INVALID = {
    "testjobs.ok": [
        {},
        {"label": ""},
        {"label": "a b"},
        {"label": "x" * 65},
        {"label": "a", "note": 5},
        {"label": "a", "data": []},
        {"label": "a", "priority": "urgent"},
        {"label": "a", "priority": 1},
    ],
    "testjobs.transient": [{}, {"fail_times": -1}, {"fail_times": "1"}, {"fail_times": 1.5}, {"fail_times": False}],
    "testjobs.permanent": [{"reason": 5}, {"reason": "r" * 201}, []],
    "testjobs.slow": [
        {"steps": 0, "step_ms": 0},
        {"steps": 1},
        {"steps": 1, "step_ms": 10_001},
        {"steps": 1, "step_ms": 0, "extra": 1},
    ],
    "testjobs.effect": [
        {"counter": "c"},
        {"counter": "c", "amount": 0},
        {"counter": "c", "amount": 10**12 + 1},
        {"counter": "c", "amount": -(10**12) - 1},
        {"counter": "c", "amount": "1"},
        {"counter": "c c", "amount": 1},
        {"counter": "", "amount": 1},
        {"amount": 1},
    ],
}


def test_every_test_job_is_registered_with_its_schema_and_none_collides_with_the_example():
    folder = (Path(jobs.__file__).parent / "schemas").resolve()
    declared = sorted(path.name.removesuffix(payloads.SCHEMA_SUFFIX) for path in folder.glob("*.schema.json"))
    assert [t for t in registry.types() if t.startswith("testjobs.")] == declared == sorted(VALID) == sorted(INVALID)
    assert all(payloads.schema_path(job_type).parent == folder for job_type in declared)
    example = {
        path.name.removesuffix(payloads.SCHEMA_SUFFIX)
        for path in (ROOT / "functions" / "jobs" / "schemas").glob("*.schema.json")
    }
    assert example and not example & set(declared)


@pytest.mark.parametrize("job_type", sorted(VALID))
def test_each_schema_is_valid_draft_2020_12_and_our_validator_agrees_with_jsonschema(job_type):
    document = json.loads(payloads.schema_path(job_type).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(document)
    assert payloads.schema(job_type) == document  # loads: every keyword is in the supported subset
    checker = jsonschema.Draft202012Validator(document)
    for payload in VALID[job_type]:
        assert payloads.problems(job_type, payload) == [] and checker.is_valid(payload), payload
    for payload in INVALID[job_type]:
        assert payloads.problems(job_type, payload) and not checker.is_valid(payload), payload


def test_the_tier_gives_the_effect_job_its_table_under_the_jobs_own_name():
    assert COUNTERS_RESOURCE == effect.TABLE


def test_ok_records_each_run(tier, recorded):
    tier.publish("testjobs.ok", {"label": "one", "data": {"n": 1}}, "ok-1")
    tier.publish("testjobs.ok", {"label": "two"}, "ok-2")
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert sorted(recorded) == [("ok-1", {"label": "one", "data": {"n": 1}}), ("ok-2", {"label": "two"})]


def test_effect_adds_once_per_key_even_when_its_idempotency_record_is_gone(tier):
    tier.publish("testjobs.effect", {"counter": "c", "amount": 5}, "e-1")
    tier.publish("testjobs.effect", {"counter": "c", "amount": -2}, "e-2")
    tier.run_batch(tier.consumer())
    assert tier.counter("c") == 3
    for item in tier.dynamodb.scan(TableName=tier.idempotency_table)["Items"]:  # the records vanish
        tier.dynamodb.delete_item(TableName=tier.idempotency_table, Key={"id": item["id"]})
    tier.publish("testjobs.effect", {"counter": "c", "amount": 5}, "e-1")
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert tier.counter("c") == 3 and tier.counter("other") == 0
    assert tier.dlq_messages() == []


def test_permanent_is_dead_lettered_at_once_with_its_reason(tier):
    tier.publish("testjobs.permanent", {"reason": "no such thing"}, "p-1")
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    (letter,) = tier.dlq_messages()
    reasons = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert (reasons[DeadLetter.REASON], reasons[DeadLetter.ERROR_TYPE]) == (
        DeadLetter.REASON_PERMANENT,
        "PermanentError",
    )
    assert reasons[DeadLetter.ERROR_MESSAGE] == "testjobs.permanent: no such thing (attempt 1)"


def test_transient_fails_its_first_attempts_then_succeeds(tier):
    message_id = tier.publish("testjobs.transient", {"fail_times": 2}, "t-1")
    consumer = tier.consumer()
    for _ in range(2):
        assert tier.run_batch(consumer) == {"batchItemFailures": [{"itemIdentifier": message_id}]}
        tier.make_visible()
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    assert tier.receive() == [] and tier.dlq_messages() == []


def test_slow_finishes_within_its_time_and_stops_between_steps_when_out_of_time(tier, lambda_context):
    """On the real clock: 3 steps of 50 ms fit in 2 s; with 200 ms left (the margin is 100 ms), the
    job's ``ctx.check_time()`` stops it before its third step, a transient ``JobTimeout``: retried."""
    consumer = tier.consumer(margin_ms=100, max_attempts=5)
    tier.publish("testjobs.slow", {"steps": 3, "step_ms": 50}, "fits")
    assert tier.run_batch(consumer, context=lambda_context(remaining_ms=2_000)) == {"batchItemFailures": []}
    late = tier.publish("testjobs.slow", {"steps": 10, "step_ms": 60}, "late")
    assert tier.run_batch(consumer, context=lambda_context(remaining_ms=200)) == {
        "batchItemFailures": [{"itemIdentifier": late}]
    }
    assert tier.dlq_messages() == []
