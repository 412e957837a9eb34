"""The error codes of the vectors: each of the contract's problem sentences named by the rule it breaks.

The contract explains a refusal in a sentence for people; a port cannot be held to Python's wording,
so a vector names the rule instead (``missing_field`` of ``type``, ``minimum`` at ``amount``). The
same functions name what the generator computes and what the Python publisher raises, so both are
read alike. A sentence that matches no rule fails loudly: a new rule in the contract needs a code here
before the vectors can be written.
"""

from __future__ import annotations

import re
from typing import Any

#: Problems of a job or an envelope, most specific first: ``(code, pattern)``; a ``field`` group names the field.
_JOB_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (code, re.compile(pattern))
    for code, pattern in (
        ("not_json", r"^the body is (not JSON|JSON nested too deeply)"),
        ("body_too_large", r"^the body is \d+ bytes, over the \d+-byte limit"),
        ("not_an_object", r"the body must be a JSON object"),
        ("missing_field", r"missing required field '(?P<field>[\w.]+)'"),
        ("unknown_field", r"^unknown field\(s\) "),
        ("refused_character", r" holds U\+[0-9A-F]{4,6} at character \d+, which SQS does not accept"),
        ("invalid_field", r"'(?P<field>[\w.]+)' (must|has unknown)"),
        ("no_route", r"no route for job type "),
        ("unknown_tier", r"unknown tier "),
        ("invalid_delay", r"\bdelay (must|\d+ s:)"),
        ("invalid_deadline", r"\bexpires_(in|at)\b.*(must|has passed|is not after|not both)"),
        ("message_too_large", r"the message is \d+ bytes, over the \d+-byte limit"),
        ("invalid_trace_header", r"trace_header .* is not an X-Ray trace header"),
    )
)

#: A payload schema's problems, by the keyword that refused the value (the ``payloads`` module's sentences).
_PAYLOAD_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (keyword, re.compile(pattern))
    for keyword, pattern in (
        ("required", r" is missing required field '(?P<path>[^']*)'$"),
        ("additionalProperties", r" has unknown field '(?P<path>[^']*)'; allowed"),
        ("enum", r" must be one of "),
        ("minLength", r" must be at least \d+ characters, got"),
        ("maxLength", r" must be at most \d+ characters, got"),
        ("minItems", r" must have at least \d+ items"),
        ("maxItems", r" must have at most \d+ items"),
        ("pattern", r" must match "),
        ("minimum", r" must be >= "),
        ("exclusiveMinimum", r" must be > "),
        ("maximum", r" must be <= "),
        ("exclusiveMaximum", r" must be < "),
        ("not", r" must not be "),
        ("false", r" is not allowed$"),
        ("type", r" must be an? [a-z]+( or an? [a-z]+)*, got an? (null|boolean|integer|number|string|array|object)$"),
        ("const", r" must be .+, got "),
    )
)
_PAYLOAD_WHERE = re.compile(r"^payload(?: field '(?P<path>[^']*)')?")


def job_problem(sentence: str) -> dict[str, Any]:
    """``{"code": ..., "field": ...}`` of one problem of a job or an envelope (``field`` only where one is named)."""
    for code, pattern in _JOB_RULES:
        found = pattern.search(sentence)
        if found:
            field = found.groupdict().get("field")
            return {"code": code, "field": field} if field else {"code": code}
    raise ValueError(f"no conformance code for the problem {sentence!r}: add its rule to conformance/codes.py")


def unknown_fields(sentence: str) -> list[str]:
    """The names an ``unknown field(s) 'a', 'b'; allowed: ...`` sentence lists."""
    listed = sentence.partition("; allowed:")[0]
    return re.findall(r"'([^']*)'", listed)


def job_problems(sentences: list[str]) -> list[dict[str, Any]]:
    """Every sentence's code, one per unknown field, in a stable order (a port may find them in any order)."""
    found: list[dict[str, Any]] = []
    for sentence in sentences:
        named = job_problem(sentence)
        if named["code"] == "unknown_field":
            found.extend({"code": "unknown_field", "field": name} for name in unknown_fields(sentence))
        else:
            found.append(named)
    return sorted(found, key=lambda problem: (problem["code"], problem.get("field", "")))


def payload_problem(sentence: str) -> dict[str, str]:
    """``{"keyword": ..., "path": ...}`` of one payload schema problem (``path``: dotted, ``""`` for the payload)."""
    where = _PAYLOAD_WHERE.match(sentence)
    if where is None:
        raise ValueError(f"no conformance code for the payload problem {sentence!r}: it names no payload field")
    for keyword, pattern in _PAYLOAD_RULES:
        found = pattern.search(sentence[where.end() :])
        if found:
            path = found.groupdict().get("path") or where.group("path") or ""
            return {"keyword": keyword, "path": path}
    raise ValueError(f"no conformance code for the payload problem {sentence!r}: add its rule to conformance/codes.py")


def payload_problems(sentences: list[str]) -> list[dict[str, str]]:
    """Every payload problem's keyword and path, in a stable order."""
    return sorted((payload_problem(sentence) for sentence in sentences), key=lambda p: (p["path"], p["keyword"]))
