"""SQS's own rules for what a message may hold, written once for the publisher, consumer and replay.

Both rules come from the SQS API reference (``SendMessage`` / ``SendMessageBatch`` and
``MessageAttributeValue``, also in botocore's service model; a test reads them from there):

- **Characters**: a message body, and every ``String``/``Number`` attribute value, may hold only
  ``#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF``. Anything else makes SQS
  refuse that message with ``InvalidMessageContents`` (in a batch: that entry only, the others
  are sent). The attribute rule is ``MessageAttributeValue``'s: "For string data types, the
  ``Value`` attribute has the same restrictions on the content as the message body". What the
  runtime writes itself (a letter's reasons) goes through :func:`sqs_safe_text`.
- **Size**: a message is its body's UTF-8 bytes plus, for every attribute, its name, its data
  type and its value (UTF-8 bytes of a string value, the raw bytes of a binary one). One message
  and one ``SendMessageBatch`` call (the sum of its messages) may each be at most 1 MiB;
  ``SendMessageBatch`` holds at most 10 entries.

Only the standard library: the consumer imports this at cold start.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from .names import SQS_MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES

#: Bytes of a job's message the publisher leaves to the runtime's own attributes: the
#: ``DeadLetter.*`` reasons of its letter (at most 7 732 bytes, the 1 024-character error message
#: and the 2 KiB traceback included) and the ``TieredJobs.*`` state of a held or deferred copy (under 200 bytes). A job
#: whose body fits in :data:`MAX_JOB_MESSAGE_BYTES` therefore always reaches the DLQ with every
#: reason whole, and its copies always fit.
RUNTIME_ATTRIBUTES_HEADROOM_BYTES = 8 * 1024
#: The largest job message the publisher sends (body plus attributes): SQS's 1 MiB less the headroom.
MAX_JOB_MESSAGE_BYTES = SQS_MAX_MESSAGE_BYTES - RUNTIME_ATTRIBUTES_HEADROOM_BYTES

#: The code point ranges SQS accepts, inclusive (the W3C XML ``Char`` production).
ALLOWED_CHARACTER_RANGES: tuple[tuple[int, int], ...] = (
    (0x9, 0x9),
    (0xA, 0xA),
    (0xD, 0xD),
    (0x20, 0xD7FF),
    (0xE000, 0xFFFD),
    (0x10000, 0x10FFFF),
)


def _refused_ranges(allowed: Iterable[tuple[int, int]], top: int = 0x10FFFF) -> list[tuple[int, int]]:
    """The code points outside ``allowed``, as ranges (a Python string holds none above U+10FFFF)."""
    refused, start = [], 0
    for low, high in sorted(allowed):
        if low > start:
            refused.append((start, low - 1))
        start = max(start, high + 1)
    if start <= top:
        refused.append((start, top))
    return refused


@functools.cache
def _disallowed() -> re.Pattern[str]:
    """The refused characters as a class of their own (five small ranges), not the negated allowed class:
    the same matches on every code point, but ``re`` builds the negated class's charset over all of
    Unicode (about 5 ms) and searches slower. Compiled on first use (0.75 ms): the consumer imports this
    module for its limits, and checks characters only when it writes a letter."""
    ranges = "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in _refused_ranges(ALLOWED_CHARACTER_RANGES))
    return re.compile(f"[{ranges}]")


T = TypeVar("T")


def first_disallowed_character(text: str) -> tuple[int, str] | None:
    """``(index, "U+FFFF")`` of the first character SQS refuses in ``text``, or ``None`` if it has none."""
    found = _disallowed().search(text)
    if found is None:
        return None
    return found.start(), f"U+{ord(found.group()):04X}"


def sqs_safe_text(text: str) -> str:
    """``text`` with each character SQS refuses written as a ``\\uXXXX`` escape; text SQS accepts is
    returned unchanged.

    For a value the runtime did not choose (a job's exception message, a type from a payload): a
    refused character would make SQS refuse the whole letter, and the job would stay in its queue
    until the redrive moved it without reasons. Every refused character is in the Basic
    Multilingual Plane, so four hex digits always do; the escape is JSON's, so a JSON text passed
    through stays valid and decodes to the same value (the letter's traceback relies on it).
    """
    return _disallowed().sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def disallowed_character_problem(text: str, where: str) -> str | None:
    """One readable sentence naming ``where`` and the position, or ``None`` when SQS accepts ``text``."""
    found = first_disallowed_character(text)
    if found is None:
        return None
    index, code = found
    return f"{where} holds {code} at character {index}, which SQS does not accept in a message"


def _utf8_bytes(text: str) -> int:
    # "surrogatepass": a lone surrogate counts its 3 bytes instead of raising (SQS refuses it anyway).
    return len(text.encode("utf-8", "surrogatepass"))


def attribute_size(name: str, value: Mapping[str, Any]) -> int:
    """The bytes SQS counts for one message attribute: its name, data type and value."""
    size = _utf8_bytes(name) + _utf8_bytes(str(value.get("DataType", "")))
    if value.get("StringValue") is not None:
        size += _utf8_bytes(str(value["StringValue"]))
    elif value.get("BinaryValue") is not None:
        binary = value["BinaryValue"]
        size += _utf8_bytes(binary) if isinstance(binary, str) else len(bytes(binary))
    return size


def message_size(body: str, attributes: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """The bytes SQS counts for one message: the body plus every attribute's name, type and value."""
    return _utf8_bytes(body) + sum(attribute_size(name, value) for name, value in (attributes or {}).items())


def pack_batches(
    items: Iterable[T],
    size_of: Callable[[T], int],
    *,
    max_entries: int = SQS_MAX_BATCH_ENTRIES,
    max_bytes: int = SQS_MAX_MESSAGE_BYTES,
) -> Iterator[list[T]]:
    """Greedy ``SendMessageBatch`` chunks, in order: at most ``max_entries`` items and ``max_bytes`` in all.

    An item bigger than ``max_bytes`` on its own goes alone (SQS refuses it, and says so for
    that entry only): callers refuse such items before packing.
    """
    chunk: list[T] = []
    total = 0
    for item in items:
        size = size_of(item)
        if chunk and (len(chunk) == max_entries or total + size > max_bytes):
            yield chunk
            chunk, total = [], 0
        chunk.append(item)
        total += size
    if chunk:
        yield chunk
