"""The message bodies of one publish call's common jobs, each written in one pass.

``envelope.build(...).to_json()`` checks an envelope rule by rule, walks every string for SQS's refused
characters, then serializes. Here the same envelope is written from parts: each job type's opening
(checked once per type), the key, the payload's JSON and the call's closing (its ``published_at``), in
``Envelope.to_dict``'s order and ``to_json``'s separators. The rules are asked as yes/no questions, and
the characters are read from the text itself: JSON writes every control character as an escape, so an
ASCII body without a backslash holds none SQS refuses, and any other body needs one search.

A body is given only when :func:`~tiered_jobs.contract.envelope.build` accepts its fields and JSON writes
the payload without NaN, infinities, a type of its own or a circular structure; ``None`` otherwise, and
says nothing about the job: the full check then names every problem. (Whether every key is a string is
the caller's question: JSON writes a number key as a string.) Not imported where jobs run: a consumer's
cold start has no use for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..contract import envelope

#: The JSON of a string, as the body's encoder writes it (non-ASCII characters as themselves).
_quote: Callable[[str], str] = json.encoder.encode_basestring


def _strict_writer() -> Callable[[Any, int], Iterable[str]]:
    """JSON with NaN and infinities refused, as the publisher refuses a payload that holds one (a circular
    one fails on Python's recursion limit, not the check for it): ``"".join(write(value, 0))``.

    ``JSONEncoder.encode`` makes its C encoder again on every call, a third of a small body's cost; this
    one is made once (with the arguments ``encode`` passes it), or is ``encode`` where Python has none."""
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, check_circular=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is not None:
        try:
            written: Callable[[Any, int], Iterable[str]] = make(
                None, encoder.default, _quote, None, ":", ",", False, False, False
            )
            return written
        except TypeError:  # another Python's arguments
            pass
    return lambda value, _level: (encoder.encode(value),)


_write_strict = _strict_writer()

# Where a body holds a character SQS refuses. JSON writes every control character as an escape (\b, \f,
# \u0000...), and SQS refuses those but tab, LF and CR; the other refused characters (lone surrogates,
# U+FFFE, U+FFFF) it writes as themselves. In JSON's text every backslash starts an escape, "\\" one of a
# backslash: an escape counts after an even run of those.
_REFUSED_IN_JSON = re.compile(
    r"(?<!\\)(?:\\\\)*\\(?:[bf]|u00(?:0[0-8bcefBCEF]|1[0-9a-fA-F]))|[\ud800-\udfff\ufffe\uffff]"
)

#: Each job type found to follow the envelope's rule, with its body's opening up to the key.
_openings: dict[str, str] = {}
_MAX_OPENINGS = 1024


class Bodies:
    """The bodies of one publish call: every one stamped with the call's moment."""

    def __init__(self) -> None:
        #: Every body's ``published_at``: the jobs of a call are published together.
        self.published_at = envelope.utc_now_iso()
        self._closing = f',"version":{envelope.ENVELOPE_VERSION},"published_at":{_quote(self.published_at)}'

    def body(self, job_type: Any, payload: Any, idempotency_key: Any, tenant: Any = None) -> str | None:
        """``envelope.build(job_type, payload, idempotency_key, published_at=..., tenant=tenant).to_json()``,
        or ``None`` (see the module)."""
        if not isinstance(job_type, str):
            return None
        opening = _openings.get(job_type)
        if opening is None:
            if envelope.validate({"type": job_type, "idempotency_key": "k", "payload": {}}):
                return None  # the rule for type, asked once per type
            if len(_openings) >= _MAX_OPENINGS:
                _openings.clear()
            opening = _openings[job_type] = f'{{"type":{_quote(job_type)},"idempotency_key":'
        if not isinstance(idempotency_key, str) or not 1 <= len(idempotency_key) <= envelope.MAX_IDEMPOTENCY_KEY_CHARS:
            return None
        if not isinstance(payload, dict):
            return None
        if tenant is None:
            closing = self._closing + "}"
        elif envelope.tenant_problems(tenant):
            return None
        else:
            closing = f'{self._closing},"tenant":{_quote(tenant)}}}'
        try:
            written = "".join(_write_strict(payload, 0))
        except (TypeError, ValueError, RecursionError):
            return None
        body = f'{opening}{_quote(idempotency_key)},"payload":{written}{closing}'
        if (not body.isascii() or "\\" in body) and _REFUSED_IN_JSON.search(body):
            return None
        return body
