"""The job-type -> tier routing table (``routes`` in ``cdk.json``), shared by stack and publisher.

Patterns are shell-style globs (``payments.*``). An exact type wins; otherwise the longest
matching pattern (the most specific) wins, so ``payments.refund`` can override ``payments.*``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

from .errors import USAGE, TieredJobsError


class UnknownRouteError(TieredJobsError, LookupError):
    """No route matches a job type."""

    code = USAGE


class Routes:
    """The routing table: a job type's tier by its exact name, else by the longest matching glob."""

    def __init__(self, table: Mapping[str, str]):
        if not isinstance(table, Mapping):
            raise TypeError(f"routes must be an object of {{job type glob: tier}}, got {type(table).__name__}")
        for pattern, tier in table.items():
            if not isinstance(pattern, str) or not pattern or not isinstance(tier, str) or not tier:
                raise ValueError(f"route {pattern!r} -> {tier!r}: pattern and tier must be non-empty strings")
        self._table = dict(table)
        # Most specific first: exact patterns, then longer globs before shorter ones.
        self._ordered = sorted(self._table.items(), key=lambda item: (_is_glob(item[0]), -len(item[0]), item[0]))

    @property
    def table(self) -> dict[str, str]:
        return dict(self._table)

    def tiers(self) -> set[str]:
        return set(self._table.values())

    def unknown_tiers(self, known: Iterable[str]) -> dict[str, str]:
        """Routes whose tier is not in ``known``: ``{pattern: tier}``."""
        known = set(known)
        return {pattern: tier for pattern, tier in self._table.items() if tier not in known}

    def tier_for(self, job_type: str) -> str:
        for pattern, tier in self._ordered:
            if fnmatch.fnmatchcase(job_type, pattern):
                return tier
        raise UnknownRouteError(
            f"no route for job type {job_type!r}; routes: {', '.join(sorted(self._table)) or '(none)'}"
        )


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")
