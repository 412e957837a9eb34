"""The reference reading of a payload schema: a walk of the schema for every value, one rule per line as
JSON Schema states them. The library runs compiled schemas (``tiered_jobs/contract/payloads.py``), and
the tests hold them to this walk: the same messages, in the same order, for every keyword of the subset."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# The library's own wording of each message, so that only the reading of the schema differs.
from tiered_jobs.contract.payloads import _article, _compiled, _equal, _is_type, _json_kind, _shown, _where


def walk(node: Any, value: Any, path: tuple[str, ...], found: list[str]) -> None:
    if node is True:
        return
    if node is False:
        found.append(f"{_where(path)} is not allowed")
        return
    where = _where(path)
    if "type" in node:
        names = node["type"] if isinstance(node["type"], list) else [node["type"]]
        if not any(_is_type(value, name) for name in names):
            found.append(
                f"{where} must be {' or '.join(_article(n) for n in names)}, got {_article(_json_kind(value))}"
            )
            return  # the other rules would only repeat it
    if "enum" in node and not any(_equal(value, option) for option in node["enum"]):
        found.append(f"{where} must be one of {', '.join(_shown(o) for o in node['enum'])}, got {_shown(value)}")
    if "const" in node and not _equal(value, node["const"]):
        found.append(f"{where} must be {_shown(node['const'])}, got {_shown(value)}")
    if "not" in node:
        inner: list[str] = []
        walk(node["not"], value, path, inner)
        if not inner:
            found.append(f"{where} must not be {_shown(value)}")
    if isinstance(value, str):
        _walk_string(node, value, where, found)
    elif _is_type(value, "number"):
        _walk_number(node, value, where, found)
    elif isinstance(value, dict):
        _walk_object(node, value, path, found)
    elif isinstance(value, (list, tuple)):
        _walk_array(node, value, path, found)


def _walk_string(node: dict[str, Any], value: str, where: str, found: list[str]) -> None:
    if "minLength" in node and len(value) < node["minLength"]:
        found.append(f"{where} must be at least {node['minLength']} characters, got {len(value)}")
    if "maxLength" in node and len(value) > node["maxLength"]:
        found.append(f"{where} must be at most {node['maxLength']} characters, got {len(value)}")
    if "pattern" in node and not _compiled(node["pattern"]).search(value):
        found.append(f"{where} must match {node['pattern']}, got {_shown(value)}")


def _walk_number(node: dict[str, Any], value: float, where: str, found: list[str]) -> None:
    checks: tuple[tuple[str, Callable[[float], bool], str], ...] = (
        ("minimum", lambda bound: value < bound, ">="),
        ("maximum", lambda bound: value > bound, "<="),
        ("exclusiveMinimum", lambda bound: value <= bound, ">"),
        ("exclusiveMaximum", lambda bound: value >= bound, "<"),
    )
    for keyword, fails, words in checks:
        if keyword in node and fails(node[keyword]):
            found.append(f"{where} must be {words} {node[keyword]}, got {_shown(value)}")


def _walk_object(node: dict[str, Any], value: dict[str, Any], path: tuple[str, ...], found: list[str]) -> None:
    properties = node.get("properties", {})
    for name in node.get("required", []):
        if name not in value:
            found.append(f"{_where(path)} is missing required field {'.'.join((*path, name))!r}")
    extra = node.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            walk(properties[name], item, (*path, str(name)), found)
        elif extra is False:
            found.append(
                f"{_where(path)} has unknown field {'.'.join((*path, str(name)))!r}; allowed: {', '.join(properties)}"
            )
        else:
            walk(extra, item, (*path, str(name)), found)


def _walk_array(node: dict[str, Any], value: Sequence[Any], path: tuple[str, ...], found: list[str]) -> None:
    where = _where(path)
    if "minItems" in node and len(value) < node["minItems"]:
        found.append(f"{where} must have at least {node['minItems']} items, got {len(value)}")
    if "maxItems" in node and len(value) > node["maxItems"]:
        found.append(f"{where} must have at most {node['maxItems']} items, got {len(value)}")
    if "items" in node:
        for index, item in enumerate(value):
            walk(node["items"], item, (*path, str(index)), found)
