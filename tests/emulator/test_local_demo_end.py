"""The demo's last word: "Every expectation held" only when the final alarm table is what the story caused."""

from __future__ import annotations

import io
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from rich.console import Console

from demo import end, live, start, story
from demo.context import Demo, Expectation
from tiered_jobs.contract import payloads
from tiered_jobs.contract.names import Alarms
from tiered_jobs.operations.status import TierStatus

TIERS = ("critical", "transactional", "bulk")


def final_rows(**states: str) -> list[TierStatus]:
    """Every alarm OK, except ``tier__kind="STATE"`` (kind with underscores)."""
    rows = []
    for tier in TIERS:
        alarms = {kind: states.get(f"{tier}__{kind.replace('-', '_')}", "OK") for kind in Alarms.KINDS}
        rows.append(TierStatus(tier=tier, visible=0, in_flight=0, delayed=0, dlq=0, alarms=alarms, succeeded=1))
    return rows


def check(rows: list[TierStatus]) -> Expectation:
    demo = Demo(session=None, console=Console(file=io.StringIO()))
    end.check_final_alarms(demo, rows)
    (expectation,) = demo.expectations
    return expectation


def test_the_alarms_the_story_causes_may_end_in_alarm():
    caused = check(final_rows(critical__failure_rate="ALARM", transactional__failure_rate="ALARM"))
    assert caused.ok, caused.detail
    assert "critical failure-rate" in caused.detail and "dead-lettered 4 payments" in caused.detail
    assert check(final_rows()).ok


@pytest.mark.parametrize(
    "states, named",
    [
        ({"bulk__failure_rate": "ALARM"}, "bulk failure-rate: ALARM"),
        ({"critical__dlq_depth": "ALARM"}, "critical dlq-depth: ALARM"),  # the replay should have cleared it
        ({"transactional__errors": "INSUFFICIENT_DATA"}, "transactional errors: INSUFFICIENT_DATA"),
    ],
)
def test_any_other_alarm_not_ok_fails_the_end_naming_it(states, named):
    expectation = check(final_rows(**states))
    assert not expectation.ok and named in expectation.detail


def test_no_alarm_read_is_no_pass():
    assert not check([TierStatus("critical", 0, 0, 0, 0, alarms={})]).ok


def test_run_demo_checks_the_final_table_it_prints(monkeypatch, tmp_path):
    """The story's steps all pass, but bulk's failure-rate alarm ends in ALARM: the run fails, and says so."""
    printed_tables: list[list[TierStatus]] = []

    @contextmanager
    def fake_session(**_settings):
        yield SimpleNamespace(
            deployment=SimpleNamespace(stack_name="TieredJobs-local", gaps={}, stage="local"),
            endpoint=SimpleNamespace(url="http://127.0.0.1:1"),
            code_source=SimpleNamespace(directory=tmp_path),
        )

    final = final_rows(bulk__failure_rate="ALARM")
    monkeypatch.setattr(start, "LocalSession", fake_session)
    monkeypatch.setattr(payloads, "_added_dirs", [])  # the folders run_demo adds stay this test's
    monkeypatch.setattr(story, "run_steps", lambda demo: demo.expect("story", "every step", True))
    monkeypatch.setattr(live, "safe_table", lambda session, title="Tiers": title)
    monkeypatch.setattr(end, "rows", lambda session: final)
    monkeypatch.setattr(end, "table", lambda session, title, snapshot: printed_tables.append(snapshot) or title)
    console = Console(record=True, width=200)

    assert story.run_demo(console) == 1
    output = console.export_text()
    assert printed_tables == [final]
    assert "bulk failure-rate: ALARM" in output
    assert "Some expectations failed." in output and "Every expectation held." not in output
    # The demo's publishers check the deployed app's payload schemas, as `emulator up` tells a publisher to.
    assert payloads.schema_dirs()[0] == (tmp_path / "schemas").resolve()


def test_the_steps_run_in_order_and_a_broken_one_is_a_failed_expectation(monkeypatch):
    """``run_steps`` subscribes the inbox first, runs every step in order, and a step that raises is one
    failed expectation named after it, the story going on."""
    ran: list[str] = []

    def payments(demo):
        ran.append("payments")

    def broken(demo):
        ran.append("broken")
        raise RuntimeError("moto went away")

    def schedules(demo):
        ran.append("schedules")

    monkeypatch.setattr(story, "STEPS", (payments, broken, schedules))
    monkeypatch.setattr(
        story.Demo,
        "__post_init__",
        lambda self: setattr(self, "inbox", SimpleNamespace(subscribe=lambda: ran.append("inbox"))),
    )
    demo = Demo(session=None, console=Console(file=io.StringIO()))

    assert story.run_steps(demo) is False
    assert ran == ["inbox", "payments", "broken", "schedules"]
    (failed,) = demo.expectations
    assert (failed.step, failed.ok, failed.detail) == ("broken", False, "RuntimeError: moto went away")


def test_the_story_is_its_steps_in_order():
    assert [step.__name__ for step in story.STEPS] == [
        "outage_begins",
        "payments_with_duplicates",
        "payment_fans_out",
        "emails",
        "transient_outages",
        "pause_and_resume",
        "breaker_opened",
        "rate_limited_emails",
        "bad_deploy_and_replay",
        "scheduled_jobs",
        "breaker_closes",
        "flood",
    ]
