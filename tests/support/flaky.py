"""``make flaky``: run the timing-sensitive test modules N times in a row, optionally under CPU load, and
report every failure with its test.

A test that fails by chance is a defect (issue #38): its waits should be for the event itself, with
bounds far above any honest run. This is how such a test is found before a fresh clone's ``make test``
finds it. Each run is a separate pytest process on parallel workers, as ``make test`` runs; its results
are read from the JUnit XML pytest writes, so a failure is reported with its test and the first line of
its message (the local-mode waits say what they waited for and what they saw).

``--load`` runs ``stress-ng --cpu <cores>`` beside each run (Debian's ``stress-ng`` package), so the
tests meet a machine as busy as a shared CI runner; without stress-ng the runs go on unloaded, and the
report says so. The load is started per run and stopped by its own process id when the run ends, and
it never lasts more than :data:`LOAD_BURST_SECONDS` (a burst on a machine others share, not a siege).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The repository's root: the modules below are named from it, as ``make flaky`` runs pytest there.
ROOT = Path(__file__).resolve().parents[2]
#: The modules whose tests wait on time passing: every local-mode scenario (the ``test_local_`` modules of
#: ``tests/emulator``: the breaker, pause, schedules, alarms, triggers, the end-to-end runs, Ctrl-C), the
#: composed invariant and the rate limit's run, the pollers' control. Local mode's modules are found by
#: name, so a new one is in.
TIMING_SENSITIVE = (
    *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests" / "emulator").glob("test_local_*.py")),
    "tests/emulator/test_store_reads.py",
    "tests/reliability/test_invariant.py",
    "tests/reliability/test_rate_limit.py",
    "tests/replay/test_breaker.py",
)


#: The longest one run's load lasts (stress-ng's own ``--timeout``): a run that takes longer finishes unloaded.
LOAD_BURST_SECONDS = 600


@dataclass(frozen=True)
class Failure:
    """One test that failed (or errored) in one run, with the first line of its message."""

    run: int
    test: str
    message: str


@dataclass(frozen=True)
class RunResult:
    """One pytest run of the modules: how many tests it ran, what failed, how long it took."""

    run: int
    tests: int
    failures: tuple[Failure, ...]
    seconds: float
    exit_code: int


def failures_in(junit_xml: str, run: int) -> tuple[int, list[Failure]]:
    """The number of test cases and the failed or errored ones in a JUnit XML report."""
    root = ElementTree.fromstring(junit_xml)
    cases = list(root.iter("testcase"))
    found = []
    for case in cases:
        for outcome in ("failure", "error"):
            element = case.find(outcome)
            if element is None:
                continue
            test = f"{case.get('classname', '')}::{case.get('name', '')}"
            text = (element.get("message") or element.text or outcome).strip()
            found.append(Failure(run, test, text.splitlines()[0] if text else outcome))
    return len(cases), found


def stress_command(cores: int) -> list[str] | None:
    """``stress-ng`` on every core for one burst, or ``None`` when it is not installed."""
    binary = shutil.which("stress-ng")
    return [binary, "--cpu", str(cores), "--timeout", f"{LOAD_BURST_SECONDS}s", "--quiet"] if binary else None


def report(results: Sequence[RunResult], *, loaded: bool) -> str:
    """The summary: each run's counts, then each failing test with how many runs it failed and why."""
    lines = [f"flaky: {len(results)} runs{' under stress-ng load' if loaded else ' without load'}"]
    for result in results:
        lines.append(
            f"  run {result.run}: {result.tests} tests, {len(result.failures)} failed, "
            f"{result.seconds:.0f} s (pytest exit {result.exit_code})"
        )
    by_test = Counter(failure.test for result in results for failure in result.failures)
    if not by_test:
        clean = all(result.exit_code == 0 for result in results)
        lines.append("no test failed" if clean else "no test failed, but a run did not exit 0: read its output above")
        return "\n".join(lines)
    lines.append("failed:")
    for test, count in by_test.most_common():
        lines.append(f"  {test}: {count} of {len(results)} runs")
        for result in results:
            lines.extend(f"    run {f.run}: {f.message}" for f in result.failures if f.test == test)
    return "\n".join(lines)


def run_once(run: int, modules: Sequence[str], workers: str, load: list[str] | None) -> RunResult:
    """One pytest run (``-p no:randomly``: the modules' own order), beside ``load`` if given."""
    with tempfile.TemporaryDirectory(prefix="tiered-jobs-flaky-") as folder:
        junit = Path(folder) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-n", workers, "--dist", "load"]
        command += [f"--junitxml={junit}", *modules]
        stress = subprocess.Popen(load, stdout=subprocess.DEVNULL) if load else None
        started = time.monotonic()
        try:
            exit_code = subprocess.call(command)
        finally:
            if stress is not None:
                stress.send_signal(signal.SIGTERM)  # its own process id: stress-ng stops its workers with it
                stress.wait()
        seconds = time.monotonic() - started
        tests, failures = failures_in(junit.read_text(encoding="utf-8"), run) if junit.is_file() else (0, [])
    if exit_code != 0 and not failures:  # a collection error or a crash: no test case to name
        failures = [Failure(run, "(the run itself)", f"pytest exited {exit_code} with no failed test case")]
    return RunResult(run, tests, tuple(failures), seconds, exit_code)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make flaky", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs in a row (N)")
    parser.add_argument("--load", action="store_true", help="stress-ng --cpu <cores> beside each run, if installed")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers per run")
    parser.add_argument("modules", nargs="*", default=list(TIMING_SENSITIVE))
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    load = stress_command(os.cpu_count() or 1) if args.load else None
    if args.load and load is None:
        print("flaky: stress-ng is not installed (Debian: apt-get install stress-ng): the runs go on without load")
    results = []
    for run in range(1, args.runs + 1):
        print(f"flaky: run {run} of {args.runs}", flush=True)
        results.append(run_once(run, args.modules, args.workers, load))
    print(report(results, loaded=load is not None))
    return 0 if all(not result.failures for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
