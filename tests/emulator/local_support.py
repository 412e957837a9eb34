"""Helpers shared by the local mode's tests."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from example.jobs.payments import TABLE as PAYMENTS_TABLE


def wait_until(condition, timeout: float = 30.0, what: str = "condition"):
    """Poll ``condition`` until it holds and return its value; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not met within {timeout} s")
        time.sleep(0.05)
    return value


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
        threading.Thread(target=lambda: [self._lines.put(line) for line in self._process.stdout], daemon=True).start()
        try:
            deadline = time.monotonic() + self._ready_timeout
            while not any(line.startswith("ready") for line in self.output):
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

    def client_env(self) -> dict[str, str]:
        """This environment with the printed exports (and no stale session token), as another terminal has it."""
        env = {**self._env, **self.exports}
        env.pop("AWS_SESSION_TOKEN", None)
        return env

    def _drain(self) -> None:
        time.sleep(0.5)
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
        self._drain()
