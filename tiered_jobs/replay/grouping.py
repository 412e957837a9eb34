"""Group dead letters by what went wrong, so 500 letters read as 3 problems.

Error messages carry ids ("account 123 not found", "account 456 not found"); normalising them
replaces the variable parts with placeholders so the same failure lands in one group. What names
the failure stays: a payload field (``payload field 'amount' must be positive``, the contract's
schema errors) and a ``KeyError``'s key (``'qty'``) keep their names: a field path's list indexes
(``items.3.qty``) become ``<n>``, and a key that looks like an id (``'acc-42'``) is still masked.

Letters are also grouped by where the job failed (``DeadLetter.Traceback``'s frame, the innermost
line of the job's own code): the same ``KeyError: 'qty'`` raised at two lines is two bugs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tiered_jobs.contract.times import iso_text

from .letters import Letter

#: Message ids shown per group: enough to open a few in the console, short enough to read.
SAMPLES_PER_GROUP = 3

# Order matters: the most specific shapes first, so a UUID is not read as a run of numbers.
_PLACEHOLDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"'[^']*'"), "'<value>'"),
    (re.compile(r'"[^"]*"'), '"<value>"'),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "<email>"),
    # A token that mixes letters and digits is an id (ord_9f8e7, acc-42, 0x1f, a1b2c3).
    (re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]+\b"), "<id>"),
    (re.compile(r"[-+]?\b\d+(?:\.\d+)?\b"), "<n>"),
)
_SPACES = re.compile(r"\s+")
#: A field the message names (``payload field 'a.b'``, ``missing required field 'a'``): a name, not a value.
_FIELD = re.compile(r"\bfield '([^']*)'")
#: A ``KeyError``'s message: the missing key, quoted (``'qty'``).
_KEY = re.compile(r"'([A-Za-z_][\w.-]*)'")
#: A path segment that is a list index (``items.3.qty``).
_INDEX = re.compile(r"(?<![^.])\d+(?![^.])")


def normalise_message(message: str | None, error_type: str | None = None) -> str | None:
    """``"account 123 not found"`` -> ``"account <n> not found"``; ``None`` stays ``None``. Field
    names, and a ``KeyError``'s key (``error_type``), are kept (see the module's docstring)."""
    if message is None:
        return None
    if error_type == "KeyError" and (key := _KEY.fullmatch(message.strip())):
        return f"'{_masked(key.group(1), _PLACEHOLDERS[2:])}'"  # a name; an id-like key still masked
    parts: list[str] = []
    rest = 0
    for named in _FIELD.finditer(message):
        parts += [_masked(message[rest : named.start()]), f"field '{_name(named.group(1))}'"]
        rest = named.end()
    parts.append(_masked(message[rest:]))
    return _SPACES.sub(" ", "".join(parts)).strip()


def _masked(text: str, placeholders: tuple[tuple[re.Pattern[str], str], ...] = _PLACEHOLDERS) -> str:
    for pattern, placeholder in placeholders:
        text = pattern.sub(placeholder, text)
    return text


def _name(path: str) -> str:
    """A field's or key's name as written, its list indexes as ``<n>``."""
    return _INDEX.sub("<n>", path)


@dataclass
class _Group:
    """Letters of one job type and error pattern, counted together."""

    job_type: str
    error_type: str
    reason: str
    error_message: str | None
    #: Where the job failed (``path:line in function``), when its letters say.
    frame: str | None
    count: int = 0
    outside_window: int = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    samples: list[str] = field(default_factory=list)
    #: Every letter of the group, in the order read: what an operator names to show, replay or discard one.
    message_ids: list[str] = field(default_factory=list)

    def add(self, letter: Letter, outside_window: bool) -> None:
        self.count += 1
        self.outside_window += outside_window
        self.oldest = min(filter(None, (self.oldest, letter.first_failed_at)))
        self.newest = max(filter(None, (self.newest, letter.dead_lettered_at)))
        self.message_ids.append(letter.message_id)
        if len(self.samples) < SAMPLES_PER_GROUP:
            self.samples.append(letter.message_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_type": self.job_type,
            "error_type": self.error_type,
            "reason": self.reason,
            "error_message": self.error_message,
            "frame": self.frame,
            "count": self.count,
            "outside_window": self.outside_window,
            "oldest": iso_text(self.oldest) if self.oldest else None,
            "newest": iso_text(self.newest) if self.newest else None,
            "sample_message_ids": list(self.samples),
            "message_ids": list(self.message_ids),
        }


class Groups:
    """Letters grouped by job type, error type, reason, normalised error message and failing frame."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str, str, str | None, str | None], _Group] = {}

    def add(self, letters: Iterable[Letter], outside_window: Iterable[str] = ()) -> None:
        """``outside_window``: ids of the letters older than the tier's idempotency window."""
        outside = set(outside_window)
        for letter in letters:
            message = normalise_message(letter.error_message, letter.error_type)
            key = (letter.job_type, letter.error_type, letter.reason, message, letter.frame)
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = _Group(*key)
            group.add(letter, letter.message_id in outside)

    def to_list(self) -> list[dict[str, Any]]:
        """Biggest group first; ties by job type and error type, so the output is stable."""
        ordered = sorted(
            self._groups.values(), key=lambda g: (-g.count, g.job_type, g.error_type, g.reason, g.frame or "")
        )
        return [group.to_dict() for group in ordered]
