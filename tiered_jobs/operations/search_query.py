"""The Logs Insights query of ``tiered-jobs search``: what a search asks for, and its query string.

A search reads the **run lines** of the consumers (docs/consumer.md, "Logs"): one line per finished
attempt, each with the job's type, key, tenant, tags, tier, attempt, outcome, ``duration_ms``,
``queued_ms``, trace and batch. The query uses a small part of the Logs Insights grammar, the part
local mode's engine implements (``emulator/insights.py``, tested against the same strings):

* ``fields a, b, `tags.order```: the fields shown;
* ``filter`` with ``=``, ``in [...]``, ``like /regex/`` joined by ``and``;
* ``sort @timestamp desc`` and ``limit n``.

Exact values use ``=`` / ``in``, which the log groups' field indexes serve (a type without a glob, a
tenant, a tag, an outcome); a type glob and a key prefix are ``like`` a regular expression, which
reads every line of the time range.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..contract.tags import parse_filter

#: The outcomes of a run line (``tiered_jobs.runtime.outcomes``): what a search lists.
RUN_OUTCOMES = (
    "succeeded",
    "duplicate",
    "retried",
    "dead_lettered",
    "requeue_dead_lettered",
    "too_new_dead_lettered",
    "batch_count_dead_lettered",
)
#: The fields each run is shown with (``tags.<name>`` of the tag filters are added).
FIELDS = (
    "@timestamp",
    "tier",
    "job_type",
    "idempotency_key",
    "tenant",
    "outcome",
    "attempt",
    "duration_ms",
    "queued_ms",
    "reason",
    "error_type",
    "dlq_message_id",
    "trace_id",
    "batch_id",
)
#: The most runs one search returns (Logs Insights' own cap on a query's results).
MAX_LIMIT = 10_000


class SearchError(ValueError):
    """A search that cannot be asked: a bad filter, named."""


@dataclass(frozen=True)
class Search:
    """What a search looks for: each filter given narrows it (none: every run of the time range)."""

    #: A job type, or a glob of them (``invoices.*``; ``*`` any characters, ``?`` one).
    job_type: str | None = None
    #: The start of an idempotency key (a whole key is its own prefix).
    key_prefix: str | None = None
    tenant: str | None = None
    #: ``NAME=VALUE`` pairs; a run matches only with every one.
    tags: Sequence[str] = field(default_factory=tuple)
    #: One of :data:`RUN_OUTCOMES`.
    outcome: str | None = None
    limit: int = 50
    #: One idempotency key exactly, and its debounced runs' keys (``KEY@<minute>``): ``tiered-jobs job``'s runs.
    key: str | None = None

    def problems(self) -> list[str]:
        """Every reason this search cannot be asked (empty when it can)."""
        found = []
        for text in self.tags:
            try:
                parse_filter(text)
            except ValueError as exc:
                found.append(f"--tag {text!r}: {exc}")
        if self.outcome is not None and self.outcome not in RUN_OUTCOMES:
            found.append(f"--outcome must be one of {', '.join(RUN_OUTCOMES)}, got {self.outcome!r}")
        if not 1 <= self.limit <= MAX_LIMIT:
            found.append(f"--limit must be 1-{MAX_LIMIT}, got {self.limit}")
        named = (("--type", self.job_type), ("--key", self.key_prefix), ("--tenant", self.tenant), ("KEY", self.key))
        for name, value in named:
            if value is not None and (not value or any(ord(c) < 0x20 for c in value)):
                found.append(f"{name} must be non-empty text without control characters, got {value!r}")
        return found


def query(search: Search) -> str:
    """The Logs Insights query string of ``search`` (raises :class:`SearchError` naming each problem)."""
    problems = search.problems()
    if problems:
        raise SearchError("; ".join(problems))
    tags = [parse_filter(text) for text in search.tags]
    shown = list(FIELDS) + [field_name(f"tags.{name}") for name, _ in tags if f"tags.{name}" not in FIELDS]
    filters = [
        f"outcome = {literal(search.outcome)}"
        if search.outcome
        else "outcome in [" + ", ".join(literal(outcome) for outcome in RUN_OUTCOMES) + "]"
    ]
    if search.job_type is not None:
        if any(c in search.job_type for c in "*?"):
            filters.append(f"job_type like /{glob_regex(search.job_type)}/")
        else:
            filters.append(f"job_type = {literal(search.job_type)}")
    if search.key_prefix is not None:
        filters.append(f"idempotency_key like /^{regex_text(search.key_prefix)}/")
    if search.key is not None:
        # "=" is what the key's field index serves; a debounced key's runs have keys of their own.
        exact, debounced = literal(search.key), regex_text(search.key)
        filters.append(f"(idempotency_key = {exact} or idempotency_key like /^{debounced}@/)")
    if search.tenant is not None:
        filters.append(f"tenant = {literal(search.tenant)}")
    for name, value in tags:
        filters.append(f"{field_name('tags.' + name)} = {literal(value)}")
    return "\n| ".join(
        [
            "fields " + ", ".join(shown),
            "filter " + " and ".join(filters),
            "sort @timestamp desc",
            f"limit {search.limit}",
        ]
    )


def literal(text: str) -> str:
    """``text`` as a Logs Insights string literal (double quotes; ``\\`` and ``"`` escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def field_name(name: str) -> str:
    """A field as a query names it: in backticks when it holds more than letters, digits, ``_`` and ``@``."""
    return name if re.fullmatch(r"[@A-Za-z_][A-Za-z0-9_]*", name) else f"`{name}`"


def regex_text(text: str) -> str:
    """``text`` matched literally inside ``/.../`` (regex characters and ``/`` escaped)."""
    return re.escape(text).replace("/", "\\/")


def glob_regex(pattern: str) -> str:
    """A type glob as an anchored regular expression: ``*`` any characters, ``?`` one, the rest literal."""
    parts = [".*" if c == "*" else "." if c == "?" else regex_text(c) for c in pattern]
    return "^" + "".join(parts) + "$"
