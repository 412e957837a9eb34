"""A job type's tier: an exact pattern, else the longest matching glob."""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract.routing import Routes, UnknownRouteError

from .. import codes
from ..case import Case, case


def routing() -> list[Case]:
    table = {
        "payments.*": "critical",
        "payments.refund": "transactional",
        "payments.refund.*": "bulk",
        "*.refund": "bulk",
        "reports.?": "bulk",
        "mail.[abc]*": "transactional",
        "mail.[!abc]*": "bulk",
        "*": "default",
    }
    cases_in = [
        ("exact", "an exact pattern beats every glob", "payments.refund"),
        ("glob", "a glob matches", "payments.charge"),
        ("star-crosses-dots", "* matches dots too (shell-style, not path-style)", "payments.charge.retry"),
        ("longest-glob", "the longest matching glob wins", "payments.refund.partial"),
        ("question-mark", "? matches one character", "reports.q"),
        ("question-mark-two", "? matches exactly one character", "reports.qq"),
        ("class", "[abc] matches one of the set", "mail.alert"),
        ("negated-class", "[!abc] matches one outside the set", "mail.digest"),
        ("catch-all", "* alone catches the rest", "other.thing"),
    ]
    found = [
        case(name, text, {"routes": table, "job_type": job_type}, _route(table, job_type))
        for name, text, job_type in cases_in
    ]
    narrow = {"payments.*": "critical"}
    found.append(
        case(
            "no-route",
            "no pattern matches: refused before sending",
            {"routes": narrow, "job_type": "billing.invoice"},
            _route(narrow, "billing.invoice"),
        )
    )
    tie = {"payments.*": "critical", "*.refund": "bulk"}
    found.append(
        case(
            "tie-code-point-order",
            "two globs of 10 characters: '*' (U+002A) sorts before 'p'",
            {"routes": tie, "job_type": "payments.refund"},
            _route(tie, "payments.refund"),
        )
    )
    return found


def _route(table: dict[str, str], job_type: str) -> dict[str, Any]:
    try:
        return {"tier": Routes(table).tier_for(job_type)}
    except UnknownRouteError as exc:
        return {"problems": codes.job_problems([str(exc)])}
