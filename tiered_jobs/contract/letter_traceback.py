"""Where a dead-lettered job failed: the ``DeadLetter.Traceback`` attribute, one versioned JSON string.

The consumer writes it (``tiered_jobs.runtime.tracebacks`` builds it from the exception); the
replay domain, the CLI and the console read it. Version 1::

    {"v": 1, "frame": "app/jobs/orders.py:42 in reserve", "traceback": "Traceback (most recent call last):\\n..."}

- ``frame``: the innermost frame of the job's own code (``path:line in function``), or ``null``
  when none ran (an envelope or payload error, an unknown type). ``dlq inspect`` groups by it.
- ``traceback``: the last frames as Python prints them (paths relative to ``sys.path``), cut from
  the top so that the whole value is at most :data:`MAX_BYTES` UTF-8 bytes.

Why one JSON attribute with a version: the frame is needed apart from the text (grouping), SQS
allows 10 attributes per message and a letter already carries eight reasons, so one attribute holds
both; a reader knows which shape it reads. A later version may add keys (readers ignore the ones
they do not know). A value that is not such JSON (written by hand, or by a future shape) is read as
a bare traceback text without a frame, so a letter stays readable whatever it carries.

Only the standard library: the consumer writes it on its failure path, the replay reads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .sqs_limits import sqs_safe_text

#: The shape this module writes.
VERSION = 1
#: Largest ``DeadLetter.Traceback`` value (UTF-8 bytes). About ten frames with their source lines;
#: with the largest other reasons it stays inside the 8 KiB the publisher leaves to the runtime
#: (``RUNTIME_ATTRIBUTES_HEADROOM_BYTES``), so a job the publisher accepted keeps it whole.
MAX_BYTES = 2048


@dataclass(frozen=True)
class LetterTraceback:
    """A letter's traceback attribute: where the job's own code failed, and the last frames."""

    #: ``path:line in function`` of the innermost frame in the job's own code (``None``: none ran).
    frame: str | None
    #: The last frames and the exception, as Python prints them.
    text: str

    def encode(self) -> str:
        """The attribute's value: compact JSON, non-ASCII kept as is (SQS counts UTF-8 bytes, and
        ``\\u00e9`` is 6 of them). JSON escapes control characters (a NUL byte) itself; the characters
        SQS refuses that JSON leaves raw (a lone surrogate, U+FFFE) are escaped by
        :func:`~tiered_jobs.contract.sqs_limits.sqs_safe_text`, the rule every letter attribute
        follows, and decode to the same text."""
        value = {"v": VERSION, "frame": self.frame, "traceback": self.text}
        return sqs_safe_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))

    @classmethod
    def decode(cls, value: str | None) -> LetterTraceback | None:
        """Read an attribute's value; ``None`` for a letter without one (older letters, SQS's redrive)."""
        if not value:
            return None
        try:
            data = json.loads(value)
        except ValueError:
            data = None
        readable = isinstance(data, dict) and isinstance(data.get("v"), int) and isinstance(data.get("traceback"), str)
        if not readable:
            return cls(frame=None, text=value)
        frame = data.get("frame")
        return cls(frame=frame if isinstance(frame, str) and frame else None, text=data["traceback"])


def encoded_bytes(frame: str | None, text: str) -> int:
    """The UTF-8 bytes of the attribute's value for ``frame`` and ``text``."""
    return len(LetterTraceback(frame, text).encode().encode("utf-8", "surrogatepass"))
