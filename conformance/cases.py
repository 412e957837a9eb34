"""Every vector category: its inputs, chosen here, and its expected outputs, computed by ``tiered_jobs.contract``.

Each case is ``{"name", "description", "input", "expect"}``. An input is written by hand to sit on a
rule or its edge; an expectation is never written by hand but asked of the contract, so the files
change when a rule does (and the staleness test says so). Where the rule lives in the publisher
rather than the contract (a delay, a deadline), it is stated once here from the contract's limits,
and the test holds the Python publisher to it.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from tiered_jobs.contract import envelope, payloads
from tiered_jobs.contract import trace_header as traces
from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES, SQS_MAX_DELAY_SECONDS, SQS_MAX_MESSAGE_BYTES, Env
from tiered_jobs.contract.routing import Routes, UnknownRouteError
from tiered_jobs.contract.sqs_limits import (
    MAX_JOB_MESSAGE_BYTES,
    RUNTIME_ATTRIBUTES_HEADROOM_BYTES,
    first_disallowed_character,
    message_size,
    pack_batches,
)
from tiered_jobs.contract.times import iso_text, parse_iso

from . import codes

Case = dict[str, Any]

#: The job every case builds when its category does not vary them.
JOB_TYPE = "conformance.job"
#: The ``published_at`` of every envelope a case builds: the form every publisher stamps (24 characters).
PUBLISHED_AT = "2026-12-07T10:00:00.000Z"
#: The clock of the timing cases.
NOW = "2026-12-07T10:00:00.000Z"


def case(name: str, description: str, given: dict[str, Any], expect: dict[str, Any]) -> Case:
    return {"name": name, "description": description, "input": given, "expect": expect}


def padded(payload: dict[str, Any], pad: dict[str, Any] | None) -> dict[str, Any]:
    """The payload a case means: ``pad`` (``{"field", "char", "count"}``) sets ``payload[field]`` to ``char * count``,
    so a case near 1 MiB stays a few lines of JSON."""
    if not pad:
        return dict(payload)
    return {**payload, pad["field"]: pad["char"] * pad["count"]}


def sized_job_body(key: str, size: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(payload, pad)`` of a ``conformance.sized`` job with key ``key`` whose message is ``size`` bytes."""
    base = envelope.build("conformance.sized", {"data": ""}, key, published_at=PUBLISHED_AT).to_json()
    pad = {"field": "data", "char": "x", "count": size - message_size(base)}
    return {"data": ""}, pad


# -- envelopes: what a consumer accepts -------------------------------------------------------------


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


# -- payload schemas: the subset the consumer checks --------------------------------------------------


@contextmanager
def schema_folder(schemas: dict[str, dict[str, Any]]) -> Iterator[Path]:
    """A folder holding ``{job type: schema}``, searched (``TIERED_JOBS_SCHEMA_DIRS``) while the block runs."""
    before = os.environ.get(Env.SCHEMA_DIRS)
    with tempfile.TemporaryDirectory() as folder:
        for job_type, schema in schemas.items():
            Path(folder, f"{job_type}{payloads.SCHEMA_SUFFIX}").write_text(json.dumps(schema), encoding="utf-8")
        os.environ[Env.SCHEMA_DIRS] = folder
        try:
            yield Path(folder)
        finally:
            if before is None:
                os.environ.pop(Env.SCHEMA_DIRS, None)
            else:
                os.environ[Env.SCHEMA_DIRS] = before


#: The schemas the payload cases name (``input.schema``), each the schema of the type ``conformance.schema_<name>``.
SCHEMAS: dict[str, dict[str, Any]] = {
    "money": {
        "type": "object",
        "required": ["account_id", "amount"],
        "additionalProperties": False,
        "properties": {
            "account_id": {"type": "string", "pattern": "^acc_[a-z0-9]+$", "minLength": 5, "maxLength": 20},
            "amount": {"type": "integer", "minimum": -100000, "maximum": 100000, "not": {"const": 0}},
            "currency": {"enum": ["EUR", "USD"]},
            "rate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
            "note": {"type": ["string", "null"]},
            "kind": {"const": "transfer"},
        },
    },
    "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
    "nested": {"type": "object", "properties": {"to": {"type": "object", "required": ["email"]}}},
}


def schema_type(name: str) -> str:
    """The job type whose payload schema is ``SCHEMAS[name]``."""
    return f"conformance.schema_{name}"


def payload_schemas() -> list[Case]:
    ok = {"account_id": "acc_1", "amount": 500}
    inputs: list[tuple[str, str, str, dict[str, Any]]] = [
        ("valid", "every rule kept", "money", ok),
        (
            "valid-all",
            "every optional field kept",
            "money",
            {**ok, "currency": "EUR", "rate": 0.5, "tags": ["a"], "note": None, "kind": "transfer"},
        ),
        ("integer-as-float", "5.0 is an integer in JSON Schema", "money", {**ok, "amount": 5.0}),
        ("required", "a required field missing", "money", {"account_id": "acc_1"}),
        ("additional", "an unknown field where additionalProperties is false", "money", {**ok, "extra": 1}),
        ("type-string", "a number where a string is wanted", "money", {**ok, "account_id": 7}),
        ("type-integer", "1.5 is not an integer", "money", {**ok, "amount": 1.5}),
        ("type-boolean", "true is not an integer", "money", {**ok, "amount": True}),
        ("type-list", "a type list: string or null", "money", {**ok, "note": 3}),
        ("pattern", "pattern searches, anchored by ^ and $", "money", {**ok, "account_id": "ACC_1"}),
        (
            "pattern-final-newline",
            "$ is ECMA-262's: a final newline does not match",
            "money",
            {**ok, "account_id": "acc_1\n"},
        ),
        ("min-length", "minLength counts characters", "money", {**ok, "account_id": "acc_"}),
        ("max-length", "maxLength counts characters", "money", {**ok, "account_id": "acc_" + "a" * 17}),
        ("minimum", "below minimum", "money", {**ok, "amount": -100001}),
        ("maximum-edge", "maximum is inclusive", "money", {**ok, "amount": 100000}),
        ("maximum", "above maximum", "money", {**ok, "amount": 100001}),
        ("not", "not: 0 is refused", "money", {**ok, "amount": 0}),
        ("exclusive-minimum", "exclusiveMinimum: the bound itself is refused", "money", {**ok, "rate": 0}),
        ("exclusive-maximum", "exclusiveMaximum: the bound itself is refused", "money", {**ok, "rate": 1}),
        ("enum", "a value outside enum", "money", {**ok, "currency": "GBP"}),
        ("const", "a value other than const", "money", {**ok, "kind": "refund"}),
        ("min-items", "fewer items than minItems", "money", {**ok, "tags": []}),
        ("max-items", "more items than maxItems", "money", {**ok, "tags": ["a", "b", "c", "d"]}),
        ("items", "each item keeps items' schema", "money", {**ok, "tags": ["a", 2]}),
        ("several", "every problem is named, not only the first", "money", {"amount": "5", "extra": True}),
        ("additional-schema", "additionalProperties as a schema", "counts", {"a": 1, "b": "two"}),
        ("nested", "a nested object's field is named by its dotted path", "nested", {"to": {}}),
    ]
    found = []
    with schema_folder({schema_type(name): schema for name, schema in SCHEMAS.items()}):
        for name, text, schema, payload in inputs:
            problems = payloads.problems(schema_type(schema), payload)
            expect = {"problems": codes.payload_problems(problems)} if problems else {"valid": True}
            found.append(case(name, text, {"schema": schema, "payload": payload}, expect))
    return found


# -- routing: exact, then the longest glob ------------------------------------------------------------


def routing() -> list[Case]:
    table = {
        "payments.*": "critical",
        "payments.refund": "transactional",
        "payments.refund.*": "bulk",
        "*.refund": "bulk",
        "reports.?": "bulk",
        "mail.[abc]*": "transactional",
        "mail.[!abc]*": "bulk",
        "*": "default",
    }
    cases_in = [
        ("exact", "an exact pattern beats every glob", "payments.refund"),
        ("glob", "a glob matches", "payments.charge"),
        ("star-crosses-dots", "* matches dots too (shell-style, not path-style)", "payments.charge.retry"),
        ("longest-glob", "the longest matching glob wins", "payments.refund.partial"),
        ("question-mark", "? matches one character", "reports.q"),
        ("question-mark-two", "? matches exactly one character", "reports.qq"),
        ("class", "[abc] matches one of the set", "mail.alert"),
        ("negated-class", "[!abc] matches one outside the set", "mail.digest"),
        ("catch-all", "* alone catches the rest", "other.thing"),
    ]
    found = [
        case(name, text, {"routes": table, "job_type": job_type}, _route(table, job_type))
        for name, text, job_type in cases_in
    ]
    narrow = {"payments.*": "critical"}
    found.append(
        case(
            "no-route",
            "no pattern matches: refused before sending",
            {"routes": narrow, "job_type": "billing.invoice"},
            _route(narrow, "billing.invoice"),
        )
    )
    tie = {"payments.*": "critical", "*.refund": "bulk"}
    found.append(
        case(
            "tie-code-point-order",
            "two globs of 10 characters: '*' (U+002A) sorts before 'p'",
            {"routes": tie, "job_type": "payments.refund"},
            _route(tie, "payments.refund"),
        )
    )
    return found


def _route(table: dict[str, str], job_type: str) -> dict[str, Any]:
    try:
        return {"tier": Routes(table).tier_for(job_type)}
    except UnknownRouteError as exc:
        return {"problems": codes.job_problems([str(exc)])}


# -- the key's and the tenant's rules --------------------------------------------------------------------


def _job(key: Any, tenant: Any = None) -> dict[str, Any]:
    try:
        envelope.build(JOB_TYPE, {}, key, tenant=tenant, published_at=PUBLISHED_AT)
    except envelope.EnvelopeError as exc:
        return {"problems": codes.job_problems(exc.problems)}
    return {"valid": True, "message_group_id": tenant}


def keys_and_tenants() -> list[Case]:
    punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    keys: list[tuple[str, str, str]] = [
        ("key-1", "a key of 1 character", "k"),
        ("key-empty", "an empty key", ""),
        ("key-256", "a key of 256 characters", "k" * 256),
        ("key-257", "a key of 257 characters", "k" * 257),
        (
            "key-256-astral",
            "256 characters outside the BMP: counted in code points (512 UTF-16 units)",
            "\U0001f600" * 256,
        ),
        ("key-257-astral", "257 code points outside the BMP", "\U0001f600" * 257),
        ("key-spaces", "any character SQS accepts, spaces included", "order 42 / é"),
        ("key-control", "a control character SQS refuses", "k\u0001"),
        ("key-nul", "NUL", "k\u0000"),
    ]
    found = [case(name, text, {"idempotency_key": key}, _job(key)) for name, text, key in keys]
    tenants: list[tuple[str, str, str]] = [
        ("tenant", "a tenant becomes the message's MessageGroupId", "acme"),
        ("tenant-1", "1 character", "a"),
        ("tenant-128", "128 characters", "t" * 128),
        ("tenant-129", "129 characters", "t" * 129),
        ("tenant-empty", "empty", ""),
        ("tenant-punctuation", "every ASCII punctuation character", punctuation),
        ("tenant-space", "no space", "acme corp"),
        ("tenant-accent", "ASCII only: no accents", "café"),
        ("tenant-tab", "no control character", "acme\t"),
    ]
    found += [
        case(name, text, {"idempotency_key": "k", "tenant": tenant}, _job("k", tenant))
        for name, text, tenant in tenants
    ]
    return found


# -- SQS's character set ----------------------------------------------------------------------------------


def sqs_characters() -> list[Case]:
    edges = [
        (0x0, "NUL"),
        (0x8, "backspace, below tab"),
        (0x9, "tab"),
        (0xA, "line feed"),
        (0xB, "vertical tab"),
        (0xC, "form feed"),
        (0xD, "carriage return"),
        (0xE, "shift out"),
        (0x1F, "unit separator"),
        (0x20, "space, the first of the main range"),
        (0x7F, "DEL is accepted"),
        (0xD7FF, "last before surrogates"),
        (0xD800, "a lone high surrogate"),
        (0xDFFF, "a lone low surrogate"),
        (0xE000, "first after surrogates"),
        (0xFFFD, "the replacement character, last of the BMP range"),
        (0xFFFE, "a noncharacter"),
        (0xFFFF, "a noncharacter"),
        (0x10000, "first outside the BMP"),
        (0x10FFFF, "the last code point"),
    ]
    found = []
    for code_point, text in edges:
        value = f"a{chr(code_point)}b"
        found.append(
            case(
                f"U+{code_point:04X}",
                text,
                {"text": value, "code_points": [ord(c) for c in value]},
                _first_refused(value),
            )
        )
    later = "ok\U0001f600\ufffe"
    found.append(
        case(
            "index-in-code-points",
            "the index counts code points (an emoji is one)",
            {"text": later, "code_points": [ord(c) for c in later]},
            _first_refused(later),
        )
    )
    return found


def _first_refused(text: str) -> dict[str, Any]:
    found = first_disallowed_character(text)
    return {"first_refused": None if found is None else {"index": found[0], "code_point": found[1]}}


# -- size limits with the reserved headroom ----------------------------------------------------------------


def message_sizes() -> list[Case]:
    small = {"type": JOB_TYPE, "idempotency_key": "k", "payload": {"id": 1}}
    jobs: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = [
        ("ascii", "bytes are the compact JSON body's UTF-8 bytes", small, None),
        ("two-byte", "é is 2 bytes of UTF-8, sent as itself, not \\u-escaped", {**small, "payload": {"n": "é"}}, None),
        ("three-byte", "€ is 3 bytes", {**small, "payload": {"n": "€"}}, None),
        (
            "four-byte",
            "an emoji is 4 bytes (one code point, two UTF-16 units)",
            {**small, "payload": {"n": "\U0001f600"}},
            None,
        ),
        ("tenant-counts", "the tenant is in the body, and counts", {**small, "tenant": "acme"}, None),
    ]
    found = [case(name, text, {**job, "published_at": PUBLISHED_AT}, _size(job, pad)) for name, text, job, pad in jobs]
    for name, text, target in (
        ("at-limit", "exactly the job limit: SQS's 1 MiB less the runtime's headroom", MAX_JOB_MESSAGE_BYTES),
        ("over-limit", "one byte over the job limit", MAX_JOB_MESSAGE_BYTES + 1),
        (
            "sqs-limit",
            "SQS's own 1 MiB is over the job limit: the letter would lose its reasons",
            SQS_MAX_MESSAGE_BYTES,
        ),
    ):
        payload, pad = sized_job_body("k", target)
        job = {"type": "conformance.sized", "idempotency_key": "k", "payload": payload}
        found.append(case(name, text, {**job, "published_at": PUBLISHED_AT, "pad": pad}, _size(job, pad)))
    attributes = {
        "Source": {"DataType": "String", "StringValue": "café"},
        "Raw": {"DataType": "Binary", "BinaryValue": "AAEC"},
    }
    found.append(
        case(
            "attributes",
            "each attribute counts its name, data type and value (a binary one its decoded bytes)",
            {"body": "{}", "attributes": attributes},
            {"bytes": message_size("{}", _decoded(attributes))},
        )
    )
    return found


def _decoded(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attributes as SQS counts them: a ``BinaryValue`` given in base64 (JSON has no bytes) counts its raw bytes."""
    return {
        name: {**value, "BinaryValue": base64.b64decode(value["BinaryValue"])} if "BinaryValue" in value else value
        for name, value in attributes.items()
    }


def _size(job: dict[str, Any], pad: dict[str, Any] | None) -> dict[str, Any]:
    built = envelope.build(
        job["type"],
        padded(job["payload"], pad),
        job["idempotency_key"],
        tenant=job.get("tenant"),
        published_at=PUBLISHED_AT,
    )
    size = message_size(built.to_json())
    if size > MAX_JOB_MESSAGE_BYTES:
        return {"bytes": size, "problems": [{"code": "message_too_large"}]}
    return {"bytes": size, "valid": True}


# -- chunking of a batch by 10 entries and 1 MiB --------------------------------------------------------


def batch_chunks() -> list[Case]:
    kb = 1000
    layouts: list[tuple[str, str, list[tuple[str, int]]]] = [
        ("one", "one entry, one call", [("critical", 200)]),
        ("ten", "ten entries fill one call", [("critical", 200)] * 10),
        ("eleven", "the eleventh entry starts a second call", [("critical", 200)] * 11),
        ("twenty-five", "every ten, in order", [("critical", 200)] * 25),
        ("bytes", "three of 400 kB: two fit in 1 MiB, the third goes alone", [("critical", 400 * kb)] * 3),
        (
            "exactly-1-mib",
            "two halves of 1 MiB fit: the call's limit is inclusive",
            [("critical", SQS_MAX_MESSAGE_BYTES // 2)] * 2,
        ),
        (
            "one-byte-over",
            "one byte past 1 MiB in all starts a new call",
            [("critical", SQS_MAX_MESSAGE_BYTES // 2), ("critical", SQS_MAX_MESSAGE_BYTES // 2 + 1)],
        ),
        ("ten-near-limit", "ten entries of 104 857 bytes: 1 048 570 in all, one call", [("critical", 104_857)] * 10),
        ("ten-over-limit", "ten of 104 858: 1 048 580 in all, nine then one", [("critical", 104_858)] * 10),
        (
            "greedy-in-order",
            "greedy and in order: no entry is moved to fill a call",
            [("critical", 500 * kb), ("critical", 600 * kb), ("critical", 400 * kb)],
        ),
        (
            "largest-job",
            "the largest job and the runtime's headroom make exactly 1 MiB",
            [("critical", MAX_JOB_MESSAGE_BYTES), ("critical", RUNTIME_ATTRIBUTES_HEADROOM_BYTES)],
        ),
        (
            "per-queue",
            "each tier's queue is chunked on its own, tiers in first-seen order",
            [("bulk", 200), ("critical", 200), ("bulk", 200), ("critical", 200)],
        ),
    ]
    return [
        case(name, text, {"entries": [{"tier": tier, "bytes": size} for tier, size in entries]}, _chunks(entries))
        for name, text, entries in layouts
    ]


def _chunks(entries: list[tuple[str, int]]) -> dict[str, Any]:
    by_tier: dict[str, list[int]] = {}
    for index, (tier, _) in enumerate(entries):
        by_tier.setdefault(tier, []).append(index)
    calls = [
        {"tier": tier, "entries": chunk}
        for tier, indexes in by_tier.items()
        for chunk in pack_batches(indexes, lambda index: entries[index][1])
    ]
    return {"calls": calls, "limits": {"entries": SQS_MAX_BATCH_ENTRIES, "bytes": SQS_MAX_MESSAGE_BYTES}}


# -- deadline and delay rules ------------------------------------------------------------------------------


def timing(given: dict[str, Any]) -> dict[str, Any]:
    """The rule a publisher keeps: SQS delays up to 15 minutes, a schedule beyond; a deadline after the job is due.

    ``delay`` is whole seconds, 0 or more; over SQS's 900 the job needs a one-time schedule (a later path a
    port may refuse). ``expires_in`` (seconds above 0) counts from when the job is due; ``expires_at`` must
    be after now and after the job is due; not both."""
    now = parse_iso(NOW)
    assert now is not None
    delay = given.get("delay", 0)
    problems = []
    if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0:
        problems.append({"code": "invalid_delay"})
        delay = 0
    due = now + timedelta(seconds=delay)
    deadline: str | None = None
    expires_in, expires_at = given.get("expires_in"), given.get("expires_at")
    if expires_in is not None and expires_at is not None:
        problems.append({"code": "invalid_deadline"})
    elif expires_in is not None:
        if isinstance(expires_in, bool) or not isinstance(expires_in, int) or expires_in <= 0:
            problems.append({"code": "invalid_deadline"})
        else:
            deadline = iso_text(due + timedelta(seconds=expires_in))
    elif expires_at is not None:
        moment = parse_iso(expires_at)
        if moment is None or moment <= now or moment <= due:
            problems.append({"code": "invalid_deadline"})
        else:
            deadline = iso_text(moment)
    if problems:
        return {"problems": problems}
    if delay > SQS_MAX_DELAY_SECONDS:
        return {"scheduled": True}
    return {"delay_seconds": delay, "expires_at": deadline}


def delays_and_deadlines() -> list[Case]:
    inputs: list[tuple[str, str, dict[str, Any]]] = [
        ("no-delay", "sent now: no DelaySeconds", {}),
        ("delay", "a delay within SQS's limit is the message's DelaySeconds", {"delay": 30}),
        ("delay-900", "900 s, SQS's limit", {"delay": 900}),
        (
            "delay-901",
            "beyond 900 s: a one-time schedule (a port may refuse it, naming the Python publisher)",
            {"delay": 901},
        ),
        ("delay-negative", "a negative delay", {"delay": -1}),
        ("delay-fraction", "whole seconds only", {"delay": 1.5}),
        ("expires-in", "expires_in counts from now for a job sent now", {"expires_in": 600}),
        ("expires-in-after-delay", "expires_in counts from when the job is due", {"delay": 30, "expires_in": 600}),
        ("expires-in-zero", "a zero window: the job would never run", {"expires_in": 0}),
        ("expires-at", "a moment after now", {"expires_at": "2026-12-07T11:00:00.000Z"}),
        ("expires-at-offset", "written in UTC with milliseconds and Z", {"expires_at": "2026-12-07T12:00:00.5+01:00"}),
        ("expires-at-now", "a deadline at now has passed", {"expires_at": NOW}),
        (
            "expires-at-before-due",
            "a deadline before the job is due",
            {"delay": 60, "expires_at": "2026-12-07T10:00:30.000Z"},
        ),
        (
            "expires-both",
            "expires_at or expires_in, not both",
            {"expires_in": 60, "expires_at": "2026-12-07T11:00:00.000Z"},
        ),
    ]
    return [case(name, text, {"now": NOW, **given}, timing(given)) for name, text, given in inputs]


# -- traceparent -> AWSTraceHeader ----------------------------------------------------------------------


def trace_headers() -> list[Case]:
    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    inputs: list[tuple[str, str, str | None]] = [
        ("none", "no header: no AWSTraceHeader", None),
        ("traceparent-sampled", "a W3C traceparent, sampled", f"00-{trace_id}-{span_id}-01"),
        ("traceparent-unsampled", "flags 00: Sampled=0", f"00-{trace_id}-{span_id}-00"),
        ("traceparent-flags", "only the sampled bit of the flags counts", f"00-{trace_id}-{span_id}-03"),
        ("traceparent-spaces", "surrounding spaces are dropped", f"  00-{trace_id}-{span_id}-01 "),
        ("traceparent-upper-case", "upper-case hex is not a traceparent", f"00-{trace_id.upper()}-{span_id}-01"),
        ("traceparent-extra", "a fifth field is not a traceparent", f"00-{trace_id}-{span_id}-01-xx"),
        (
            "xray",
            "an X-Ray header is sent as it is",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        ),
        (
            "xray-lineage",
            "more key=value parts are kept",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=a87bd80c:0",
        ),
        ("xray-spaces", "spaces around parts are dropped", " Root=1-5759e988-bd862e3fe1be46a994272793 ; Sampled=0 "),
        ("xray-bad-root", "a Root that is not 1-<8 hex>-<24 hex>", "Root=1-xyz;Parent=53995c3f42cd8ad8;Sampled=1"),
        ("xray-no-root", "no Root", "Parent=53995c3f42cd8ad8;Sampled=1"),
        ("empty", "an empty header given", ""),
    ]
    return [case(name, text, {"trace_header": header}, _trace(header)) for name, text, header in inputs]


def _trace(header: str | None) -> dict[str, Any]:
    if header is None:
        return {"AWSTraceHeader": None}
    try:
        return {"AWSTraceHeader": traces.normalise(header)}
    except traces.TraceHeaderError as exc:
        return {"problems": codes.job_problems([f"job: {exc}"])}


#: Every category: its file's name, what it holds, and its cases.
CATEGORIES: dict[str, tuple[str, Callable[[], list[Case]]]] = {
    "envelopes": (
        "message bodies as a consumer reads them: valid, invalid (each problem's code) or too new",
        envelopes,
    ),
    "payload_schemas": (
        "a payload against its type's schema: the JSON Schema subset the consumer checks",
        payload_schemas,
    ),
    "routing": ("a job type's tier: an exact pattern, else the longest matching glob", routing),
    "keys_and_tenants": (
        "the idempotency key's and the tenant's rules; the tenant is the MessageGroupId",
        keys_and_tenants,
    ),
    "sqs_characters": ("the characters SQS accepts in a message, edges included", sqs_characters),
    "message_size": ("a job message's bytes and the limit that keeps room for the runtime's attributes", message_sizes),
    "batch_chunking": ("SendMessageBatch calls: per tier's queue, at most 10 entries and 1 MiB, greedy", batch_chunks),
    "delay_and_deadline": ("DelaySeconds, the schedule beyond it, and the envelope's expires_at", delays_and_deadlines),
    "trace_header": ("a W3C traceparent or an X-Ray header as the AWSTraceHeader system attribute", trace_headers),
}


def vectors() -> dict[str, dict[str, Any]]:
    """``{file name: its content}`` for every category."""
    files: dict[str, dict[str, Any]] = {}
    for name, (description, build) in CATEGORIES.items():
        content: dict[str, Any] = {"category": name, "description": description}
        if name == "payload_schemas":  # the schemas before the cases that name them (input.schema)
            content["schemas"] = SCHEMAS
        files[f"{name}.json"] = {**content, "cases": build()}
    return files
