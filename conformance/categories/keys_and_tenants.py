"""The idempotency key's, the tenant's and the tags' rules; the tenant is the message's MessageGroupId,
the tags travel in the body."""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract import envelope

from .. import codes
from ..case import JOB_TYPE, PUBLISHED_AT, Case, case


def _job(key: Any, tenant: Any = None, tags: Any = None) -> dict[str, Any]:
    try:
        envelope.build(JOB_TYPE, {}, key, tenant=tenant, published_at=PUBLISHED_AT, tags=tags)
    except envelope.EnvelopeError as exc:
        return {"problems": codes.job_problems(exc.problems)}
    return {"valid": True, "message_group_id": tenant, **({"tags": tags} if tags is not None else {})}


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
    tags: list[tuple[str, str, Any]] = [
        ("tags", "tags travel in the body as they are", {"order": "o-17", "customer": "c-9"}),
        ("tags-empty", "no tags: an empty object is allowed", {}),
        ("tags-10", "10 tags", {f"t{n}": "v" for n in range(10)}),
        ("tags-11", "11 tags: over the limit", {f"t{n}": "v" for n in range(11)}),
        ("tags-name-32", "a name of 32 characters", {"n" * 32: "v"}),
        ("tags-name-33", "a name of 33 characters", {"n" * 33: "v"}),
        ("tags-name-upper", "names are lower-case", {"Order": "v"}),
        ("tags-name-digit-first", "a name starts with a letter", {"1st": "v"}),
        ("tags-value-64", "a value of 64 characters", {"order": "v" * 64}),
        ("tags-value-65", "a value of 65 characters", {"order": "v" * 65}),
        ("tags-value-empty", "an empty value", {"order": ""}),
        ("tags-value-punctuation", "every punctuation a value takes", {"order": "a-b_c.d:e/f@g+h=i#j"}),
        ("tags-value-space", "no space in a value", {"order": "o 17"}),
        ("tags-value-quote", "no quote in a value", {"order": 'o"17'}),
        ("tags-value-number", "a value is a string", {"order": 17}),
        ("tags-not-object", "tags are an object", ["order"]),
    ]
    found += [
        case(name, text, {"idempotency_key": "k", "tags": value}, _job("k", tags=value)) for name, text, value in tags
    ]
    return found
