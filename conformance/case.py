"""One vector case, and what every category's cases share: the job they build, its time, a payload's padding.

Each case is ``{"name", "description", "input", "expect"}``. An input is written by hand to sit on a
rule or its edge; an expectation is never written by hand but asked of the contract, so the files
change when a rule does (and the staleness test says so). Where the rule lives in the publisher
rather than the contract (a delay, a deadline), it is stated once from the contract's limits, and the
test holds the Python publisher to it.
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract import envelope
from tiered_jobs.contract.sqs_limits import message_size

Case = dict[str, Any]

#: The job every case builds when its category does not vary them.
JOB_TYPE = "conformance.job"
#: The ``published_at`` of every envelope a case builds: the form every publisher stamps (24 characters).
PUBLISHED_AT = "2026-12-07T10:00:00.000Z"
#: The clock of the timing cases.
NOW = "2026-12-07T10:00:00.000Z"


def case(name: str, description: str, given: dict[str, Any], expect: dict[str, Any]) -> Case:
    """One vector: its name, one line saying the rule it shows, what goes in and what must come out."""
    return {"name": name, "description": description, "input": given, "expect": expect}


def padded(payload: dict[str, Any], pad: dict[str, Any] | None) -> dict[str, Any]:
    """The payload a case means: ``pad`` (``{"field", "char", "count"}``) sets ``payload[field]`` to ``char * count``,
    so a case near 1 MiB stays a few lines of JSON."""
    if not pad:
        return dict(payload)
    return {**payload, pad["field"]: pad["char"] * pad["count"]}


def sized_job_body(key: str, size: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(payload, pad)`` of a ``conformance.sized`` job with key ``key`` whose message is ``size`` bytes."""
    base = envelope.build("conformance.sized", {"data": ""}, key, published_at=PUBLISHED_AT).to_json()
    pad = {"field": "data", "char": "x", "count": size - message_size(base)}
    return {"data": ""}, pad
