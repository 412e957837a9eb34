"""``JobContext._for_run``, the consumer's constructor on every job, against the dataclass's own ``__init__``."""

from __future__ import annotations

import dataclasses

import pytest

from tiered_jobs.runtime.progress import discard
from tiered_jobs.runtime.registry import JobContext


def _clock() -> int:
    return 1234


def _required() -> dict:
    return {
        "job_type": "t.x",
        "idempotency_key": "k",
        "attempt": 2,
        "max_attempts": 5,
        "tier": "critical",
        "message_id": "m",
        "logger": None,
        "lambda_remaining_ms": _clock,
    }


def _as_the_consumer_gives_them() -> dict:
    return {
        **_required(),
        "settings": object(),
        "client": lambda service: service,
        "time_limit_seconds": 30.0,
        "margin_ms": 2000,
        "cancel_check": lambda: True,
        "progress_sink": discard,
        "max_steps": 7,
        "previous_result_reader": lambda: {"n": 1},
    }


@pytest.mark.parametrize("values", [_required(), _as_the_consumer_gives_them()], ids=["defaults", "every field"])
def test_the_fast_constructor_builds_the_context_the_dataclass_builds_field_by_field(values):
    fast, built = JobContext._for_run(**values), JobContext(**values)
    assert type(fast) is JobContext
    assert vars(fast) == vars(built)  # every field, the defaults and the start time (_started_ms) included
    assert {f.name for f in dataclasses.fields(JobContext)} == set(vars(fast))
    assert fast == built and hash(fast) == hash(built) and repr(fast) == repr(built)
    assert fast.remaining_time_ms() == built.remaining_time_ms()


def test_a_context_from_the_fast_constructor_is_as_frozen_and_as_replaceable_as_any():
    fast = JobContext._for_run(**_as_the_consumer_gives_them())
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.attempt = 3  # type: ignore[misc]
    later = dataclasses.replace(fast, step=2, state={"cursor": 1})  # what a later step's run gets (runtime/steps.py)
    assert (later.step, later.state, later.max_steps, later.tier) == (2, {"cursor": 1}, 7, "critical")
