"""Preparing jobs (``tiered_jobs.publisher.prepare``), the one way a job becomes ready to send: valid jobs
of every kind are prepared, invalid ones refused with every problem named, and each job's envelope is
built once, with every field it carries."""

from __future__ import annotations

import json
import math
import re
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest

from tiered_jobs.contract import envelope, payloads
from tiered_jobs.contract.large_payloads import Offload
from tiered_jobs.contract.names import SQS_MAX_MESSAGE_BYTES
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.sqs_limits import (
    MAX_JOB_MESSAGE_BYTES,
    pack_batches,
)
from tiered_jobs.publisher import InvalidJobError, Job, Publisher
from tiered_jobs.publisher.client import _chunks
from tiered_jobs.publisher.models import Prepared
from tiered_jobs.publisher.prepare import prepare

SCHEMAS = Path(__file__).resolve().parents[1] / "support" / "jobs" / "schemas"
NOW = "2026-11-29T10:00:00.000Z"
TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
TRACEPARENT = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"


@pytest.fixture
def publisher(monkeypatch) -> Publisher:
    monkeypatch.setattr(envelope, "utc_now_iso", lambda: NOW)  # every envelope stamped at one moment
    monkeypatch.setattr(payloads, "_added_dirs", [])
    payloads.add_schema_dir(SCHEMAS)
    return Publisher(
        {"bulk": "https://sqs.example/bulk", "critical": "https://sqs.example/critical"},
        Routes({"analytics.*": "bulk", "testjobs.*": "critical", "orphan.*": "nowhere"}),
        sqs=object(),
        schedule_beyond_seconds=600,
        large_payloads={"bulk": Offload("bucket", 200_000)},
        trace_context=None,
    )


class _Key(str):
    pass


def _cyclic() -> dict:
    payload: dict = {"a": 1}
    payload["self"] = payload
    return payload


#: Jobs sent now or after an SQS delay.
VALID = [
    Job("analytics.record_event", {"event": "page_view"}, "k1"),
    Job("analytics.record_event", {}, "k" * 256),
    Job("analytics.record_event", {"name": "café ☕ 😀", "tab\tnewline\nreturn\r": 'quote" back\\slash'}, "k"),
    Job("analytics.record_event", {"nested": [{"a": [1, 2.5, None, True]}, ("tu", "ple")], "n": -(10**30)}, "k"),
    Job("analytics.record_event", {"path": "C:\\u0001\\\\b", "\\\\": "\\b"}, "k"),  # backslashes, not escapes
    Job("analytics.record_event", {"text": "\u007f\ud7ff\ue000\ufffd\U00010000\U0010ffff"}, "k"),
    Job("analytics.record_event", {"event": "x"}, "k", tenant="acme-1"),
    Job("analytics.record_event", {"event": "x"}, "k", tenant="!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    Job("analytics.record_event", OrderedDict(event="x", nested=OrderedDict(a=[1])), _Key("k")),
    Job("analytics.record_event", {"event": "x"}, "k", tier="critical"),
    Job("analytics.record_event", {"event": "x"}, "k", delay=0),
    Job("analytics.record_event", {"event": "x"}, "k", delay=600),
    Job("analytics.record_event", {"event": "x"}, "k", trace_header=TRACE),
    Job("analytics.record_event", {"event": "x"}, "k", trace_header=TRACEPARENT),
    Job("testjobs.effect", {"counter": "c", "amount": 5}, "k"),
    Job("analytics.record_event", {"blob": "x" * 300_000}, "k"),  # over bulk's threshold: stored in S3
    Job("analytics.record_event", {"blob": "é" * 150_000}, "k"),  # 300 000 bytes in 150 000 characters
]

#: Jobs with an option: a timedelta, a schedule, a deadline, a lock.
VALID_WITH_OPTIONS = [
    Job("analytics.record_event", {"event": "x"}, "k", delay=timedelta(seconds=5)),
    Job("analytics.record_event", {"event": "x"}, "k", delay=700),  # past schedule_beyond_seconds
    Job("analytics.record_event", {"event": "x"}, "k", expires_in=60),
    Job("analytics.record_event", {"event": "x"}, "k", unique_for=60),
    Job("testjobs.ok", {"label": "a"}, "k", tier="critical", at=datetime(2099, 1, 1, tzinfo=timezone.utc)),
]

#: Jobs refused, each for a problem of its own.
INVALID = [
    Job("Analytics.Bad", {}, "k"),
    Job("a" * 129, {}, "k"),
    Job(5, {}, "k"),  # type: ignore[arg-type]
    Job("analytics.record_event", {}, ""),
    Job("analytics.record_event", {}, "k" * 257),
    Job("analytics.record_event", {}, 7),  # type: ignore[arg-type]
    Job("analytics.record_event", ["not", "an", "object"], "k"),  # type: ignore[arg-type]
    Job("analytics.record_event", {"n": math.nan}, "k"),
    Job("analytics.record_event", {"n": [math.inf]}, "k"),
    Job("analytics.record_event", {1: "int key"}, "k"),
    Job("analytics.record_event", {"deep": [{"x": {None: 1}}]}, "k"),
    Job("analytics.record_event", {"d": Decimal("1.5")}, "k"),
    Job("analytics.record_event", {"when": datetime(2026, 1, 1)}, "k"),
    Job("analytics.record_event", _cyclic(), "k"),
    *[Job("analytics.record_event", {"s": f"a{c}b"}, "k") for c in "\x00\x08\x0b\x0c\x0e\x1f\ud800\udfff\ufffe\uffff"],
    Job("analytics.record_event", {"key\x01": "value"}, "k"),
    Job("analytics.record_event", {}, "k\x00"),
    Job("analytics.record_event", {}, "k", tenant="a b"),
    Job("analytics.record_event", {}, "k", tenant=""),
    Job("nobody.routes_this", {}, "k"),
    Job("orphan.job", {}, "k"),
    Job("analytics.record_event", {}, "k", tier="missing"),
    Job("analytics.record_event", {}, "k", trace_header="Root=garbage"),
    Job("analytics.record_event", {}, "k", delay=-1),
    Job("analytics.record_event", {}, "k", delay=True),  # type: ignore[arg-type]
    Job("analytics.record_event", {}, "k", delay=1.5),  # type: ignore[arg-type]
    Job("testjobs.effect", {"counter": "c", "amount": 0}, "k"),
    Job("testjobs.effect", {"counter": "c"}, "k"),
    Job("testjobs.slow", {"steps": 1, "step_ms": 0, "unknown": 1}, "k"),
    Job("testjobs.ok", {"label": "a b"}, "k"),
    Job("testjobs.ok", {"label": "x" * MAX_JOB_MESSAGE_BYTES}, "k"),  # over the limit, on a tier without S3
]


def _prepared(publisher: Publisher, job: Job) -> Prepared | list[str]:
    try:
        (item,) = prepare(publisher, [job])
    except InvalidJobError as exc:
        return exc.problems
    return item


@pytest.mark.parametrize("job", VALID + VALID_WITH_OPTIONS, ids=lambda job: job.describe()[:60])
def test_a_valid_job_is_prepared_with_its_envelope_as_its_body(publisher, job):
    item = _prepared(publisher, job)
    assert isinstance(item, Prepared)
    sent = envelope.parse(item.body, max_bytes=None)
    assert (sent.type, sent.payload, sent.tenant) == (job.job_type, json.loads(json.dumps(job.payload)), job.tenant)
    assert item.size == len(item.body.encode("utf-8"))
    assert (item.offload is not None) == (item.size > 200_000 and item.tier == "bulk")


@pytest.mark.parametrize("job", INVALID, ids=lambda job: repr(job.job_type)[:20] + job.describe()[-40:])
def test_an_invalid_job_is_refused_naming_its_problem(publisher, job):
    problems = _prepared(publisher, job)
    assert isinstance(problems, list) and problems
    assert all(problem.startswith(f"job {job.describe()}: ") for problem in problems)


def test_the_ambient_trace_is_every_jobs_unless_one_names_its_own(publisher):
    publisher = Publisher(publisher.queues, publisher.routes, sqs=object(), trace_context=lambda: TRACE)
    own = TRACEPARENT.replace("53995c3f42cd8ad8", "0000000000000001")  # the same trace, another parent
    plain, named = prepare(publisher, [VALID[0], Job("analytics.record_event", {}, "k", trace_header=own)])
    assert plain.trace_header == TRACE and named.trace_header == TRACE.replace("53995c3f42cd8ad8", "0000000000000001")


def test_each_jobs_envelope_is_built_once_with_its_batch_field_deadline_and_lock(publisher, monkeypatch):
    built: list[envelope.Envelope] = []
    build = envelope.build
    monkeypatch.setattr(envelope, "build", lambda *args, **kwargs: built.append(build(*args, **kwargs)) or built[-1])
    jobs = [
        Job("analytics.record_event", {"event": "x"}, "k1", expires_in=60, tenant="acme"),
        Job("analytics.record_event", {"event": "y"}, "k2", unique_for=60),
    ]
    items = prepare(publisher, jobs, batch=lambda step: {"id": "c1", "step": step})
    assert [item.body for item in items] == [one.to_json() for one in built]  # one envelope a job, sent as built
    first, second = (envelope.parse(item.body) for item in items)
    assert (first.batch, first.tenant, first.expires_at is not None) == ({"id": "c1", "step": 0}, "acme", True)
    assert (second.batch, second.unique_lock) == ({"id": "c1", "step": 1}, items[1].unique_token)


def test_a_batch_field_that_takes_a_message_over_the_limit_is_refused_as_any_message_over_it(publisher):
    job = Job("analytics.record_event", {"blob": "x" * (MAX_JOB_MESSAGE_BYTES - 150)}, "k", tier="critical")
    (alone,) = prepare(publisher, [job])  # the critical tier stores no body in S3
    assert alone.size <= MAX_JOB_MESSAGE_BYTES
    with pytest.raises(InvalidJobError, match="over the .*-byte limit"):
        prepare(publisher, [job], batch=lambda _: {"id": "b" * 64})


def test_a_batch_of_both_kinds_names_only_the_invalid_ones(publisher):
    with pytest.raises(InvalidJobError) as raised:
        prepare(publisher, [VALID[0], INVALID[0], VALID_WITH_OPTIONS[0], INVALID[7]])
    assert sorted({problem.split(":")[0] for problem in raised.value.problems}) == [
        "job #1 Analytics.Bad (key 'k')",
        "job #3 analytics.record_event (key 'k')",
    ]


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("\\u0001", False),  # a backslash, then "u0001": JSON writes "\\\\u0001"
        ("\\\\u0001", False),
        ("\\b", False),
        ("\\\x01", True),  # a backslash, then U+0001: "\\\\\\u0001"
        ("\\\\\x08", True),
        ("\\\x0c", True),
        ("\\\t\\\n\\\r", False),
    ],
)
def test_a_backslash_before_an_escape_is_told_from_an_escape(publisher, text, refused):
    """In JSON's text a backslash is written as two: a refused character's escape is one after an even run."""
    assert isinstance(_prepared(publisher, Job("analytics.record_event", {"s": text}, "k")), list) == refused
    assert bool(envelope.character_problems({"s": text})) == refused


def test_published_at_is_the_moment_in_the_envelopes_one_form():
    before = datetime.now(timezone.utc)
    text = envelope.utc_now_iso()
    after = datetime.now(timezone.utc)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert before - timedelta(milliseconds=1) <= moment <= after


@pytest.mark.parametrize(
    "sizes",
    [
        [],
        [100] * 23,
        [SQS_MAX_MESSAGE_BYTES // 10] * 12,  # ten fit exactly
        [SQS_MAX_MESSAGE_BYTES // 10 + 1] * 12,  # ten do not: the size decides
        [300_000, 10, 700_000, 500_000, 5, 5, 1_000_000, 20] * 3,
    ],
)
def test_one_tiers_chunks_are_the_greedy_packing(sizes):
    """A call to one tier whose jobs cannot fill a call's bytes is cut every ten: what the packing gives."""
    items = [SimpleNamespace(queue_url="q", size=size) for size in sizes]
    expected = [[item.size for item in chunk] for chunk in pack_batches(items, lambda item: item.size)]
    assert [[item.size for item in chunk] for chunk in _chunks(items)] == expected  # type: ignore[arg-type]
    mixed = [SimpleNamespace(queue_url=f"q{n % 2}", size=size) for n, size in enumerate(sizes)]
    by_queue = [[i for i in mixed if i.queue_url == q] for q in ("q0", "q1")]
    expected = [[i.size for i in chunk] for items in by_queue for chunk in pack_batches(items, lambda i: i.size)]
    assert [[item.size for item in chunk] for chunk in _chunks(mixed)] == expected  # type: ignore[arg-type]
