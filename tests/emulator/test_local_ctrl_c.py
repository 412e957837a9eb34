"""Ctrl-C on ``make up``, as a terminal sends it (SIGINT to the whole process group, the execution environments'
worker processes too): ``stopping…``, ``stopped.``, exit 0 and no traceback."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from emulator.deploy import REPO_ROOT
from tests.emulator.local_support import HINTS_END

pytestmark = pytest.mark.e2e

#: Bounds on waits for events, far above their usual seconds: a synthesis on a loaded machine (one interrupted
#: while it synthesizes ends once the CDK's own process has; under a load of 20 on 2 cores, past 120 s).
READY_SECONDS = 600
EVENT_SECONDS = 600


def _lines(process: subprocess.Popen[str]) -> queue.Queue[str | None]:
    """Every line ``process`` prints, then ``None`` at the end of its output."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _until(lines: queue.Queue[str | None], seen: list[str], done, timeout: float) -> None:
    """Read lines into ``seen`` until one makes ``done`` true (each wait bounded by ``timeout``)."""
    while True:
        line = lines.get(timeout=timeout)
        assert line is not None, "".join(seen)
        seen.append(line)
        if done(line):
            return


def test_ctrl_c_stops_with_two_lines_and_no_traceback_after_a_job_ran():
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "up"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        start_new_session=True,  # its own process group, as a terminal's foreground job has
    )
    seen: list[str] = []
    try:
        lines = _lines(process)
        _until(lines, seen, lambda line: line.startswith(HINTS_END), READY_SECONDS)
        exports = dict(
            line.strip()[len("export ") :].split("=", 1) for line in seen if line.strip().startswith("export ")
        )
        env = {**os.environ, **exports}
        env.pop("AWS_SESSION_TOKEN", None)
        published = subprocess.run(
            [
                str(Path(sys.executable).with_name("tiered-jobs")),
                "publish",
                "payments.update_balance",
                "--key",
                "ctrl-c-1",
                "--payload",
                '{"account_id": "acc_ctrl_c", "amount": 5}',
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=EVENT_SECONDS,
        )
        assert published.returncode == 0, published.stderr
        # A worker process runs the job: the one a terminal's Ctrl-C interrupted mid-read, with a traceback.
        _until(lines, seen, lambda line: "job succeeded" in line and "ctrl-c-1" in line, EVENT_SECONDS)
        before = len(seen)

        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=EVENT_SECONDS)
        while (line := lines.get(timeout=EVENT_SECONDS)) is not None:
            seen.append(line)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    after = "".join(seen[before:])
    assert code == 0, after
    assert "Traceback" not in after and "KeyboardInterrupt" not in after, after
    assert [line.strip() for line in seen[before:] if line.strip() in ("stopping…", "stopped.")] == [
        "stopping…",
        "stopped.",
    ], after


def test_ctrl_c_while_starting_says_stopped_with_no_traceback():
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "up", "--no-view"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        start_new_session=True,
    )
    seen: list[str] = []
    try:
        lines = _lines(process)
        _until(lines, seen, lambda line: line.startswith("Synthesizing"), READY_SECONDS)  # seconds before ready
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=EVENT_SECONDS)
        while (line := lines.get(timeout=EVENT_SECONDS)) is not None:
            seen.append(line)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    after = "".join(seen[1:])
    assert code == 130, after  # interrupted, as a shell reports Ctrl-C
    assert "Traceback" not in after and after.strip().endswith("stopped."), after
