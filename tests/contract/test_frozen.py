"""``contract.frozen.fill`` against a frozen dataclass's own ``__init__``: the envelope the consumer parses
for every record is the one ``Envelope(...)`` builds (the job's context: tests/runtime/test_job_context.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tiered_jobs.contract import frozen
from tiered_jobs.contract.envelope import Envelope, parse


@dataclasses.dataclass(frozen=True)
class _Point:
    x: int
    y: int = 2
    tags: tuple[str, ...] = ()


def test_fill_builds_what_init_builds_with_the_defaults_of_the_fields_not_given():
    filled = frozen.fill(_Point, {"x": 1}, frozen.defaults(_Point))
    assert vars(filled) == vars(_Point(1)) and filled == _Point(1) and hash(filled) == hash(_Point(1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        filled.x = 3  # type: ignore[misc]


def test_defaults_leave_out_fields_without_one():
    assert frozen.defaults(_Point) == {"y": 2, "tags": ()}


@pytest.mark.parametrize(
    "body",
    [
        {"type": "t.x", "idempotency_key": "k", "payload": {}},
        {
            "type": "t.x",
            "idempotency_key": "k",
            "payload": {"a": [1]},
            "version": 1,
            "published_at": "2026-01-01T00:00:00+00:00",
            "tenant": "acme",
            "expires_at": "2026-01-02T00:00:00+00:00",
            "batch": {"id": "b1"},
        },
    ],
    ids=["required fields only", "every field"],
)
def test_a_parsed_envelope_is_the_one_its_constructor_builds_field_by_field(body):
    parsed = parse(json.dumps(body))
    built = Envelope(**body)
    assert type(parsed) is Envelope
    assert vars(parsed) == vars(built) and parsed == built  # (a payload is a dict: no hash, as for the built one)
    assert set(vars(parsed)) == {f.name for f in dataclasses.fields(Envelope)}


def test_the_envelope_has_no_post_init_that_filling_it_would_skip():
    # parse() fills the envelope without its __init__ (contract/frozen.py), so a check added in a
    # __post_init__ would never run on a received record: it belongs in validate() instead.
    assert not hasattr(Envelope, "__post_init__")
