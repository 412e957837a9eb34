"""The consumer's payload validator held to jsonschema's own reading of the same schema."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema

from tiered_jobs.contract import payloads


def disagreements(job_type: str, base: Mapping[str, Any], fields: Iterable[str], values: Iterable[Any]) -> list[dict]:
    """The payloads (``base`` with one of ``fields`` set to one of ``values``) that the validator and
    jsonschema (Draft 2020-12) judge differently: none, for a schema within the validator's subset."""
    checker = jsonschema.Draft202012Validator(payloads.schema(job_type))
    found = []
    for field, value in itertools.product(list(fields), list(values)):
        payload = {**base, field: value}
        if (payloads.problems(job_type, payload) == []) != checker.is_valid(payload):
            found.append(payload)
    return found
