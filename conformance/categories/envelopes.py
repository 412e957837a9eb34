"""Envelopes as a consumer reads them: valid, invalid (each problem's code) or from a newer producer."""

from __future__ import annotations

import json
from typing import Any

from tiered_jobs.contract import envelope

from .. import codes
from ..case import PUBLISHED_AT, Case, case


def _parsed(body: str) -> dict[str, Any]:
    try:
        parsed = envelope.parse(body)
    except envelope.EnvelopeTooNew as exc:
        return {"error": "envelope_too_new", "problems": codes.job_problems(exc.problems)}
    except envelope.EnvelopeError as exc:
        problems = codes.job_problems(exc.problems)
        if problems and problems[0]["code"] in ("not_json", "body_too_large"):
            return {"error": problems[0]["code"]}
        return {"error": "envelope_invalid", "problems": problems}
    return {"valid": True, "envelope": parsed.to_dict()}


def envelopes() -> list[Case]:
    good = {"type": "conformance.envelope", "idempotency_key": "pay_123", "payload": {"account_id": "acc_1"}}
    bodies: list[tuple[str, str, Any]] = [
        ("minimal", "type, key and payload: version defaults to 1", good),
        (
            "full",
            "every optional field",
            {
                **good,
                "version": 1,
                "published_at": PUBLISHED_AT,
                "tenant": "acme",
                "unique_lock": "9f1c0a",
                "expires_at": "2026-12-07T11:00:00.000Z",
                "batch": {"id": "b-1", "step": 2},
            },
        ),
        (
            "offset-time",
            "a date-time with an offset instead of Z",
            {**good, "published_at": "2026-12-07T11:00:00+01:00"},
        ),
        ("not-an-object", "the body is a JSON array", [good]),
        ("missing-type", "type is required", {k: v for k, v in good.items() if k != "type"}),
        ("missing-all", "each required field is named", {"version": 1}),
        ("type-upper-case", "type is [a-z0-9_]+ separated by dots", {**good, "type": "Payments.Update"}),
        ("type-empty-segment", "no empty segment between dots", {**good, "type": "payments..update"}),
        ("type-129", "type is at most 128 characters", {**good, "type": "a" * 129}),
        ("type-128", "type of 128 characters", {**good, "type": "a" * 128}),
        ("type-number", "type must be a string", {**good, "type": 7}),
        ("key-empty", "the key is 1-256 characters", {**good, "idempotency_key": ""}),
        ("payload-array", "payload must be a JSON object", {**good, "payload": [1, 2]}),
        ("payload-null", "payload must be a JSON object", {**good, "payload": None}),
        ("version-0", "version below 1 is malformed, not newer", {**good, "version": 0}),
        ("version-true", "a boolean is not a version", {**good, "version": True}),
        ("version-2", "a higher version is a newer producer's: held, not dead-lettered", {**good, "version": 2}),
        ("unknown-field", "an unknown top-level field with every known one valid: newer", {**good, "priority": 5}),
        (
            "unknown-field-and-bad-type",
            "an unknown field beside a broken known one: malformed",
            {**good, "priority": 5, "type": "Bad"},
        ),
        ("published-at-no-zone", "a date-time needs a time zone", {**good, "published_at": "2026-12-07T10:00:00"}),
        ("expires-at-date-only", "expires_at is a date-time", {**good, "expires_at": "2026-12-07"}),
        ("tenant-space", "tenant as SQS's MessageGroupId: no space", {**good, "tenant": "acme corp"}),
        ("unique-lock-bad", "unique_lock is 1-64 letters, digits, - or _", {**good, "unique_lock": "a b"}),
        ("batch-step-negative", "a chain's step is 0 or more", {**good, "batch": {"id": "b-1", "step": -1}}),
        ("batch-unknown", "batch holds id and step only", {**good, "batch": {"id": "b-1", "size": 3}}),
    ]
    texts = [(name, text, json.dumps(body, ensure_ascii=False)) for name, text, body in bodies]
    found = [case(name, text, {"body": body}, _parsed(body)) for name, text, body in texts]
    found.append(case("not-json", "a body that is not JSON", {"body": "{type:"}, _parsed("{type:")))
    return found
