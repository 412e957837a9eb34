"""What the idempotency store keeps of a job's result: a bounded, JSON-safe form of it.

Powertools serializes the result *after* the job's side effect, inside the idempotent call: a
result that JSON cannot encode (tuple keys, mixed key types under ``sort_keys``, a circular
structure, a 5 000-digit int) or that exceeds DynamoDB's 400 KB item limit would make Powertools
delete the record or fail to complete it -- and the job would run again. :func:`storable` turns
any result into something that always encodes, within :data:`RESULT_MAX_BYTES`, and never raises:

* keys become strings (as JSON writes ``1``, ``True``, ``None``; anything else by ``repr``);
  tuples and sets become lists; non-finite floats, huge ints and other objects become their
  ``str`` (``repr`` if ``str`` fails; the type name if both do);
* a circular reference becomes ``"<circular reference>"``, nesting deeper than
  :data:`MAX_DEPTH` becomes ``"<nested too deeply>"``;
* a result whose JSON is longer than :data:`RESULT_MAX_BYTES` is stored as
  ``{"truncated": true, "original_bytes": n, "preview": "<first PREVIEW_CHARS characters of its JSON>"}``.

Duplicates receive this stored form, not the original object.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

#: Largest stored result (bytes of its JSON, as Powertools writes it: ASCII). DynamoDB's item
#: limit is 400 KB; the rest of the record (key, status, hashes, expiries) is small.
RESULT_MAX_BYTES = 64 * 1024
PREVIEW_CHARS = 8 * 1024
MAX_DEPTH = 64
#: ints above this many bits are stored as text (Python refuses to print ints over 4 300 digits).
_MAX_INT_BITS = 10_000
CIRCULAR = "<circular reference>"
TOO_DEEP = "<nested too deeply>"


#: The exact types a plain result is made of (no subclass: a ``str`` subclass may print otherwise).
_SCALARS = frozenset({str, int, float, bool, type(None)})
#: Most characters one character of a ``str`` takes in JSON with ``ensure_ascii`` (a character past
#: U+FFFF is a surrogate pair: ``\uXXXX\uXXXX``).
_JSON_CHAR = 12
#: More than any JSON number, ``true``, ``false`` or ``null`` an int of 64 bits or a finite float takes.
_JSON_NUMBER = 32
#: The most keys a result may have to be taken as is (beyond, the full walk costs little next to it).
_PLAIN_KEYS = 32


def storable(result: Any) -> Any:
    """A JSON-safe, bounded form of ``result``; never raises."""
    if _plain(result):
        return result
    try:
        safe = _safe(result, 0, set())
        text = json.dumps(safe, sort_keys=True)  # what Powertools will write (ensure_ascii: bytes == chars)
        if len(text) <= RESULT_MAX_BYTES:
            return safe
        return {"truncated": True, "original_bytes": len(text), "preview": text[:PREVIEW_CHARS]}
    except Exception:  # noqa: BLE001 -- the job has run: nothing here may make it run again
        return {"unserializable": True, "type": _type_name(result)}


def _plain(result: Any) -> bool:
    """Is ``result`` what the full walk would return unchanged, and surely within the limit? Most jobs
    return ``None`` or a small dict of strings and numbers: for those the walk and the trial encoding
    (about 20 µs of every warm job's CPU) are skipped. An upper bound of its JSON's length decides:
    at most twelve characters per character of text, 32 per number, 8 around each entry."""
    kind = type(result)
    if kind is not dict:
        return result is None or kind is bool
    if len(result) > _PLAIN_KEYS:
        return False
    size = 2
    for key, value in result.items():
        kind = type(value)
        if type(key) is not str or kind not in _SCALARS:
            return False
        if kind is float and not math.isfinite(value):
            return False
        if kind is int and value.bit_length() > 64:
            return False
        size += _JSON_CHAR * len(key) + 8 + (_JSON_CHAR * len(value) if kind is str else _JSON_NUMBER)
    return size <= RESULT_MAX_BYTES


def _safe(value: Any, depth: int, ancestors: set[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value) if value.bit_length() <= _MAX_INT_BITS else f"<int of {value.bit_length()} bits>"
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    if depth >= MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        if id(value) in ancestors:
            return CIRCULAR
        ancestors.add(id(value))
        try:
            if isinstance(value, Mapping):
                return {_key(k): _safe(v, depth + 1, ancestors) for k, v in value.items()}
            return [_safe(item, depth + 1, ancestors) for item in value]
        finally:
            ancestors.discard(id(value))
    return _text(value)


def _key(key: Any) -> str:
    """A dict key as JSON would write it, or its ``repr`` where JSON would refuse it."""
    if isinstance(key, str):
        return str.__str__(key)
    if key is None or isinstance(key, (bool, int, float)):
        safe = _safe(key, 0, set())
        return safe if isinstance(safe, str) else json.dumps(safe)
    return _text(key, use=repr)


def _text(value: Any, use: Any = str) -> str:
    for convert in (use, repr):
        try:
            return str(convert(value))
        except Exception:  # noqa: BLE001 -- a broken __str__ / __repr__ falls through to the next
            continue
    return f"<{_type_name(value)}>"


def _type_name(value: Any) -> str:
    try:
        return type(value).__name__
    except Exception:  # noqa: BLE001
        return "object"
