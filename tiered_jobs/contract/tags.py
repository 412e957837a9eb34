"""A job's tags: up to 10 short ``name: value`` pairs a publisher attaches to find the job again.

``publish(..., tags={"order": "o-17", "customer": "c-9"})`` puts them in the envelope's ``tags``
field, so every copy, letter and replay carries them unchanged (they are in the body), and the
consumer writes them on each of the job's log lines as ``tags.<name>``: what ``tiered-jobs search
--tag order=o-17`` filters on.

The rules are narrow on purpose. A name is a Logs Insights field name without quoting (lower-case
letters, digits and ``_``, starting with a letter), and a value holds no space, quote or backslash,
so a search's query never has to escape what it looks for. Both are short: they are on every line
of the job, and log ingestion is paid per byte.

Only the standard library: the consumer's cold start reads it (only for a job that has tags).
"""

from __future__ import annotations

import re
from typing import Any

#: The most tags a job carries.
MAX_TAGS = 10
#: A tag's name: a Logs Insights field name as it is (``tags.order``), 1-32 characters.
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
#: A tag's value: 1-64 letters, digits or ``- _ . : / @ + = #`` (no space, quote, backslash or comma).
VALUE_PATTERN = re.compile(r"^[A-Za-z0-9_.:/@+=#-]{1,64}$")


def problems(tags: Any) -> list[str]:
    """Every reason ``tags`` is not a job's tags (an empty list when it is)."""
    if not isinstance(tags, dict):
        return [f"'tags' must be an object of tag names to values, got {type(tags).__name__}"]
    found: list[str] = []
    if len(tags) > MAX_TAGS:
        found.append(f"'tags' must hold at most {MAX_TAGS} tags, got {len(tags)}")
    for name, value in tags.items():
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            found.append(
                "'tags' must name each tag with 1-32 lower-case letters, digits or '_', starting with a "
                f"letter, got {str(name)[:40]!r}"
            )
        elif not isinstance(value, str) or not VALUE_PATTERN.match(value):
            shown = value[:80] if isinstance(value, str) else value
            found.append(
                f"'tags.{name}' must be a string of 1-64 letters, digits or - _ . : / @ + = # "
                f"(no spaces, quotes or backslashes), got {shown!r}"
            )
    return found


def parse_filter(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` (a search's ``--tag``) as ``(name, value)``; ``ValueError`` naming the rule it breaks."""
    name, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"a tag filter is NAME=VALUE, got {text!r}")
    found = problems({name: value})
    if found:
        raise ValueError(found[0])
    return name, value
