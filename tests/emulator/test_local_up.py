"""``python -m emulator up`` serves publishes from other processes, then stops cleanly on Ctrl-C."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import boto3
import pytest

from emulator.cli import command_prefix, emulator_prefix
from emulator.deploy import REPO_ROOT
from functions.jobs.payments import TABLE as PAYMENTS_TABLE
from tests.emulator.local_support import RunningUp, port_is_free, wait_until
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


def test_local_up_serves_a_publish_from_another_process(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)  # where `make setup` was run: the hints are relative to it
    port = free_port()
    with RunningUp(
        [sys.executable, "-m", "emulator", "up", "--port", str(port), "--no-view"], cwd=REPO_ROOT, env=os.environ
    ) as up:
        exports, output = up.exports, up.output
        assert exports["AWS_ENDPOINT_URL"] == f"http://127.0.0.1:{port}"
        # make setup puts tiered-jobs in the virtualenv, not on PATH: the hints name it so
        hints = [line.strip() for line in output if "tiered-jobs" in line and "--stage local" in line]
        assert len(hints) == 2 and all(hint.startswith(command_prefix() + " --stage local ") for hint in hints), hints
        assert any(line.strip().startswith(emulator_prefix() + " logs ") for line in output), output

        subprocess.run([sys.executable, "-c", PUBLISHER], env=up.client_env(), check=True, timeout=60)

        dynamodb = boto3.client("dynamodb", endpoint_url=exports["AWS_ENDPOINT_URL"], region_name="us-east-1")
        table = boto3.client("ssm", endpoint_url=exports["AWS_ENDPOINT_URL"], region_name="us-east-1").get_parameter(
            Name=Ssm.resource("local", PAYMENTS_TABLE)
        )["Parameter"]["Value"]

        def balance() -> int | None:
            item = dynamodb.get_item(TableName=table, Key={"account_id": {"S": "acc_outside"}}).get("Item")
            return int(item["balance"]["N"]) if item else None

        wait_until(lambda: balance() == 250, what="the published payment consumed")
    assert up.returncode == 0, "".join(up.output)
    assert "stopped." in "".join(up.output)
    assert port_is_free(port)


def test_export_lines_are_valid_shell_assignments():
    from emulator.server import Endpoint

    lines = Endpoint("http://127.0.0.1:4566").export_lines()
    assert all(line.startswith(("export ", "unset ")) and " " not in line.split(" ", 1)[1] for line in lines)
    assert json.dumps(lines)  # plain strings, printable as they are
