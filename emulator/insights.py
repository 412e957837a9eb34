"""Local mode's CloudWatch Logs Insights: the part of the query language ``tiered-jobs search`` uses.

moto stores log events but has no Logs Insights engine (its ``StartQuery`` reads only ``fields``,
``sort`` and ``limit`` of ``@timestamp`` / ``@message``). This module runs the subset the CLI's
queries use (``tiered_jobs/operations/search_query.py``), over the events moto stores, so
``tiered-jobs search`` works on local mode as on AWS. Supported, as the Logs Insights query syntax
documents it:

* commands joined by ``|``: ``fields``, ``filter``, ``sort``, ``limit``;
* ``fields a, b, `c.d```: the fields each result holds (``@timestamp``, ``@message``, ``@logStream``,
  ``@log``, and the fields of a JSON message, nested objects flattened with dots: ``tags.order``);
* ``filter``: comparisons ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` with a string or a number,
  ``in [lit, ...]``, ``like /regex/`` or ``like "substring"``, joined by ``and`` / ``or`` (``and``
  first), in parentheses if needed; ``not`` before a comparison;
* ``sort field asc|desc`` (one field) and ``limit n``.

Anything else (``stats``, ``parse``, functions) is refused with :class:`QueryError` naming it, rather
than answered wrongly. A missing field matches no comparison. Each query's statistics
(``recordsScanned``, ``recordsMatched``, ``bytesScanned``: the messages' UTF-8 bytes in the time
range) are computed as Logs Insights reports them, so the CLI's cost line is exercised locally.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


class QueryError(ValueError):
    """A query outside the supported subset, or malformed: the message names the part."""


@dataclass(frozen=True)
class Event:
    """One stored log event, as a query reads it."""

    timestamp_ms: int
    message: str
    stream: str = ""
    group: str = ""
    ptr: str = ""


@dataclass
class Query:
    """A parsed query: its fields, its filter, its sort and its limit."""

    fields: list[str] = field(default_factory=list)
    filters: list[Any] = field(default_factory=list)
    sort: tuple[str, bool] | None = None  # (field, descending)
    limit: int | None = None


class Results(list):  # type: ignore[type-arg]
    """The result rows (``{field: text}``), with the query's ``statistics``."""

    statistics: dict[str, float]


# -- parsing -----------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<regex>/(?:[^/\\]|\\.)*/)
    | (?P<quoted>`[^`]+`)
    | (?P<number>-?\d+(?:\.\d+)?)
    | (?P<op><=|>=|!=|=|<|>|\(|\)|\[|\]|,|\|)
    | (?P<word>[@A-Za-z_][A-Za-z0-9_.@]*)
    )""",
    re.VERBOSE,
)


def tokens(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of each token of ``text``; :class:`QueryError` at the first character none matches."""
    found, position = [], 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise QueryError(f"unexpected text at character {position}: {text[position : position + 20]!r}")
        kind = match.lastgroup or ""
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


def parse(text: str) -> Query:
    """The query ``text`` as a :class:`Query`, or :class:`QueryError`."""
    commands: list[list[tuple[str, str]]] = [[]]
    for token in tokens(text):
        if token == ("op", "|"):
            commands.append([])
        else:
            commands[-1].append(token)
    query = Query()
    for command in commands:
        if not command or command[0][0] != "word":
            raise QueryError("each command starts with its name (fields, filter, sort, limit)")
        name, rest = command[0][1].lower(), command[1:]
        if name == "fields":
            query.fields += _field_list(rest)
        elif name == "filter":
            expression, after = _or(rest, 0)
            if after != len(rest):
                raise QueryError(f"unexpected {rest[after][1]!r} in filter")
            query.filters.append(expression)
        elif name == "sort":
            names = [value for kind, value in rest]
            if len(rest) not in (1, 2) or (len(rest) == 2 and names[1].lower() not in ("asc", "desc")):
                raise QueryError("sort takes one field and asc or desc")
            query.sort = (_name(rest[0]), len(names) == 2 and names[1].lower() == "desc")
        elif name == "limit":
            if len(rest) != 1 or rest[0][0] != "number" or not rest[0][1].isdigit():
                raise QueryError("limit takes a whole number")
            query.limit = int(rest[0][1])
        else:
            raise QueryError(f"the command {name!r} is not in local mode's Logs Insights subset")
    return query


def _name(token: tuple[str, str]) -> str:
    kind, value = token
    if kind == "quoted":
        return value[1:-1]
    if kind == "word":
        return value
    raise QueryError(f"expected a field name, got {value!r}")


def _field_list(rest: list[tuple[str, str]]) -> list[str]:
    names = [_name(token) for token in rest[0::2]]
    if any(token != ("op", ",") for token in rest[1::2]) or not names:
        raise QueryError("fields takes names separated by commas")
    return names


def _or(rest: list[tuple[str, str]], at: int) -> tuple[Any, int]:
    left, at = _and(rest, at)
    while at < len(rest) and rest[at] == ("word", "or"):
        right, at = _and(rest, at + 1)
        left = ("or", left, right)
    return left, at


def _and(rest: list[tuple[str, str]], at: int) -> tuple[Any, int]:
    left, at = _condition(rest, at)
    while at < len(rest) and rest[at] == ("word", "and"):
        right, at = _condition(rest, at + 1)
        left = ("and", left, right)
    return left, at


def _condition(rest: list[tuple[str, str]], at: int) -> tuple[Any, int]:
    if at >= len(rest):
        raise QueryError("a filter ends where a condition was expected")
    if rest[at] == ("word", "not"):
        inner, at = _condition(rest, at + 1)
        return ("not", inner), at
    if rest[at] == ("op", "("):
        inner, at = _or(rest, at + 1)
        if at >= len(rest) or rest[at] != ("op", ")"):
            raise QueryError("a '(' is not closed")
        return inner, at + 1
    name = _name(rest[at])
    if at + 1 >= len(rest):
        raise QueryError(f"{name} needs a comparison")
    kind, op = rest[at + 1]
    if kind == "op" and op in ("=", "!=", "<", "<=", ">", ">="):
        return (op, name, _literal(rest, at + 2)), at + 3
    if (kind, op.lower()) == ("word", "like"):
        if at + 2 >= len(rest):
            raise QueryError("like needs a /regex/ or a string")
        pattern_kind, pattern = rest[at + 2]
        if pattern_kind == "regex":
            return ("like", name, re.compile(pattern[1:-1].replace("\\/", "/"))), at + 3
        if pattern_kind == "string":
            return ("like", name, re.compile(re.escape(_unquote(pattern)))), at + 3
        raise QueryError("like needs a /regex/ or a string")
    if (kind, op.lower()) == ("word", "in"):
        if at + 2 >= len(rest) or rest[at + 2] != ("op", "["):
            raise QueryError("in needs a [list]")
        values, at = [], at + 3
        while at < len(rest) and rest[at] != ("op", "]"):
            values.append(_literal(rest, at))
            at += 1
            if at < len(rest) and rest[at] == ("op", ","):
                at += 1
        if at >= len(rest):
            raise QueryError("a '[' is not closed")
        return ("in", name, values), at + 1
    raise QueryError(f"the comparison {op!r} is not in local mode's Logs Insights subset")


def _literal(rest: list[tuple[str, str]], at: int) -> str | float:
    if at >= len(rest):
        raise QueryError("a comparison ends where a value was expected")
    kind, value = rest[at]
    if kind == "string":
        return _unquote(value)
    if kind == "number":
        return float(value)
    raise QueryError(f"expected a string or a number, got {value!r}")


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


# -- running -----------------------------------------------------------------------------------


def discovered(event: Event) -> dict[str, Any]:
    """The fields Logs Insights finds in ``event``: its own, and a JSON message's, flattened with dots."""
    found: dict[str, Any] = {
        "@timestamp": event.timestamp_ms,
        "@message": event.message,
        "@logStream": event.stream,
        "@log": event.group,
    }
    text = event.message.strip()
    if text.startswith("{"):
        try:
            document = json.loads(text)
        except ValueError:
            return found
        if isinstance(document, dict):
            _flatten(document, "", found)
    return found


def _flatten(document: dict[str, Any], prefix: str, into: dict[str, Any]) -> None:
    for name, value in document.items():
        if isinstance(value, dict):
            _flatten(value, f"{prefix}{name}.", into)
        else:
            into[f"{prefix}{name}"] = value


def matches(expression: Any, fields: dict[str, Any]) -> bool:
    """Does a parsed filter expression hold for ``fields``?"""
    kind = expression[0]
    if kind == "and":
        return matches(expression[1], fields) and matches(expression[2], fields)
    if kind == "or":
        return matches(expression[1], fields) or matches(expression[2], fields)
    if kind == "not":
        return not matches(expression[1], fields)
    name = expression[1]
    if name not in fields or fields[name] is None:
        return False
    value = fields[name]
    if kind == "like":
        return expression[2].search(_text(value)) is not None
    if kind == "in":
        return any(_compare("=", value, item) for item in expression[2])
    return _compare(kind, value, expression[2])


def _compare(op: str, value: Any, literal: str | float) -> bool:
    if isinstance(literal, float):
        try:
            left: Any = float(value)
        except (TypeError, ValueError):
            return False
    else:
        left = _text(value)
    result: bool = {
        "=": left == literal,
        "!=": left != literal,
        "<": left < literal,
        "<=": left <= literal,
        ">": left > literal,
        ">=": left >= literal,
    }[op]
    return result


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def run(text: str, events: Iterable[Event], start_ms: int, end_ms: int) -> Results:
    """The rows of query ``text`` over ``events`` between ``start_ms`` and ``end_ms`` (inclusive)."""
    query = parse(text)
    scanned = scanned_bytes = 0
    matched: list[dict[str, Any]] = []
    for event in events:
        if not start_ms <= event.timestamp_ms <= end_ms:
            continue
        scanned += 1
        scanned_bytes += len(event.message.encode("utf-8"))
        fields = discovered(event)
        if all(matches(expression, fields) for expression in query.filters):
            fields["@ptr"] = event.ptr
            matched.append(fields)
    if query.sort is not None:
        name, descending = query.sort
        present = [row for row in matched if row.get(name) is not None]
        absent = [row for row in matched if row.get(name) is None]
        matched = sorted(present, key=lambda row: _sort_key(row[name]), reverse=descending) + absent
    limited = matched[: query.limit] if query.limit is not None else matched
    shown = query.fields or ["@timestamp", "@message"]
    results = Results(
        {name: _shown(name, row[name]) for name in [*shown, "@ptr"] if row.get(name) is not None} for row in limited
    )
    results.statistics = {
        "recordsMatched": float(len(matched)),
        "recordsScanned": float(scanned),
        "bytesScanned": float(scanned_bytes),
    }
    return results


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else (1, _text(value))


def _shown(name: str, value: Any) -> str:
    """A value as ``GetQueryResults`` gives it: text; ``@timestamp`` as ``YYYY-MM-DD HH:MM:SS.mmm`` (UTC)."""
    if name == "@timestamp":
        moment = datetime.fromtimestamp(int(value) / 1000, tz=timezone.utc)
        return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
    return _text(value)


# -- moto ------------------------------------------------------------------------------------------


def install() -> None:
    """Answer moto's ``StartQuery`` / ``GetQueryResults`` with this engine (idempotent).

    moto runs a query when it starts (``LogQuery.__init__`` calls ``execute_query``) and answers
    ``GetQueryResults`` from ``to_result_json``; both are replaced, so a query's rows and statistics
    are this module's, over the events moto stores. ``startTime`` / ``endTime`` are epoch seconds,
    as ``StartQuery`` takes them; the end second is included whole."""
    from moto.logs import models

    if getattr(models.LogQuery, "insights_by_tiered_jobs", False):
        return

    def execute_query(log_groups: list[Any], query: str, start_time: int, end_time: int) -> Results:
        events = (
            Event(event.timestamp, event.message, stream_name, group.name, str(event.event_id))
            for group in log_groups
            for stream_name, stream in list(group.streams.items())
            for event in list(stream.events)
        )
        return run(query, events, start_time * 1000, end_time * 1000 + 999)

    def to_result_json(self: Any) -> dict[str, Any]:
        return {
            "results": [[{"field": name, "value": value} for name, value in row.items()] for row in self.results],
            "statistics": getattr(self.results, "statistics", {}),
            "status": self.status,
        }

    models.execute_query = execute_query  # type: ignore[attr-defined]
    models.LogQuery.to_result_json = to_result_json  # type: ignore[method-assign]
    models.LogQuery.insights_by_tiered_jobs = True  # type: ignore[attr-defined]
