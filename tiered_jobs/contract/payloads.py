"""Each job type's payload, declared once as a JSON Schema and checked where it is published and consumed.

An app keeps its job types' schemas in a ``schemas/`` folder of its job folder, one
``<job type>.schema.json`` (draft 2020-12) each: the source of truth. The publisher refuses a payload
that breaks it before anything is sent, and the consumer dead-letters one as a permanent error. The
consumer adds the folder before it imports the jobs (:func:`add_schema_dir`), the construct checks
every file of it at synthesis (:func:`check_folder`), and a publishing service names a copy of it in
``TIERED_JOBS_SCHEMA_DIRS``. The package itself ships none. Which file a type has is looked up once
per search path and cached.
Publishers in other languages validate with the same files. A type without a schema is not
checked here (the consumer may still refuse it: an unknown type is permanent there).

Only the standard library is used, because this module runs in the consumer's cold start and in
services that install the publisher with boto3 alone. It implements the subset of JSON Schema
below, with JSON Schema's meaning (a test checks it agrees with the ``jsonschema`` package);
a schema using any other keyword is refused when loaded, so nothing is silently unchecked:

- ``type`` (a name or a list), ``enum``, ``const``, ``not``
- objects: ``properties``, ``required``, ``additionalProperties`` (a boolean or a schema)
- strings: ``minLength``, ``maxLength``, ``pattern`` (``$`` means the end of the string, as in
  ECMA-262: a final newline does not match it, unlike Python's ``re``)
- numbers: ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``
- arrays: ``items``, ``minItems``, ``maxItems``
- annotations, ignored: ``$schema``, ``$id``, ``$comment``, ``title``, ``description``,
  ``default``, ``examples``, ``format``
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import USAGE, TieredJobsError
from .names import Env

SCHEMA_SUFFIX = ".schema.json"

ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default", "examples", "format"})
KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "not",
        "properties",
        "required",
        "additionalProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "items",
        "minItems",
        "maxItems",
    }
)
#: Longest value shown in a message (characters of its ``repr``).
MAX_SHOWN_CHARS = 80


class SchemaError(TieredJobsError, ValueError):
    """A payload schema this module cannot check faithfully (a keyword outside the subset)."""

    code = USAGE


#: Folders added by :func:`add_schema_dir` (the consumer adds its job folders' ``schemas/``).
_added_dirs: list[Path] = []


def add_schema_dir(folder: Path) -> None:
    """Search ``folder`` for payload schemas too (before those named in ``TIERED_JOBS_SCHEMA_DIRS``)."""
    folder = Path(folder).resolve()
    if folder not in _added_dirs:
        _added_dirs.append(folder)


def schema_dirs() -> list[Path]:
    """Where schemas are looked up, first match wins: added folders, then ``TIERED_JOBS_SCHEMA_DIRS``.

    The package ships no schema: every job type is an app's, and so is its schema."""
    from_env = [Path(part) for part in os.environ.get(Env.SCHEMA_DIRS, "").split(os.pathsep) if part]
    return [*_added_dirs, *from_env]


def _find(job_type: str) -> Path | None:
    """The schema file of ``job_type`` in the first folder that has one; ``None`` when none does."""
    if not isinstance(job_type, str) or "/" in job_type:
        return None
    return _locate(job_type, tuple(schema_dirs()))


@lru_cache(maxsize=1024)
def _locate(job_type: str, folders: tuple[Path, ...]) -> Path | None:
    # Cached per search path: this runs for every job published and consumed, and a folder added
    # (or named in the environment) later is a new search path, so it is never missed.
    name = f"{job_type}{SCHEMA_SUFFIX}"
    return next((folder / name for folder in folders if (folder / name).is_file()), None)


def schema_path(job_type: str) -> Path:
    """The schema file of ``job_type`` (in the first folder that has one); ``SchemaError`` when none does."""
    found = _find(job_type)
    if found is None:
        folders = ", ".join(map(str, schema_dirs())) or "(no folder)"
        raise SchemaError(f"no payload schema for {job_type!r} in {folders}")
    return found


def known_types() -> list[str]:
    """Every job type with a payload schema."""
    return sorted(
        {path.name[: -len(SCHEMA_SUFFIX)] for folder in schema_dirs() for path in folder.glob(f"*{SCHEMA_SUFFIX}")}
    )


def has_schema(job_type: str) -> bool:
    return _find(job_type) is not None


def schema(job_type: str) -> dict[str, Any]:
    """The payload schema of ``job_type`` (each file loaded and checked once per process)."""
    return _load(schema_path(job_type))


@lru_cache(maxsize=None)
def _load(path: Path) -> dict[str, Any]:
    try:
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise SchemaError(f"{path.name}: not valid JSON ({error}); fix the file") from None
    _check_supported(loaded, path.name)
    return loaded


def check_folder(folder: Path) -> list[Path]:
    """Load and check every ``*.schema.json`` of ``folder`` (none is fine): the files it checked.

    Raises :class:`SchemaError` naming the first file this module cannot check faithfully, so a
    deployment tool can refuse it before a payload ever meets it (the construct does, at synthesis).
    """
    files = sorted(Path(folder).glob(f"*{SCHEMA_SUFFIX}"))
    for path in files:
        _load(path.resolve())
    return files


def problems(job_type: str, payload: Any) -> list[str]:
    """Every way ``payload`` breaks the schema of ``job_type``; empty when it is valid or has no schema."""
    check = checker(job_type)  # one look-up per payload: this runs for every job published and consumed
    if check is None:
        return []
    found: list[str] = []
    check(payload, (), found)
    return found


#: A compiled schema: ``check(value, path, found)`` appends to ``found`` every way ``value`` breaks it.
Check = Callable[[Any, tuple[str, ...], list[str]], None]

#: Per search path (its folders, in order), each job type's compiled schema (``None``: it has none).
_checkers: dict[tuple[Path, ...], dict[str, Check | None]] = {}
#: Job types remembered per search path: the consumer meets any type a message names.
_MAX_CACHED_TYPES = 1024
#: Search paths remembered (a process has one or two; a test suite, one per temporary folder).
_MAX_CACHED_PATHS = 64


def checker(job_type: str) -> Check | None:
    """The compiled schema of ``job_type`` on the current search path, or ``None`` when it has none:
    ``check(payload, (), found)`` appends to ``found`` what :func:`problems` returns.

    Every publish and every consume asks: one dict look-up once the type was met. The search path is
    read each time (a folder added, or named in the environment, later is a new path, so never missed);
    only its environment part is parsed once per value. A caller checking many payloads at once (the
    publisher's batch) asks once per type."""
    if not isinstance(job_type, str):
        return None
    folders = (*_added_dirs, *_env_dirs(os.environ.get(Env.SCHEMA_DIRS, "")))
    by_type = _checkers.get(folders)
    if by_type is None or len(by_type) >= _MAX_CACHED_TYPES:
        if len(_checkers) >= _MAX_CACHED_PATHS:
            _checkers.clear()
        by_type = _checkers[folders] = {}
    try:
        return by_type[job_type]
    except KeyError:
        pass
    path = None if "/" in job_type else _locate(job_type, folders)
    check = _compiled_schema(path) if path is not None else None  # a bad file raises, every time, as before
    by_type[job_type] = check
    return check


@lru_cache(maxsize=16)
def _env_dirs(value: str) -> tuple[Path, ...]:
    return tuple(Path(part) for part in value.split(os.pathsep) if part)


@lru_cache(maxsize=None)
def _compiled_schema(path: Path) -> Check:
    return _compile(_load(path))


# -- the validator ------------------------------------------------------------------------------
#
# _compile turns a schema into closures once (what every publish and consume runs: no keyword looked up,
# no message's text built until a rule fails, about a fifth of a walk's CPU on a small payload). The
# tests hold it to a walk of the schema for every value, one rule per line as JSON Schema states them
# (tests/support/schema_walk.py): the same messages, in the same order.


def _check_supported(node: Any, where: str) -> None:
    if isinstance(node, bool):
        return
    if not isinstance(node, dict):
        raise SchemaError(f"{where}: a schema must be an object or a boolean, got {node!r}")
    unknown = sorted(set(node) - KEYWORDS - ANNOTATIONS)
    if unknown:
        raise SchemaError(
            f"{where}: unsupported keyword(s) {', '.join(unknown)}; supported: {', '.join(sorted(KEYWORDS))}; "
            f"say the rule with those, or check it in the job's own validate= hook"
        )
    for name, sub in node.get("properties", {}).items():
        _check_supported(sub, f"{where} properties.{name}")
    for key in ("not", "items", "additionalProperties"):
        if key in node:
            _check_supported(node[key], f"{where} {key}")
    if "pattern" in node:
        try:
            _compiled(node["pattern"])
        except (re.error, TypeError) as error:
            raise SchemaError(f"{where}: pattern {node['pattern']!r} is not a regular expression ({error})") from None


@lru_cache(maxsize=None)
def _compiled(pattern: str) -> re.Pattern[str]:
    # ECMA-262's "$" never matches before a final newline; Python's does, unless it is "\Z".
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def _where(path: tuple[str, ...]) -> str:
    return f"payload field '{'.'.join(path)}'" if path else "payload"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 1] + "…"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    kind = _json_kind(value)
    return kind == name or (name == "number" and kind == "integer")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if _is_type(a, "number") and _is_type(b, "number"):
        return bool(a == b)
    return type(a) is type(b) and a == b


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


# -- the compiled validator ---------------------------------------------------------------------

#: The JSON kind of a value of exactly these types (anything else, a subclass too, asks _json_kind).
_KINDS: dict[type, str] = {
    str: "string",
    dict: "object",
    bool: "boolean",
    int: "integer",
    list: "array",
    tuple: "array",
    type(None): "null",
}


def _rules_kind(value: Any) -> str:
    """Whose rules apply to a value of no type in _KINDS (a float, a subclass, no JSON value)."""
    if isinstance(value, str):
        return "string"
    if _is_type(value, "number"):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return ""


def _accept(value: Any, path: tuple[str, ...], found: list[str]) -> None:
    return None


def _refuse(value: Any, path: tuple[str, ...], found: list[str]) -> None:
    found.append(f"{_where(path)} is not allowed")


def _compile(node: Any) -> Check:
    """The checks of ``node`` as one function, appending its messages in the schema walk's order."""
    if node is True:
        return _accept
    if node is False:
        return _refuse
    kinds: frozenset[str] | None = None
    wanted = ""
    if "type" in node:
        names = node["type"] if isinstance(node["type"], list) else [node["type"]]
        # _is_type: a value's kind is one of the names, and an integer is a number too.
        kinds = frozenset(name for name in names if isinstance(name, str))
        kinds |= {"integer"} if "number" in kinds else set()
        wanted = " or ".join(_article(n) for n in names)
    general = _general_checks(node)
    # The rules of each kind of value (the walk's isinstance tests, asked as the value's JSON kind).
    on_number = _sequence(_number_checks(node))
    by_kind = {
        kind: rule
        for kind, rule in (
            ("string", _sequence(_string_checks(node))),
            ("integer", on_number),
            ("number", on_number),
            ("object", _object_check(node)),
            ("array", _sequence(_array_checks(node))),
        )
        if rule is not None
    }
    if kinds is None and not general and not by_kind:
        return _accept

    def check(value: Any, path: tuple[str, ...], found: list[str]) -> None:
        kind = _KINDS.get(type(value))
        if kinds is not None and (kind or _json_kind(value)) not in kinds:
            found.append(f"{_where(path)} must be {wanted}, got {_article(_json_kind(value))}")
            return  # the other rules would only repeat it
        for general_rule in general:
            general_rule(value, path, found)
        rule = by_kind.get(kind or _rules_kind(value))
        if rule is not None:
            rule(value, path, found)

    def check_kind(value: Any, path: tuple[str, ...], found: list[str]) -> None:
        """``check`` for the common node: a type, rules for some kinds, no enum, const or not."""
        kind = _KINDS.get(type(value))
        if (kind or _json_kind(value)) not in kinds:  # type: ignore[operator]  # kinds is set for check_kind
            found.append(f"{_where(path)} must be {wanted}, got {_article(_json_kind(value))}")
            return
        rule = by_kind.get(kind or _rules_kind(value))
        if rule is not None:
            rule(value, path, found)

    if kinds is None or general:
        return check
    # The common node, a type and its kinds' rules: a value of one of the exact types that type accepts
    # finds its rule in one look-up; any other value (an integral float, a subclass, a wrong kind) is
    # read by check_kind.
    by_type = {exact: by_kind.get(kind) for exact, kind in _KINDS.items() if kind in kinds}
    if "number" in kinds:
        by_type[float] = by_kind.get("number")

    def check_type(value: Any, path: tuple[str, ...], found: list[str]) -> None:
        try:
            rule = by_type[type(value)]
        except KeyError:
            check_kind(value, path, found)
            return
        if rule is not None:
            rule(value, path, found)

    return check_type


def _sequence(rules: list[Check]) -> Check | None:
    if not rules:
        return None
    if len(rules) == 1:
        return rules[0]

    def run(value: Any, path: tuple[str, ...], found: list[str]) -> None:
        for rule in rules:
            rule(value, path, found)

    return run


def _general_checks(node: dict[str, Any]) -> list[Check]:
    """``enum``, ``const`` and ``not``, for a value of any kind."""
    rules: list[Check] = []
    if "enum" in node:
        options = node["enum"]
        # A str is equal (_equal) to exactly the options that are str of its value: a set answers those.
        texts = frozenset(option for option in options if type(option) is str)

        def enum(value: Any, path: tuple[str, ...], found: list[str]) -> None:
            if type(value) is str and value in texts:
                return
            if not any(_equal(value, option) for option in options):
                found.append(
                    f"{_where(path)} must be one of {', '.join(_shown(o) for o in options)}, got {_shown(value)}"
                )

        rules.append(enum)
    if "const" in node:
        constant = node["const"]

        def const(value: Any, path: tuple[str, ...], found: list[str]) -> None:
            if not _equal(value, constant):
                found.append(f"{_where(path)} must be {_shown(constant)}, got {_shown(value)}")

        rules.append(const)
    if "not" in node:
        inner_check = _compile(node["not"])

        def negation(value: Any, path: tuple[str, ...], found: list[str]) -> None:
            inner: list[str] = []
            inner_check(value, path, inner)
            if not inner:
                found.append(f"{_where(path)} must not be {_shown(value)}")

        rules.append(negation)
    return rules


def _string_checks(node: dict[str, Any]) -> list[Check]:
    rules: list[Check] = []
    if "minLength" in node:
        shortest = node["minLength"]

        def min_length(value: str, path: tuple[str, ...], found: list[str]) -> None:
            if len(value) < shortest:
                found.append(f"{_where(path)} must be at least {shortest} characters, got {len(value)}")

        rules.append(min_length)
    if "maxLength" in node:
        longest = node["maxLength"]

        def max_length(value: str, path: tuple[str, ...], found: list[str]) -> None:
            if len(value) > longest:
                found.append(f"{_where(path)} must be at most {longest} characters, got {len(value)}")

        rules.append(max_length)
    if "pattern" in node:
        pattern = node["pattern"]
        search = _compiled(pattern).search

        def matches(value: str, path: tuple[str, ...], found: list[str]) -> None:
            if not search(value):
                found.append(f"{_where(path)} must match {pattern}, got {_shown(value)}")

        rules.append(matches)
    return rules


#: Each bound: its keyword, when a value fails it, and how a message says the rule.
_BOUNDS: tuple[tuple[str, Callable[[Any, Any], bool], str], ...] = (
    ("minimum", lambda value, bound: value < bound, ">="),
    ("maximum", lambda value, bound: value > bound, "<="),
    ("exclusiveMinimum", lambda value, bound: value <= bound, ">"),
    ("exclusiveMaximum", lambda value, bound: value >= bound, "<"),
)


def _number_checks(node: dict[str, Any]) -> list[Check]:
    bounds = [(fails, node[keyword], words) for keyword, fails, words in _BOUNDS if keyword in node]
    if not bounds:
        return []

    def within(value: Any, path: tuple[str, ...], found: list[str]) -> None:
        for fails, bound, words in bounds:
            if fails(value, bound):
                found.append(f"{_where(path)} must be {words} {bound}, got {_shown(value)}")

    return [within]


def _object_check(node: dict[str, Any]) -> Check | None:
    properties = node.get("properties", {})
    required = node.get("required", [])
    extra = node.get("additionalProperties", True)
    if not properties and not required and extra is True:
        return None
    checks = {name: _compile(sub) for name, sub in properties.items()}
    extra_check = _accept if extra is True or extra is False else _compile(extra)  # False: refused before
    refuse_extra = extra is False

    def on_object(value: dict[str, Any], path: tuple[str, ...], found: list[str]) -> None:
        for name in required:
            if name not in value:
                found.append(f"{_where(path)} is missing required field {'.'.join((*path, name))!r}")
        for name, item in value.items():
            if name in checks:
                check = checks[name]
            elif refuse_extra:
                found.append(
                    f"{_where(path)} has unknown field {'.'.join((*path, str(name)))!r}; "
                    f"allowed: {', '.join(properties)}"
                )
                continue
            else:
                check = extra_check
            if check is not _accept:
                check(item, (*path, str(name)), found)

    return on_object


def _array_checks(node: dict[str, Any]) -> list[Check]:
    rules: list[Check] = []
    if "minItems" in node:
        fewest = node["minItems"]

        def min_items(value: Sequence[Any], path: tuple[str, ...], found: list[str]) -> None:
            if len(value) < fewest:
                found.append(f"{_where(path)} must have at least {fewest} items, got {len(value)}")

        rules.append(min_items)
    if "maxItems" in node:
        most = node["maxItems"]

        def max_items(value: Sequence[Any], path: tuple[str, ...], found: list[str]) -> None:
            if len(value) > most:
                found.append(f"{_where(path)} must have at most {most} items, got {len(value)}")

        rules.append(max_items)
    if "items" in node:
        item_check = _compile(node["items"])
        if item_check is not _accept:

            def items(value: Sequence[Any], path: tuple[str, ...], found: list[str]) -> None:
                for index, item in enumerate(value):
                    item_check(item, (*path, str(index)), found)

            rules.append(items)
    return rules
