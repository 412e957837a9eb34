"""The compiled payload schemas (what every publish and consume runs) say exactly what the reference walk
says: the same messages, in the same order, for every keyword of the subset and every kind of value."""

from __future__ import annotations

import enum
import itertools
import json
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any

import pytest

from tests.support.schema_walk import walk
from tiered_jobs.contract import payloads

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FOLDERS = (ROOT / "tests" / "support" / "jobs" / "schemas", ROOT / "functions" / "jobs" / "schemas")

#: Every keyword of the subset, nested, with boolean schemas and a schema for additional fields.
EVERY_KEYWORD: dict[str, Any] = {
    "type": "object",
    "required": ["name", "count", "kind"],
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
        "count": {"type": ["integer", "null"], "minimum": 1, "maximum": 10, "not": {"const": 7}},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "kind": {"enum": ["a", "b", 1, None, [1], {"x": 1}]},
        "fixed": {"const": {"k": [1, 2]}},
        "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "maxLength": 3}},
        "open": True,
        "never": False,
        "nested": {
            "type": "object",
            "properties": {"deep": {"type": "array", "items": {"type": "object", "required": ["id"]}}},
            "additionalProperties": False,
        },
        "untyped": {"minimum": 3, "maxLength": 1, "minItems": 1, "required": ["z"]},
    },
    "additionalProperties": {"type": "integer"},
}


class _Text(str):
    pass


class _Count(enum.IntEnum):
    SEVEN = 7


#: Values of every JSON kind, of types that are not JSON's, and of subclasses of its types.
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    7,
    11,
    -1,
    0.0,
    0.5,
    1.0,
    2.5,
    float("inf"),
    "",
    "a",
    "ab",
    "abc\n",
    "abcdef",
    "AB",
    "a b",
    [],
    [1],
    ["x", "yyyy"],
    ["a", "b", "c"],
    (1, 2),
    {},
    {"x": 1},
    {"k": [1, 2]},
    {"id": 1},
    {"deep": [{"id": 1}, {}]},
    {"deep": [{}], "other": 1},
    object(),  # no JSON value: its kind is its type's name, which no rule is for
    b"ab",
    _Text("ab"),
    _Count.SEVEN,
    OrderedDict(x=1),
    deque([1]),
]


def _reference(schema: Any, value: Any) -> list[str]:
    found: list[str] = []
    walk(schema, value, (), found)
    return found


def _compiled(schema: Any, value: Any) -> list[str]:
    found: list[str] = []
    payloads._compile(schema)(value, (), found)
    return found


def _variants(schema: dict[str, Any]) -> list[Any]:
    """Every value above, and an object of the schema's fields each set to every value (or dropped)."""
    base = {name: "ab" for name in schema.get("properties", {})}
    fields = [*schema.get("properties", {}), "unknown"]
    varied = [{**base, field: value} for field, value in itertools.product(fields, VALUES)]
    dropped = [{k: v for k, v in base.items() if k != field} for field in fields]
    return [*VALUES, *varied, *dropped]


@pytest.mark.parametrize("schema", [EVERY_KEYWORD, True, False, {}, {"type": []}, {"type": ["number", "string"]}])
def test_every_keyword_gives_the_reference_messages(schema):
    cases = _variants(schema) if isinstance(schema, dict) else VALUES
    for value in cases:
        assert _compiled(schema, value) == _reference(schema, value), value


def test_the_rules_found_nested_are_named_by_their_path():
    messages = _compiled(EVERY_KEYWORD, {"name": "ab", "count": 7, "kind": "c", "nested": {"deep": [{}], "x": 1}})
    assert messages == _reference(
        EVERY_KEYWORD, {"name": "ab", "count": 7, "kind": "c", "nested": {"deep": [{}], "x": 1}}
    )
    assert messages == [
        "payload field 'count' must not be 7",
        "payload field 'kind' must be one of 'a', 'b', 1, None, [1], {'x': 1}, got 'c'",
        "payload field 'nested.deep.0' is missing required field 'nested.deep.0.id'",
        "payload field 'nested' has unknown field 'nested.x'; allowed: deep",
    ]


@pytest.mark.parametrize("path", sorted(p for folder in SCHEMA_FOLDERS for p in folder.glob("*.schema.json")))
def test_every_shipped_schema_gives_the_reference_messages(path):
    schema = json.loads(path.read_text())
    for value in _variants(schema):
        assert _compiled(schema, value) == _reference(schema, value), value


def test_a_type_is_compiled_once_per_search_path(tmp_path, monkeypatch):
    monkeypatch.setattr(payloads, "_added_dirs", [])
    (tmp_path / "x.y.schema.json").write_text(json.dumps({"type": "object", "required": ["a"]}))
    assert payloads.problems("x.y", {}) == []  # not on the search path yet
    payloads.add_schema_dir(tmp_path)
    assert payloads.problems("x.y", {}) == ["payload is missing required field 'a'"]
    assert payloads.checker("x.y") is payloads.checker("x.y")
