"""``tiered-jobs publish``: the payload from a file or stdin, and what a job delayed by SQS is told."""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone

import boto3
import pytest
from typer.testing import CliRunner

from tests.support.stack import received_bodies

#: Over Linux's limit on one command-line argument (MAX_ARG_STRLEN, 128 KiB), under SQS's message limit.
LARGE_PAYLOAD_CHARACTERS = 300_000


@pytest.fixture
def publish(deployment):
    """``publish("-p", "@f.json", input=...)`` runs ``tiered-jobs --stage test publish payments.capture -k k1 ...``."""
    from tiered_jobs.cli import app

    runner = CliRunner(env={"COLUMNS": "250"})

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(app, ["--stage", "test", "publish", "payments.capture", "-k", "k1", *args], input=input)

    return invoke


def _one_error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_a_payload_too_large_for_a_command_line_is_read_from_a_file(publish, deployment, tmp_path, monkeypatch):
    payload = {"order": "o1", "notes": "x" * LARGE_PAYLOAD_CHARACTERS}
    (tmp_path / "big.json").write_text(f'{{"order": "o1", "notes": "{payload["notes"]}"}}', encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # a relative path is read from the current directory

    result = publish("--payload", "@big.json")

    assert result.exit_code == 0, result.output
    [body] = received_bodies(deployment.queue_urls["critical"])
    assert body["payload"] == payload


def test_a_payload_is_read_from_stdin(publish, deployment):
    notes = "é" * LARGE_PAYLOAD_CHARACTERS  # non-ASCII: read as UTF-8, sent as itself
    result = publish("--payload", "-", input=f'{{"order": "o2", "notes": "{notes}"}}\n')

    assert result.exit_code == 0, result.output
    [body] = received_bodies(deployment.queue_urls["critical"])
    assert body["payload"] == {"order": "o2", "notes": notes}


@pytest.mark.parametrize(
    ("args", "input", "files", "message"),
    [
        (["-p", "@missing.json"], None, {}, "--payload @missing.json: no such file ("),
        (["-p", "@"], None, {}, "--payload @: name a file after the @"),
        (["-p", "@folder"], None, {"folder/x.json": "{}"}, "--payload @folder is a directory"),
        (["-p", "@bad.json"], None, {"bad.json": '{"a": '}, "--payload @bad.json is not valid JSON: Expecting value"),
        (["-p", "@list.json"], None, {"list.json": "[1, 2]"}, "--payload @list.json must hold a JSON object"),
        (["-p", "@latin1.json"], None, {"latin1.json": b'{"a": "\xe9"}'}, "--payload @latin1.json is not UTF-8 text"),
        (["-p", "-"], "", {}, "--payload - (stdin) is empty: pipe a JSON object into it"),
        (["-p", "-"], "null", {}, "--payload - (stdin) must hold a JSON object (the job's payload), got null"),
        (["-p", "-"], "{oops", {}, "--payload - (stdin) is not valid JSON: Expecting property name"),
        (["-p", '"text"'], None, {}, "--payload must hold a JSON object (the job's payload), got a string"),
    ],
)
def test_a_payload_that_cannot_be_read_is_one_line_and_nothing_is_published(
    publish, deployment, tmp_path, monkeypatch, args, input, files, message
):
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.chdir(tmp_path)

    result = publish(*args, input=input)

    assert result.exit_code == 2
    assert message in _one_error_line(result)
    assert all(received_bodies(url) == [] for url in deployment.queue_urls.values())


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_payload_file_is_one_line(publish, tmp_path, monkeypatch):
    (tmp_path / "secret.json").write_text("{}")
    (tmp_path / "secret.json").chmod(0)
    monkeypatch.chdir(tmp_path)

    result = publish("-p", "@secret.json")

    assert result.exit_code == 2
    assert "--payload @secret.json cannot be read: Permission denied" in _one_error_line(result)


def _delayed_until(output: str) -> datetime:
    found = re.search(r"Delayed by SQS until (\S+Z) \(in (\d+) s\)", output)
    assert found, output
    return datetime.fromisoformat(found.group(1).replace("Z", "+00:00"))


def test_a_job_due_within_15_minutes_says_until_when_it_is_delayed_and_that_it_stays(publish, deployment):
    started = datetime.now(timezone.utc)
    at = started + timedelta(minutes=10)

    result = publish("--at", at.isoformat())
    took = datetime.now(timezone.utc) - started

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Published payments.capture (key 'k1') to tier critical: message ")
    until = _delayed_until(result.stdout)
    assert until.tzinfo == timezone.utc and until.microsecond == 0
    # SQS's whole seconds from when it took the message, never before the time asked (later by at most
    # a second and however long the command took: a loaded machine's publish may take seconds).
    assert at <= until < at + timedelta(seconds=1) + took
    assert "cancel with: tiered-jobs cancel payments.capture k1" in result.stdout
    delayed = boto3.client("sqs").get_queue_attributes(
        QueueUrl=deployment.queue_urls["critical"], AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]["ApproximateNumberOfMessagesDelayed"]
    assert delayed == "1"


def test_a_delay_says_until_when_and_no_delay_says_nothing(publish):
    before = datetime.now(timezone.utc)
    delayed = publish("--delay", "120")
    now = publish("--payload", "{}")

    assert delayed.exit_code == 0 and now.exit_code == 0
    until = _delayed_until(delayed.stdout)
    assert before + timedelta(seconds=120) <= until <= datetime.now(timezone.utc) + timedelta(seconds=121)
    assert "Delayed" not in now.stdout and "cancel" not in now.stdout
