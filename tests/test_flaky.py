"""``make flaky`` (``tests/support/flaky.py``): N runs of the timing-sensitive modules, each failure named
with its test and its message, with or without stress-ng's load."""

from __future__ import annotations

import pytest

from tests.support import flaky

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
  <testcase classname="tests.emulator.test_local_pause" name="test_paused" time="4.1"/>
  <testcase classname="tests.emulator.test_local_circuit_breaker" name="test_an_outage" time="90">
    <failure message="AssertionError: waited 600.0 s (limit 600 s) for bulk's letters, saw {'letters': 29}&#10;more"
      >traceback</failure>
  </testcase>
  <testcase classname="tests.emulator.test_local_e2e" name="test_smoke" time="1">
    <error message="">boom</error>
  </testcase>
</testsuite></testsuites>
"""


def test_a_runs_junit_report_gives_its_count_and_each_failed_or_errored_test_with_its_first_line():
    tests, failures = flaky.failures_in(JUNIT, run=2)
    assert tests == 3
    assert failures == [
        flaky.Failure(
            2,
            "tests.emulator.test_local_circuit_breaker::test_an_outage",
            "AssertionError: waited 600.0 s (limit 600 s) for bulk's letters, saw {'letters': 29}",
        ),
        flaky.Failure(2, "tests.emulator.test_local_e2e::test_smoke", "boom"),
    ]


def test_the_report_names_each_failing_test_with_how_many_runs_it_failed_and_why():
    failure = flaky.Failure(2, "tests.x::test_y", "waited 30.0 s for a message, saw []")
    results = [
        flaky.RunResult(1, 10, (), 12.0, 0),
        flaky.RunResult(2, 10, (failure,), 13.0, 1),
    ]
    text = flaky.report(results, loaded=True)
    assert text.splitlines() == [
        "flaky: 2 runs under stress-ng load",
        "  run 1: 10 tests, 0 failed, 12 s (pytest exit 0)",
        "  run 2: 10 tests, 1 failed, 13 s (pytest exit 1)",
        "failed:",
        "  tests.x::test_y: 1 of 2 runs",
        "    run 2: waited 30.0 s for a message, saw []",
    ]
    assert flaky.report(results[:1], loaded=False).endswith(
        "without load\n  run 1: 10 tests, 0 failed, 12 s (pytest exit 0)\nno test failed"
    )


def test_without_stress_ng_a_loaded_run_goes_on_unloaded_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(flaky.shutil, "which", lambda name: None)
    ran = []

    def run_once(run, modules, workers, load):
        ran.append((run, tuple(modules), workers, load))
        return flaky.RunResult(run, 1, (), 0.0, 0)

    monkeypatch.setattr(flaky, "run_once", run_once)
    assert flaky.main(["--runs", "2", "--load", "tests/emulator/test_local_pause.py"]) == 0
    assert ran == [(n, ("tests/emulator/test_local_pause.py",), "2", None) for n in (1, 2)]
    out = capsys.readouterr().out
    assert "stress-ng is not installed" in out and "flaky: 2 runs without load" in out


def test_with_stress_ng_each_run_gets_one_cpu_worker_per_core_and_a_failure_fails_the_target(monkeypatch):
    monkeypatch.setattr(flaky.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(flaky.os, "cpu_count", lambda: 2)
    loads = []

    def run_once(run, modules, workers, load):
        loads.append(load)
        return flaky.RunResult(run, 1, (flaky.Failure(run, "tests.x::test_y", "no"),), 0.0, 1)

    monkeypatch.setattr(flaky, "run_once", run_once)
    assert flaky.main(["--runs", "1", "--load"]) == 1
    assert loads == [["/usr/bin/stress-ng", "--cpu", "2", "--timeout", "600s", "--quiet"]]


def test_a_run_count_below_one_is_refused_by_name():
    with pytest.raises(SystemExit):
        flaky.main(["--runs", "0"])
