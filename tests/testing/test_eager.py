"""Eager mode: ``publish`` runs the job in-process, after every check a publish makes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tiered_jobs import publisher as publishing
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import InvalidJobError, Publisher, publish, publish_batch
from tiered_jobs.runtime.registry import JobRegistry
from tiered_jobs.testing import JobFailed, JobRunner, eager

ROUTES = {"testjobs.*": "critical", "policy.*": "bulk"}


@pytest.fixture(autouse=True)
def _no_default_publisher():
    publishing.configure(None)
    yield
    publishing.configure(None)


def test_publish_runs_the_job_at_once_and_the_default_publisher_comes_back(recorded):
    before = publishing.configured()
    with eager(routes=ROUTES) as jobs:
        result = publish("testjobs.ok", {"label": "signup"}, "evt-1")
        publish_batch([{"job_type": "testjobs.ok", "payload": {"label": "again"}, "idempotency_key": "evt-2"}])
    assert result.ok and result.tier == "critical"
    assert recorded == [("evt-1", {"label": "signup"}), ("evt-2", {"label": "again"})]
    assert [run.outcome for run in jobs.runs] == ["succeeded", "succeeded"]
    assert publishing.configured() is before


def test_a_job_is_run_on_the_tier_its_route_names():
    registry = JobRegistry()
    seen = []

    @registry.job("policy.where")
    def where(payload, ctx):
        seen.append((ctx.tier, ctx.attempt))

    with eager(routes=ROUTES, runner=JobRunner(registry=registry)):
        publish("policy.where", {}, "w-1")
    assert seen == [("bulk", 1)]


@pytest.mark.parametrize(
    "job_type, payload, refused",
    [
        ("testjobs.ok", {}, "label"),  # its payload schema
        ("other.thing", {"label": "x"}, "no route for job type 'other.thing'"),
        ("testjobs.ok", {"label": "x" * 10, "data": {"blob": "x" * 1_100_000}}, "over the"),  # SQS's size
    ],
)
def test_what_publish_refuses_is_refused_and_nothing_runs(job_type, payload, refused, recorded):
    with eager(routes=ROUTES) as jobs, pytest.raises(InvalidJobError, match=refused):
        publish(job_type, payload, "bad-1")
    assert jobs.runs == [] and recorded == []


def test_a_failed_job_raises_from_publish_with_its_classification():
    with eager(routes=ROUTES) as jobs, pytest.raises(JobFailed) as failed:
        publish("testjobs.permanent", {"reason": "gone"}, "p-1")
    assert failed.value.classification == "permanent" and failed.value.outcome == "permanent"
    with eager(routes=ROUTES, raise_failures=False) as jobs:
        publish("testjobs.transient", {"fail_times": 1}, "t-1")
    (run,) = jobs.runs
    assert run.outcome == "retry" and run.classification == "transient"


def test_a_job_due_later_runs_at_once(recorded):
    with eager(routes=ROUTES) as jobs:
        publish("testjobs.ok", {"label": "soon"}, "d-1", delay=60)
        scheduled = publish(
            "testjobs.ok", {"label": "tomorrow"}, "d-2", at=datetime.now(timezone.utc) + timedelta(days=1)
        )
    assert [key for key, _ in recorded] == ["d-1", "d-2"]
    assert scheduled.schedule_name and len(jobs.runs) == 2


def test_an_existing_publisher_gets_its_transport_back():
    real_sqs = object()
    publisher = Publisher({"critical": "https://sqs.example/critical"}, Routes(ROUTES), sqs=real_sqs)
    with eager(publisher=publisher) as jobs:
        publisher.publish("testjobs.ok", {"label": "mine"}, "m-1")
    assert jobs.runs[0].outcome == "succeeded"
    assert publisher.sqs is real_sqs and "one_time_jobs" not in vars(publisher)


def test_eager_takes_routes_or_a_publisher():
    with pytest.raises(ValueError, match="either routes"), eager():
        pass


def test_unique_and_debounced_jobs_run_at_once_without_a_table_or_a_schedule(recorded):
    """Eager mode has neither a unique jobs' table nor Scheduler: each publish runs its job, which has
    finished (its lock released) before the next publish, and a debounced one runs at once."""
    with eager(routes=ROUTES) as jobs:
        first = publish("testjobs.ok", {"label": "one"}, "u-1", unique_for=600)
        second = publish("testjobs.ok", {"label": "one"}, "u-1", unique_for=600)
        burst = publish("testjobs.ok", {"label": "three"}, "d-1", debounce=60)
    assert first.ok and second.ok and not second.already_queued
    assert burst.debounced and burst.fire_at is not None
    assert [payload["label"] for _, payload in recorded] == ["one", "three"]  # the second: a duplicate
    assert [run.outcome for run in jobs.runs] == ["succeeded", "duplicate", "succeeded"]


def test_a_job_that_checkpoints_runs_its_steps_within_its_publish():
    registry = JobRegistry()
    steps = []

    @registry.job("policy.stepped", max_steps=3)
    def stepped(payload, ctx):
        steps.append((ctx.step, ctx.state, ctx.attempt))
        if ctx.step < 2:
            return ctx.checkpoint({"cursor": ctx.step + 1})
        return {"steps": ctx.step + 1}

    with eager(routes=ROUTES, runner=JobRunner(registry=registry)) as jobs:
        publish("policy.stepped", {}, "s-1")
    assert steps == [(0, None, 1), (1, {"cursor": 1}, 1), (2, {"cursor": 2}, 1)]  # steps are not attempts
    (run,) = jobs.runs
    assert (run.outcome, run.step, run.result) == ("succeeded", 2, {"steps": 3})
