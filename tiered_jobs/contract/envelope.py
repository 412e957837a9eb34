"""Envelope v1: the JSON object every job message carries.

The rules live here once; ``envelope.schema.json`` beside this file states the same rules for
publishers in other languages (a test keeps the two in agreement). Only the standard library is
used: this module runs in the consumer's cold start.

    {"type": "invoices.send",                  # required, [a-z0-9_]+(\\.[a-z0-9_]+)*
     "idempotency_key": "inv_123",             # required, 1-256 characters
     "payload": {...},                         # required JSON object (IDs, not big objects)
     "version": 1,                             # optional, default 1
     "published_at": "2026-11-29T10:00:00Z",   # optional, ISO 8601 with a time zone
     "tenant": "acme",                         # optional, 1-128 characters SQS accepts as MessageGroupId
     "unique_lock": "9f1c...",                 # optional, the unique-jobs lock this job holds
     "expires_at": "2026-11-29T11:00:00Z",     # optional, ISO 8601 with a time zone: the deadline
     "batch": {"id": "5f0c...", "step": 1},    # optional, the batch (or chain, with its step) it is part of
     "tags": {"order": "o-17"}}                # optional, up to 10 short tags to find the job by

``tenant`` names whom the job is for when one tier's queue serves many customers: the publisher
also sends it as the message's ``MessageGroupId`` (SQS fair queues), the consumer logs it.

``unique_lock`` is the token of the lock a ``publish(..., unique_for=)`` took in the stage's
unique-jobs table (:mod:`~tiered_jobs.contract.unique`): the consumer releases that lock when the
job finishes. A job without it costs the consumer no call.

``expires_at`` is the job's deadline: a job not started by then is not run. The consumer drops it
before it starts (to the discard archive, reason ``expired``), on every copy and replay, since
copies and replays carry the envelope unchanged. Deploy the stack before publishing with a deadline.

``batch`` names the batch (``publisher.batch``) or chain (``publisher.chain``, with the link's
``step``) the job is a member of (:mod:`~tiered_jobs.contract.batches`): when it finishes, the
consumer counts it in the stage's batches table. A consumer of an earlier release holds such a job
as too new (and dead-letters it ``envelope_too_new`` after the bound): deploy before publishing batches.

``tags`` are up to 10 short ``name: value`` pairs (:mod:`~tiered_jobs.contract.tags`) the consumer
writes on each of the job's log lines, for ``tiered-jobs search --tag``. A consumer of an earlier
release holds such a job as too new (then dead-letters it ``envelope_too_new``; a replay after the
upgrade runs it): deploy before publishing with tags.

**Compatibility** (:func:`newer_than_known`, docs/upgrading.md): a release may add optional
top-level fields, or raise ``version``. Validation (and so publishing) refuses what this release
does not know (``additionalProperties: false`` in the schema), but :func:`parse` tells an envelope
from a newer release (:class:`EnvelopeTooNew`: a consumer holds it for a newer consumer) from a
malformed one (:class:`EnvelopeError`: permanent).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .errors import USAGE, TieredJobsError
from .names import SQS_MAX_MESSAGE_BYTES, SQS_MESSAGE_GROUP_ID_PATTERN
from .sqs_limits import disallowed_character_problem, first_disallowed_character
from .times import iso_text

ENVELOPE_VERSION = 1
JOB_TYPE_PATTERN = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)*$")
MAX_JOB_TYPE_CHARS = 128
MAX_IDEMPOTENCY_KEY_CHARS = 256
REQUIRED_FIELDS = ("type", "idempotency_key", "payload")
OPTIONAL_FIELDS = ("version", "published_at", "tenant", "unique_lock", "expires_at", "batch", "tags")
ALLOWED_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS
_ALLOWED = frozenset(ALLOWED_FIELDS)


class EnvelopeError(TieredJobsError, ValueError):
    """A message body that is not a valid envelope v1. Permanent (retrying won't fix it), except
    :class:`EnvelopeTooNew`.

    ``problems`` lists every rule broken, each as one readable sentence.
    """

    code = USAGE

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("invalid job envelope: " + "; ".join(self.problems))


class EnvelopeTooNew(EnvelopeError):
    """A well-formed envelope from a newer producer: a ``version`` above :data:`ENVELOPE_VERSION`,
    or top-level fields this release does not know (see :func:`newer_than_known`).

    Publishing refuses it like any invalid envelope; a consumer holds the job for a newer consumer
    instead of dead-lettering it as permanent (``tiered_jobs.runtime.too_new``).
    """

    def __init__(self, problems: list[str], tenant: str | None = None):
        super().__init__(problems)
        #: The envelope's ``tenant`` (a field this release reads): its held copies' ``MessageGroupId``.
        self.tenant = tenant


@dataclass(frozen=True)
class Envelope:
    """One job as it travels in a message body: version 1 of the contract (docs/upgrading.md)."""

    type: str
    idempotency_key: str
    payload: dict[str, Any]
    version: int = ENVELOPE_VERSION
    published_at: str | None = None
    tenant: str | None = None
    #: The token of the unique-jobs lock this job holds (``publish(..., unique_for=)``), released when it finishes.
    unique_lock: str | None = None
    #: The deadline (ISO 8601 with a time zone): not started by then, the job is not run.
    expires_at: str | None = None
    #: The batch or chain it is a member of: ``{"id": ...}`` or ``{"id": ..., "step": n}``.
    batch: dict[str, Any] | None = None
    #: Up to 10 short ``name: value`` pairs, on each of the job's log lines (:mod:`~tiered_jobs.contract.tags`).
    tags: dict[str, str] | None = None

    def deadline(self) -> datetime | None:
        """``expires_at`` as an aware datetime (``None``: the job never expires)."""
        return _parse_iso(self.expires_at) if self.expires_at is not None else None

    def expired(self, now: datetime) -> bool:
        """Has the deadline passed at ``now``? (never, without one)."""
        deadline = self.deadline()
        return deadline is not None and deadline <= now

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": self.type,
            "idempotency_key": self.idempotency_key,
            "payload": self.payload,
            "version": self.version,
        }
        if self.published_at is not None:
            body["published_at"] = self.published_at
        if self.tenant is not None:
            body["tenant"] = self.tenant
        if self.unique_lock is not None:
            body["unique_lock"] = self.unique_lock
        if self.expires_at is not None:
            body["expires_at"] = self.expires_at
        if self.batch is not None:
            body["batch"] = self.batch
        if self.tags is not None:
            body["tags"] = self.tags
        return body

    def to_json(self) -> str:
        """The message body: compact JSON, keys in a stable order."""
        return _BODY_ENCODER.encode(self.to_dict())


#: The message body's JSON, made once: ``json.dumps`` with options builds a new encoder per call.
_BODY_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def utc_now_iso() -> str:
    """Now, as ISO 8601 in UTC with a ``Z`` suffix and millisecond precision (``times.iso_text``'s form)."""
    return iso_text(datetime.now(timezone.utc))


def _parse_iso(value: str) -> datetime | None:
    """An ISO 8601 date-time with a time zone, or ``None`` when ``value`` is not one."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _is_iso8601(value: str) -> bool:
    return _parse_iso(value) is not None


def validate(obj: Any) -> list[str]:
    """Every problem of ``obj`` as an envelope v1 (an empty list when it is valid)."""
    if not isinstance(obj, dict):
        return [f"the body must be a JSON object, got {_json_kind(obj)}"]
    problems: list[str] = []
    for name in REQUIRED_FIELDS:
        if name not in obj:
            problems.append(f"missing required field '{name}'")
    unknown = sorted(obj.keys() - _ALLOWED)
    if unknown:
        problems.append(f"unknown field(s) {', '.join(repr(u) for u in unknown)}; allowed: {', '.join(ALLOWED_FIELDS)}")
    if "type" in obj:
        job_type = obj["type"]
        if not isinstance(job_type, str):
            problems.append(f"'type' must be a string, got {_json_kind(job_type)}")
        elif len(job_type) > MAX_JOB_TYPE_CHARS or not JOB_TYPE_PATTERN.match(job_type):
            problems.append(
                f"'type' must match {JOB_TYPE_PATTERN.pattern} and be at most "
                f"{MAX_JOB_TYPE_CHARS} characters, got {job_type[:80]!r}"
            )
    if "idempotency_key" in obj:
        key = obj["idempotency_key"]
        if not isinstance(key, str):
            problems.append(f"'idempotency_key' must be a string, got {_json_kind(key)}")
        elif not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY_CHARS:
            problems.append(f"'idempotency_key' must be 1-{MAX_IDEMPOTENCY_KEY_CHARS} characters, got {len(key)}")
    if "payload" in obj and not isinstance(obj["payload"], dict):
        problems.append(f"'payload' must be a JSON object, got {_json_kind(obj['payload'])}")
    if "version" in obj:
        version = obj["version"]
        if isinstance(version, bool) or version != ENVELOPE_VERSION:
            problems.append(f"'version' must be {ENVELOPE_VERSION}, got {version!r}")
    if "published_at" in obj:
        published_at = obj["published_at"]
        if not isinstance(published_at, str) or not _is_iso8601(published_at):
            problems.append(f"'published_at' must be an ISO 8601 date-time with a time zone, got {published_at!r}")
    if "tenant" in obj:
        problems.extend(tenant_problems(obj["tenant"]))
    if "unique_lock" in obj:
        from .unique import token_problems  # only a unique job loads the token's rules, as for batch below

        problems.extend(token_problems(obj["unique_lock"]))
    if "expires_at" in obj:
        expires_at = obj["expires_at"]
        if not isinstance(expires_at, str) or not _is_iso8601(expires_at):
            problems.append(f"'expires_at' must be an ISO 8601 date-time with a time zone, got {expires_at!r}")
    if "batch" in obj:
        from .batches import field_problems  # only a batch member loads the rules: a cold start skips them

        problems.extend(field_problems(obj["batch"]))
    if "tags" in obj:
        from .tags import problems as tag_problems  # only a tagged job loads the rules

        problems.extend(tag_problems(obj["tags"]))
    return problems


def newer_than_known(obj: Any) -> bool:
    """Is ``obj`` an envelope a newer release wrote, rather than a malformed one?

    The compatibility rule (docs/upgrading.md): a new release may add optional top-level fields,
    and may raise ``version`` for a change old consumers must not guess at. So a JSON object is
    *newer than this release* when its ``version`` is an integer above :data:`ENVELOPE_VERSION`,
    or when it has top-level fields this release does not know, and every field this release does
    know keeps its rules (``type``, ``idempotency_key`` and ``payload`` present and well-formed).
    Anything else -- not JSON, a field missing or of the wrong type, a version below 1 -- is
    malformed, and stays permanent.
    """
    if not isinstance(obj, dict):
        return False
    version = obj.get("version", ENVELOPE_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < ENVELOPE_VERSION:
        return False
    unknown = set(obj) - set(ALLOWED_FIELDS)
    if version == ENVELOPE_VERSION and not unknown:
        return False
    known = {name: value for name, value in obj.items() if name in ALLOWED_FIELDS and name != "version"}
    return not validate(known)


def character_problems(obj: Any, path: str = "", _open: frozenset[int] = frozenset()) -> list[str]:
    """Every string of ``obj`` (keys included) that holds a character SQS refuses, by field and position.

    ``path`` names ``obj``; at the top, an envelope's fields are named ``'idempotency_key'``,
    ``payload['memo']``... One problem per string: its first bad character. A structure that
    contains itself is not walked twice (JSON cannot carry it anyway).
    """
    if isinstance(obj, str):
        problem = disallowed_character_problem(obj, path or "the value")
        return [problem] if problem else []
    if not isinstance(obj, (dict, list, tuple)) or id(obj) in _open:
        return []
    if not _open and first_disallowed_character("".join(_strings(obj, [], set()))) is None:
        # Every publish checks every string: one search over them all, and only a refused character
        # walks the structure again to name where it is.
        return []
    inner = _open | {id(obj)}
    problems: list[str] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            where = f"{path}[{key!r}]" if path else ("payload" if key == "payload" else repr(key))
            if isinstance(key, str):
                problems += character_problems(key, f"the key {where}", inner)
            problems += character_problems(value, where, inner)
    else:
        for position, value in enumerate(obj):
            problems += character_problems(value, f"{path}[{position}]", inner)
    return problems


def _strings(obj: Any, found: list[str], seen: set[int]) -> list[str]:
    """Every string of ``obj``, keys included, each container once."""
    if isinstance(obj, str):
        found.append(obj)
    elif isinstance(obj, (dict, list, tuple)) and id(obj) not in seen:
        seen.add(id(obj))
        if isinstance(obj, dict):
            for key, value in obj.items():
                if isinstance(key, str):
                    found.append(key)
                _strings(value, found, seen)
        else:
            for value in obj:
                _strings(value, found, seen)
    return found


def tenant_problems(tenant: Any) -> list[str]:
    """Why SQS would refuse ``tenant`` as a ``MessageGroupId`` (an empty list when it would not)."""
    if isinstance(tenant, str) and SQS_MESSAGE_GROUP_ID_PATTERN.fullmatch(tenant):
        return []
    shown = tenant[:80] if isinstance(tenant, str) else tenant
    return [
        f"'tenant' must be 1-128 characters, each a letter, a digit or ASCII punctuation "
        f"(what SQS accepts as a MessageGroupId; no spaces), got {shown!r}"
    ]


def parse(body: str | bytes, *, max_bytes: int | None = SQS_MAX_MESSAGE_BYTES) -> Envelope:
    """Parse and validate a message body; raise :class:`EnvelopeError` naming every problem.

    ``max_bytes``: the largest body accepted (``None``: any, for a body stored in S3 by ``large_payloads``,
    which no message holds)."""
    if isinstance(body, (bytes, bytearray)):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EnvelopeError([f"the body is not valid UTF-8 ({exc.reason} at byte {exc.start})"]) from None
    # A character is at most 4 bytes of UTF-8: a body that short is under the limit without encoding it.
    size = len(body.encode("utf-8")) if max_bytes is not None and len(body) * 4 > max_bytes else 0
    if max_bytes is not None and size > max_bytes:
        raise EnvelopeError([f"the body is {size} bytes, over the {max_bytes}-byte limit; pass IDs, not objects"])
    try:
        obj = json.loads(body)
    except RecursionError:
        raise EnvelopeError(["the body is JSON nested too deeply to parse"]) from None
    except ValueError as exc:
        raise EnvelopeError([f"the body is not JSON ({exc})"]) from None
    problems = validate(obj)
    if problems:
        if newer_than_known(obj):  # every known field, tenant included, keeps its rules
            raise EnvelopeTooNew(problems, obj.get("tenant"))
        raise EnvelopeError(problems)
    return Envelope(
        obj["type"],
        obj["idempotency_key"],
        obj["payload"],
        obj.get("version", ENVELOPE_VERSION),
        obj.get("published_at"),
        obj.get("tenant"),
        obj.get("unique_lock"),
        obj.get("expires_at"),
        obj.get("batch"),
        obj.get("tags"),
    )


def build(
    job_type: str,
    payload: Any,
    idempotency_key: str,
    *,
    published_at: str | None = None,
    tenant: str | None = None,
    unique_lock: str | None = None,
    expires_at: str | None = None,
    batch: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
) -> Envelope:
    """Build a valid envelope for publishing, or raise :class:`EnvelopeError` before anything is sent.

    Beyond :func:`validate`, every string must hold only characters SQS accepts
    (:func:`character_problems`): SQS would refuse the message, and inside a batch only that one.
    """
    obj = {
        "type": job_type,
        "idempotency_key": idempotency_key,
        "payload": payload,
        "version": ENVELOPE_VERSION,
        "published_at": published_at or utc_now_iso(),
    }
    if tenant is not None:
        obj["tenant"] = tenant
    if unique_lock is not None:
        obj["unique_lock"] = unique_lock
    if expires_at is not None:
        obj["expires_at"] = expires_at
    if batch is not None:
        obj["batch"] = batch
    if tags is not None:
        obj["tags"] = tags
    problems = validate(obj) + character_problems(obj)
    if problems:
        raise EnvelopeError(problems)
    return Envelope(
        job_type,
        idempotency_key,
        payload,
        ENVELOPE_VERSION,
        obj["published_at"],
        tenant,
        unique_lock,
        expires_at,
        batch,
        dict(tags) if tags is not None else None,
    )


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
