"""``python -m emulator up`` serves publishes from other processes, then stops cleanly on Ctrl-C."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import boto3
import pytest

from emulator.cli import command_prefix, emulator_prefix
from emulator.deploy import REPO_ROOT
from functions.jobs.payments import TABLE as PAYMENTS_TABLE
from tests.emulator.local_support import port_is_free
from tiered_jobs.contract.names import Ssm

pytestmark = pytest.mark.e2e

#: Another process: plain boto3 with the variables ``local up`` prints; queue found via SSM.
PUBLISHER = textwrap.dedent("""
    import json, boto3
    url = boto3.client("ssm").get_parameter(Name="/tiered-jobs/local/tiers/critical/queue-url")["Parameter"]["Value"]
    body = {"type": "payments.update_balance", "idempotency_key": "outside-1",
            "payload": {"account_id": "acc_outside", "amount": 250}}
    boto3.client("sqs").send_message(QueueUrl=url, MessageBody=json.dumps(body))
""")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def read_lines(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)


def test_local_up_serves_a_publish_from_another_process(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)  # where `make setup` was run: the hints are relative to it
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "up", "--port", str(port), "--no-view"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "COLUMNS": "200"},
        cwd=REPO_ROOT,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=read_lines, args=(process.stdout, lines), daemon=True).start()
    output: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not any(line.startswith("ready") for line in output):
            assert time.monotonic() < deadline and process.poll() is None, "".join(output)
            try:
                output.append(lines.get(timeout=1))
            except queue.Empty:
                continue
        exports = dict(line.strip()[len("export "):].split("=", 1) for line in _drain(lines, output)
                       if line.strip().startswith("export "))
        assert exports["AWS_ENDPOINT_URL"] == f"http://127.0.0.1:{port}"
        # make setup puts tiered-jobs in the virtualenv, not on PATH: the hints name it so
        hints = [line.strip() for line in output if "tiered-jobs" in line and "--stage local" in line]
        assert len(hints) == 2 and all(hint.startswith(command_prefix() + " --stage local ") for hint in hints), hints
        assert any(line.strip().startswith(emulator_prefix() + " logs ") for line in output), output

        client_env = {**os.environ, **exports}
        client_env.pop("AWS_SESSION_TOKEN", None)
        subprocess.run([sys.executable, "-c", PUBLISHER], env=client_env, check=True, timeout=60)

        dynamodb = boto3.client("dynamodb", endpoint_url=exports["AWS_ENDPOINT_URL"], region_name="us-east-1")
        table = boto3.client("ssm", endpoint_url=exports["AWS_ENDPOINT_URL"], region_name="us-east-1").get_parameter(
            Name=Ssm.resource("local", PAYMENTS_TABLE))["Parameter"]["Value"]

        def balance() -> int | None:
            item = dynamodb.get_item(TableName=table, Key={"account_id": {"S": "acc_outside"}}).get("Item")
            return int(item["balance"]["N"]) if item else None

        deadline = time.monotonic() + 30
        while balance() != 250:
            assert time.monotonic() < deadline, "the published payment was not consumed"
            time.sleep(0.3)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
    output.extend(_drain(lines, []))
    assert code == 0, "".join(output)
    assert "stopped." in "".join(output)
    assert port_is_free(port)


def _drain(lines: queue.Queue, into: list[str]) -> list[str]:
    time.sleep(0.5)
    while True:
        try:
            into.append(lines.get_nowait())
        except queue.Empty:
            return into


def test_export_lines_are_valid_shell_assignments():
    from emulator.server import Endpoint

    lines = Endpoint("http://127.0.0.1:4566").export_lines()
    assert all(line.startswith(("export ", "unset ")) and " " not in line.split(" ", 1)[1] for line in lines)
    assert json.dumps(lines)  # plain strings, printable as they are
