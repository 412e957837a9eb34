"""Envelope v1: the Python rules and the shipped JSON Schema agree, case by case."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from importlib import resources

import jsonschema
import pytest

from tiered_jobs.contract.envelope import EnvelopeError, build, parse, validate

SCHEMA = json.loads(resources.files("tiered_jobs.contract").joinpath("envelope.schema.json").read_text())

VALID = [
    {"type": "payments.update_balance", "idempotency_key": "pay_1", "payload": {"account_id": "a", "amount": 1}},
    {"type": "a", "idempotency_key": "k" * 256, "payload": {}, "version": 1},
    {"type": "x_1.y_2", "idempotency_key": "é", "payload": {}, "published_at": "2026-11-29T10:00:00Z"},
    {"type": "x", "idempotency_key": "k", "payload": {}, "published_at": "2026-11-29T10:00:00.123+02:00"},
    {"type": "x", "idempotency_key": "k", "payload": {}, "tenant": "acme"},
    {"type": "x", "idempotency_key": "k", "payload": {}, "tenant": "t" * 128},
    {"type": "x", "idempotency_key": "k", "payload": {}, "tenant": "A-z_0.9:!\"#$%&'()*+,/;<=>?@[\\]^`{|}~"},
    {"type": "x", "idempotency_key": "k", "payload": {}, "unique_lock": "0123456789abcdef0123456789abcdef"},
    {"type": "x", "idempotency_key": "k", "payload": {}, "unique_lock": "A-z_" + "9" * 60},
    {"type": "x", "idempotency_key": "k", "payload": {}, "expires_at": "2026-11-29T11:00:00Z"},
    {"type": "x", "idempotency_key": "k", "payload": {}, "expires_at": "2026-11-29T12:00:00.250+01:00"},
]
INVALID = [
    [],
    "string",
    None,
    {},
    {"idempotency_key": "k", "payload": {}},
    {"type": "x", "payload": {}},
    {"type": "x", "idempotency_key": "k"},
    {"type": "X", "idempotency_key": "k", "payload": {}},
    {"type": "x..y", "idempotency_key": "k", "payload": {}},
    {"type": "x.", "idempotency_key": "k", "payload": {}},
    {"type": "a" * 129, "idempotency_key": "k", "payload": {}},
    {"type": 1, "idempotency_key": "k", "payload": {}},
    {"type": "x", "idempotency_key": "", "payload": {}},
    {"type": "x", "idempotency_key": "k" * 257, "payload": {}},
    {"type": "x", "idempotency_key": 5, "payload": {}},
    {"type": "x", "idempotency_key": "k", "payload": []},
    {"type": "x", "idempotency_key": "k", "payload": None},
    {"type": "x", "idempotency_key": "k", "payload": {}, "version": 2},
    {"type": "x", "idempotency_key": "k", "payload": {}, "version": True},
    {"type": "x", "idempotency_key": "k", "payload": {}, "extra": 1},
    {"type": "x", "idempotency_key": "k", "payload": {}, "tenant": ""},
    {"type": "x", "idempotency_key": "k", "payload": {}, "tenant": "t" * 129},
    {"type": "x", "idempotency_key": "k", "payload": {}, "tenant": "acme corp"},
    {"type": "x", "idempotency_key": "k", "payload": {}, "tenant": "café"},
    {"type": "x", "idempotency_key": "k", "payload": {}, "tenant": 7},
    {"type": "x", "idempotency_key": "k", "payload": {}, "unique_lock": ""},
    {"type": "x", "idempotency_key": "k", "payload": {}, "unique_lock": "u" * 65},
    {"type": "x", "idempotency_key": "k", "payload": {}, "unique_lock": "a b"},
    {"type": "x", "idempotency_key": "k", "payload": {}, "unique_lock": 12},
    {"type": "x", "idempotency_key": "k", "payload": {}, "expires_at": 1764414000},
]


@pytest.mark.parametrize("obj", VALID)
def test_valid_envelopes_pass_both(obj):
    assert validate(obj) == []
    jsonschema.validate(obj, SCHEMA)


@pytest.mark.parametrize("obj", INVALID, ids=lambda o: json.dumps(o)[:40])
def test_invalid_envelopes_fail_both(obj):
    assert validate(obj), "the Python rules accepted it"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, SCHEMA)


def test_published_at_must_carry_a_time_zone():
    # JSON Schema's "format" is advisory; the Python rules enforce it.
    assert validate({"type": "x", "idempotency_key": "k", "payload": {}, "published_at": "2026-11-29T10:00:00"})
    assert validate({"type": "x", "idempotency_key": "k", "payload": {}, "published_at": "yesterday"})


def test_expires_at_must_carry_a_time_zone_and_says_when_it_has_passed():
    for text in ("2026-11-29T11:00:00", "tomorrow"):
        assert validate({"type": "x", "idempotency_key": "k", "payload": {}, "expires_at": text})
    job = parse('{"type": "x", "idempotency_key": "k", "payload": {}, "expires_at": "2026-11-29T11:00:00+01:00"}')
    assert job.deadline() == datetime(2026, 11, 29, 10, tzinfo=timezone.utc)
    assert not job.expired(datetime(2026, 11, 29, 9, 59, 59, tzinfo=timezone.utc))
    assert job.expired(datetime(2026, 11, 29, 10, tzinfo=timezone.utc))
    never = parse('{"type": "x", "idempotency_key": "k", "payload": {}}')
    assert never.deadline() is None and not never.expired(datetime(2999, 1, 1, tzinfo=timezone.utc))


def test_every_problem_is_listed_at_once():
    with pytest.raises(EnvelopeError) as err:
        parse('{"type": 1, "payload": []}')
    assert err.value.problems == [
        "missing required field 'idempotency_key'",
        "'type' must be a string, got a number",
        "'payload' must be a JSON object, got an array",
    ]


def test_build_round_trips_and_rejects_before_sending():
    envelope = build("demo.flaky", {"fail_times": 0}, "k-1", published_at="2026-11-29T10:00:00Z")
    assert parse(envelope.to_json()) == envelope
    due = build("demo.flaky", {}, "k-2", published_at="2026-11-29T10:00:00Z", expires_at="2026-11-29T11:00:00Z")
    assert parse(due.to_json()) == due and json.loads(due.to_json())["expires_at"] == "2026-11-29T11:00:00Z"
    with pytest.raises(EnvelopeError, match="'idempotency_key' must be 1-256 characters"):
        build("demo.flaky", {}, "")


def test_every_field_is_parsed_and_built_under_its_own_name():
    """Each field distinct from the others: a field given to another's place in the constructor shows."""
    body = {
        "type": "t.x",
        "idempotency_key": "the-key",
        "payload": {"a": [1]},
        "version": 1,
        "published_at": "2026-01-01T00:00:00Z",
        "tenant": "acme",
        "unique_lock": "0123456789abcdef0123456789abcdef",
        "expires_at": "2026-01-02T00:00:00Z",
        "batch": {"id": "b1", "step": 2},
    }
    parsed = parse(json.dumps(body))
    assert {name: getattr(parsed, name) for name in body} == body
    built = build(
        "t.x",
        {"a": [1]},
        "the-key",
        published_at=body["published_at"],
        tenant="acme",
        unique_lock=body["unique_lock"],
        expires_at=body["expires_at"],
        batch={"id": "b1", "step": 2},
    )
    assert built == parsed and json.loads(built.to_json()) == body
    with pytest.raises(EnvelopeError, match="batch"):
        build("t.x", {}, "k", batch={"step": 1})
