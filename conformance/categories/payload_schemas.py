"""A payload against its type's schema: the JSON Schema subset the consumer checks."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tiered_jobs.contract import payloads
from tiered_jobs.contract.names import Env

from .. import codes
from ..case import Case, case


@contextmanager
def schema_folder(schemas: dict[str, dict[str, Any]]) -> Iterator[Path]:
    """A folder holding ``{job type: schema}``, searched (``TIERED_JOBS_SCHEMA_DIRS``) while the block runs."""
    before = os.environ.get(Env.SCHEMA_DIRS)
    with tempfile.TemporaryDirectory() as folder:
        for job_type, schema in schemas.items():
            Path(folder, f"{job_type}{payloads.SCHEMA_SUFFIX}").write_text(json.dumps(schema), encoding="utf-8")
        os.environ[Env.SCHEMA_DIRS] = folder
        try:
            yield Path(folder)
        finally:
            if before is None:
                os.environ.pop(Env.SCHEMA_DIRS, None)
            else:
                os.environ[Env.SCHEMA_DIRS] = before


#: The schemas the payload cases name (``input.schema``), each the schema of the type ``conformance.schema_<name>``.
SCHEMAS: dict[str, dict[str, Any]] = {
    "money": {
        "type": "object",
        "required": ["account_id", "amount"],
        "additionalProperties": False,
        "properties": {
            "account_id": {"type": "string", "pattern": "^acc_[a-z0-9]+$", "minLength": 5, "maxLength": 20},
            "amount": {"type": "integer", "minimum": -100000, "maximum": 100000, "not": {"const": 0}},
            "currency": {"enum": ["EUR", "USD"]},
            "rate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
            "note": {"type": ["string", "null"]},
            "kind": {"const": "transfer"},
        },
    },
    "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
    "nested": {"type": "object", "properties": {"to": {"type": "object", "required": ["email"]}}},
}


def schema_type(name: str) -> str:
    """The job type whose payload schema is ``SCHEMAS[name]``."""
    return f"conformance.schema_{name}"


def payload_schemas() -> list[Case]:
    ok = {"account_id": "acc_1", "amount": 500}
    inputs: list[tuple[str, str, str, dict[str, Any]]] = [
        ("valid", "every rule kept", "money", ok),
        (
            "valid-all",
            "every optional field kept",
            "money",
            {**ok, "currency": "EUR", "rate": 0.5, "tags": ["a"], "note": None, "kind": "transfer"},
        ),
        ("integer-as-float", "5.0 is an integer in JSON Schema", "money", {**ok, "amount": 5.0}),
        ("required", "a required field missing", "money", {"account_id": "acc_1"}),
        ("additional", "an unknown field where additionalProperties is false", "money", {**ok, "extra": 1}),
        ("type-string", "a number where a string is wanted", "money", {**ok, "account_id": 7}),
        ("type-integer", "1.5 is not an integer", "money", {**ok, "amount": 1.5}),
        ("type-boolean", "true is not an integer", "money", {**ok, "amount": True}),
        ("type-list", "a type list: string or null", "money", {**ok, "note": 3}),
        ("pattern", "pattern searches, anchored by ^ and $", "money", {**ok, "account_id": "ACC_1"}),
        (
            "pattern-final-newline",
            "$ is ECMA-262's: a final newline does not match",
            "money",
            {**ok, "account_id": "acc_1\n"},
        ),
        ("min-length", "minLength counts characters", "money", {**ok, "account_id": "acc_"}),
        ("max-length", "maxLength counts characters", "money", {**ok, "account_id": "acc_" + "a" * 17}),
        ("minimum", "below minimum", "money", {**ok, "amount": -100001}),
        ("maximum-edge", "maximum is inclusive", "money", {**ok, "amount": 100000}),
        ("maximum", "above maximum", "money", {**ok, "amount": 100001}),
        ("not", "not: 0 is refused", "money", {**ok, "amount": 0}),
        ("exclusive-minimum", "exclusiveMinimum: the bound itself is refused", "money", {**ok, "rate": 0}),
        ("exclusive-maximum", "exclusiveMaximum: the bound itself is refused", "money", {**ok, "rate": 1}),
        ("enum", "a value outside enum", "money", {**ok, "currency": "GBP"}),
        ("const", "a value other than const", "money", {**ok, "kind": "refund"}),
        ("min-items", "fewer items than minItems", "money", {**ok, "tags": []}),
        ("max-items", "more items than maxItems", "money", {**ok, "tags": ["a", "b", "c", "d"]}),
        ("items", "each item keeps items' schema", "money", {**ok, "tags": ["a", 2]}),
        ("several", "every problem is named, not only the first", "money", {"amount": "5", "extra": True}),
        ("additional-schema", "additionalProperties as a schema", "counts", {"a": 1, "b": "two"}),
        ("nested", "a nested object's field is named by its dotted path", "nested", {"to": {}}),
    ]
    found = []
    with schema_folder({schema_type(name): schema for name, schema in SCHEMAS.items()}):
        for name, text, schema, payload in inputs:
            problems = payloads.problems(schema_type(schema), payload)
            expect = {"problems": codes.payload_problems(problems)} if problems else {"valid": True}
            found.append(case(name, text, {"schema": schema, "payload": payload}, expect))
    return found
