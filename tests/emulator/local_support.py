"""Helpers shared by the local mode's tests."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from emulator.deploy import LOCAL_TIER_SETTINGS
from functions.jobs.payments import TABLE as PAYMENTS_TABLE

T = TypeVar("T")


#: How often :func:`wait_until` looks again: often enough that a wait ends a moment after its event.
POLL_SECONDS = 0.05
#: A wait's default bound: far above any honest run on a loaded machine (a wait ends at its event; the
#: bound only stops a hang). A failure that waited this long says what it saw.
PATIENCE_SECONDS = 300.0

#: Local mode's profile for the tests' sessions, its 5 s function timeout raised to 30 s. On a loaded
#: machine a new execution environment's first invocation passed 5 s: the batch timed out, the
#: environment was replaced, and the next one's first invocation timed out again (``make flaky`` saw the
#: critical tier's six messages time out ten times over five minutes, none applied).
TEST_TIER_SETTINGS = {**LOCAL_TIER_SETTINGS, "timeout_seconds": 30}


def wait_until(
    condition: Callable[[], T],
    timeout: float = PATIENCE_SECONDS,
    what: str = "condition",
    *,
    seen: Callable[[], object] | None = None,
) -> T:
    """Poll ``condition`` until it holds and return its value; after ``timeout`` seconds fail with
    "waited N s for ``what``, saw ...": ``seen()`` if given (the state the condition reads, so a
    failure shows how far it got), else the condition's last value.

    The bound is a limit for a machine that hangs, not a measure: tests set it far above any honest
    run on a loaded machine, and wait for the event itself (a state, a count, a message), never a
    fixed sleep.
    """
    started = time.monotonic()
    while not (value := condition()):
        waited = time.monotonic() - started
        if waited > timeout:
            shown = _describe(seen) if seen is not None else repr(value)
            raise AssertionError(f"waited {waited:.1f} s (limit {timeout:g} s) for {what}, saw {shown}")
        time.sleep(POLL_SECONDS)
    return value


def _describe(seen: Callable[[], object]) -> str:
    try:
        return repr(seen())
    except Exception as exc:  # noqa: BLE001 - the timeout is the failure to report, not a read that failed after it
        return f"nothing readable ({type(exc).__name__}: {exc})"


def port_is_free(port: int) -> bool:
    """Nobody listens on ``port`` and a new server could bind it (as servers do: SO_REUSEADDR)."""
    with socket.socket() as client:
        if client.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def child_pids() -> set[int]:
    """Live processes whose parent is this one (Linux /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.add(int(entry.name))
    return found


def depth(session, url: str) -> int:
    """Messages in the queue at ``url``: visible plus in flight."""
    attributes = session.clients("sqs").get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )
    return sum(int(v) for v in attributes["Attributes"].values())


def balance(session, account: str) -> int:
    """The example payments job's balance of ``account`` (0 before its first payment)."""
    item = (
        session.clients("dynamodb")
        .get_item(TableName=session.deployment.resources[PAYMENTS_TABLE], Key={"account_id": {"S": account}})
        .get("Item")
    )
    return int(item["balance"]["N"]) if item else 0


#: The line ``up`` prints after its ready line and every hint: what :class:`RunningUp` waits for.
HINTS_END = "Press Ctrl-C to stop"


class RunningUp:
    """``up`` in a child process (``command``), from ready until the ``with`` ends (then Ctrl-C):
    every line it printed (``output``) and the ``export`` lines of its hints (``exports``)."""

    def __init__(self, command: Sequence[str], *, cwd: Path, env: Mapping[str, str], ready_timeout: float = 240):
        self._command, self._cwd, self._env, self._ready_timeout = list(command), cwd, dict(env), ready_timeout
        self._lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        self.exports: dict[str, str] = {}
        self.returncode: int | None = None

    def __enter__(self) -> RunningUp:
        self._process = subprocess.Popen(
            self._command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=self._cwd,
            env={**self._env, "COLUMNS": "200"},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            # Ready, and every hint printed after it (the exports among them): the line that ends them, not
            # a pause after "ready" that a loaded machine may outlast.
            deadline = time.monotonic() + self._ready_timeout
            while not any(line.startswith(HINTS_END) for line in self.output):
                assert time.monotonic() < deadline and self._process.poll() is None, "".join(self.output)
                try:
                    self.output.append(self._lines.get(timeout=1))
                except queue.Empty:
                    continue
            self._drain()
        except BaseException:
            self.__exit__()
            raise
        self.exports = dict(
            line.strip()[len("export ") :].split("=", 1) for line in self.output if line.strip().startswith("export ")
        )
        return self

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.put(line)

    def client_env(self) -> dict[str, str]:
        """This environment with the printed exports (and no stale session token), as another terminal has it."""
        env = {**self._env, **self.exports}
        env.pop("AWS_SESSION_TOKEN", None)
        return env

    def _drain(self) -> None:
        while True:
            try:
                self.output.append(self._lines.get_nowait())
            except queue.Empty:
                return

    def __exit__(self, *_exc_info: object) -> None:
        self._process.send_signal(signal.SIGINT)
        try:
            self.returncode = self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            # Still starting (a synthesis on a loaded machine) when the test gave up: stop it without
            # hiding why the test failed; the output shows how far it got.
            self._process.kill()
            self.returncode = self._process.wait(timeout=30)
            self.output.append(f"[up did not stop within 60 s of Ctrl-C: killed, exit {self.returncode}]\n")
        # Every line it printed before it exited: the reader ends at the pipe's end, not after a pause.
        self._reader.join(timeout=60)
        self._drain()
