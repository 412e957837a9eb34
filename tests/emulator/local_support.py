"""Helpers shared by the local mode's tests."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from functions.jobs.payments import TABLE as PAYMENTS_TABLE


def wait_until(condition, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not met within {timeout} s")
        time.sleep(0.05)


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
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
    return sum(int(v) for v in attributes["Attributes"].values())


def balance(session, account: str) -> int:
    """The example payments job's balance of ``account`` (0 before its first payment)."""
    item = session.clients("dynamodb").get_item(TableName=session.deployment.resources[PAYMENTS_TABLE],
                                                Key={"account_id": {"S": account}}).get("Item")
    return int(item["balance"]["N"]) if item else 0
