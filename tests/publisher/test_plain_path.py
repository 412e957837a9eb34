"""The publisher's one-pass path for the common job (``tiered_jobs.publisher.plain``) accepts only what the
full check accepts, and prepares it the same: job by job over valid and invalid jobs of every kind, and
character by character over SQS's allowed set."""

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
    ALLOWED_CHARACTER_RANGES,
    MAX_JOB_MESSAGE_BYTES,
    first_disallowed_character,
    pack_batches,
)
from tiered_jobs.publisher import InvalidJobError, Job, Publisher, PublishResult, bodies
from tiered_jobs.publisher.bodies import Bodies
from tiered_jobs.publisher.client import _chunks
from tiered_jobs.publisher.models import Prepared, sent_result, string_keys, unserialisable
from tiered_jobs.publisher.plain import PlainJobs

SCHEMAS = Path(__file__).resolve().parents[1] / "support" / "jobs" / "schemas"
NOW = "2026-11-29T10:00:00.000Z"
TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
TRACEPARENT = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"


@pytest.fixture
def publisher(monkeypatch) -> Publisher:
    monkeypatch.setattr(envelope, "utc_now_iso", lambda: NOW)  # both paths stamp the same moment
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


#: Jobs the full check accepts, that the one-pass path takes too.
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

#: Jobs the full check accepts that go the full way: an option the one-pass path does not take.
VALID_THE_FULL_WAY = [
    Job("analytics.record_event", {"event": "x"}, "k", delay=timedelta(seconds=5)),
    Job("analytics.record_event", {"event": "x"}, "k", delay=700),  # past schedule_beyond_seconds
    Job("analytics.record_event", {"event": "x"}, "k", expires_in=60),
    Job("analytics.record_event", {"event": "x"}, "k", unique_for=60),
    Job("testjobs.ok", {"label": "a"}, "k", tier="critical", at=datetime(2099, 1, 1, tzinfo=timezone.utc)),
]

#: Jobs the full check refuses: the one-pass path must leave every one to it.
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


def _full(publisher: Publisher, job: Job) -> Prepared | list[str]:
    try:
        return publisher._prepare(0, job)
    except InvalidJobError as exc:
        return exc.problems


@pytest.mark.parametrize("job", VALID, ids=lambda job: job.describe()[:60])
def test_a_common_valid_job_is_prepared_as_the_full_check_prepares_it(publisher, job):
    plain = PlainJobs(publisher, None).prepare(0, job)
    assert plain is not None
    assert plain == _full(publisher, job)


@pytest.mark.parametrize("job", VALID_THE_FULL_WAY, ids=lambda job: job.describe()[:60])
def test_other_valid_jobs_go_the_full_way(publisher, job):
    assert PlainJobs(publisher, None).prepare(0, job) is None
    assert isinstance(_full(publisher, job), Prepared)


@pytest.mark.parametrize("job", INVALID, ids=lambda job: repr(job.job_type)[:20] + job.describe()[-40:])
def test_an_invalid_job_is_left_to_the_full_check_which_names_the_problem(publisher, job):
    assert PlainJobs(publisher, None).prepare(0, job) is None
    assert isinstance(_full(publisher, job), list)


def test_the_ambient_trace_and_the_route_are_the_full_checks(publisher):
    job = Job("analytics.record_event", {"event": "x"}, "k")
    plain = PlainJobs(publisher, TRACE).prepare(3, job)
    assert plain == publisher._prepare(3, job, TRACE) and plain is not None and plain.trace_header == TRACE
    publisher.routes = Routes({"analytics.*": "critical"})  # a new table: no tier remembered from the old one
    assert PlainJobs(publisher, None).prepare(0, job).tier == "critical"  # type: ignore[union-attr]


def test_a_batch_of_both_kinds_names_only_the_invalid_ones(publisher):
    with pytest.raises(InvalidJobError) as raised:
        publisher._prepare_all([VALID[0], INVALID[0], VALID_THE_FULL_WAY[0], INVALID[7]])
    assert sorted({problem.split(":")[0] for problem in raised.value.problems}) == [
        "job #1 Analytics.Bad (key 'k')",
        "job #3 analytics.record_event (key 'k')",
    ]


def _allowed(code: int) -> bool:
    return any(low <= code <= high for low, high in ALLOWED_CHARACTER_RANGES)


def test_the_body_holds_a_refused_character_exactly_when_its_strings_do():
    """Every code point of the Basic Multilingual Plane and the edges of the others, as a value and as a key:
    the one-pass path refuses exactly the characters SQS's documented set leaves out."""
    codes = [*range(0x10000), 0x10000, 0x1F600, 0x10FFFF]
    allowed = [chr(code) for code in codes if _allowed(code)]
    refused = [chr(code) for code in codes if not _allowed(code)]
    assert all(first_disallowed_character(text) is None for text in allowed)
    assert all(first_disallowed_character(text) is not None for text in refused)
    # Every allowed character, each before a "b" (JSON's escape of U+0008 is "\\b"), in one value and as keys.
    assert Bodies().body("a.b", {"s": "b".join(allowed) + "b"}, "k") is not None
    assert Bodies().body("a.b", dict.fromkeys(allowed, 1), "k") is not None
    bodies = Bodies()
    for text in refused:
        for payload in ({"s": f"a{text}b"}, {text: 1}):
            assert bodies.body("a.b", payload, "k") is None, hex(ord(text))


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
def test_a_backslash_before_an_escape_is_told_from_an_escape(text, refused):
    """In JSON's text a backslash is written as two: a refused character's escape is one after an even run."""
    assert (Bodies().body("a.b", {"s": text}, "k") is None) == refused
    assert bool(envelope.character_problems({"s": text})) == refused


def test_the_body_is_the_envelopes_json(monkeypatch):
    monkeypatch.setattr(envelope, "utc_now_iso", lambda: NOW)
    payload = {"name": "café 😀", "list": [1, 2.5, None, True, "\t"]}
    expected = envelope.build("a.b", payload, "k", tenant="acme").to_json()
    assert Bodies().body("a.b", payload, "k", tenant="acme") == expected
    assert Bodies().body("a.b", payload, "k") == envelope.build("a.b", payload, "k").to_json()


def test_published_at_is_the_moment_in_the_envelopes_one_form():
    before = datetime.now(timezone.utc)
    text = envelope.utc_now_iso()
    after = datetime.now(timezone.utc)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert before - timedelta(milliseconds=1) <= moment <= after


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"a": [1, {"b": (2, {"c": None})}]},
        {"a": {1: "x"}},
        {"a": [{"b": {True: 1}}]},
        [{"x": 1}, ({None: 2},)],
        {"s": "x", "n": 1.5},
    ],
)
def test_string_keys_agrees_with_unserialisable_on_what_json_writes(value):
    assert string_keys(value) == (unserialisable(value) is None)


def test_a_sent_result_is_the_dataclass_its_constructor_makes(publisher):
    item = publisher._prepare(2, VALID[0])
    made = sent_result(item, 3, "m-1")
    expected = PublishResult(item.job, item.tier, item.queue_url, message_id="m-1", attempts=3)
    assert made == expected and vars(made) == vars(expected)
    assert repr(made) == repr(expected) and made.ok
    with pytest.raises(AttributeError):
        made.message_id = "changed"  # type: ignore[misc]


def test_the_body_is_written_the_same_without_pythons_c_encoder(monkeypatch):
    obj = {"type": "a.b", "payload": {"name": "café 😀", "n": [1, 2.5, None, True, (3,)], "s": "\t\\\x01"}}
    with_c = "".join(bodies._strict_writer()(obj, 0))
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    without = bodies._strict_writer()
    assert "".join(without(obj, 0)) == with_c == json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    for refused in ({"n": math.nan}, {"d": Decimal(1)}):
        with pytest.raises((ValueError, TypeError)):
            "".join(without(refused, 0))


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
