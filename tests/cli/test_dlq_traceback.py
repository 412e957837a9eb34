"""`tiered-jobs dlq show` prints where a job failed, and `dlq inspect` groups letters by the failing
frame as well as by the message: the same ``KeyError: 'qty'`` at two lines is two groups."""

from __future__ import annotations

import inspect
import json

import boto3

from tests.cli.test_cli import FIRST_FAILED, LAST_FAILED, _iso
from tiered_jobs.contract import envelope
from tiered_jobs.contract.letter_traceback import LetterTraceback
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime.tracebacks import letter_traceback


def reserve(payload: dict) -> int:
    return payload["qty"]


def release(payload: dict) -> int:
    return -payload["qty"]


def _raised_in(function) -> LetterTraceback:
    """The traceback the consumer would attach to a letter of a job that is ``function``."""
    try:
        function({})
    except KeyError as exc:
        return letter_traceback(exc, function)
    raise AssertionError("expected a KeyError")


def _line(function, text: str) -> int:
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _letter(deployment, key: str, where: LetterTraceback | None, message: str = "'qty'") -> str:
    reasons = {
        DeadLetter.REASON: DeadLetter.REASON_RETRIES_EXHAUSTED,
        DeadLetter.ERROR_TYPE: "KeyError",
        DeadLetter.ERROR_MESSAGE: message,
        DeadLetter.ATTEMPTS: "5",
        DeadLetter.JOB_TYPE: "orders.reserve",
        DeadLetter.FIRST_FAILED_AT: _iso(FIRST_FAILED),
        DeadLetter.LAST_FAILED_AT: _iso(LAST_FAILED),
        DeadLetter.SOURCE_QUEUE: deployment.queue_urls["critical"],
        **({DeadLetter.TRACEBACK: where.encode()} if where is not None else {}),
    }
    return boto3.client("sqs").send_message(
        QueueUrl=deployment.dlq_urls["critical"],
        MessageBody=envelope.build("orders.reserve", {"order": key}, key).to_json(),
        MessageAttributes={name: {"DataType": "String", "StringValue": value} for name, value in reasons.items()},
    )["MessageId"]


def test_show_prints_the_failing_frame_and_the_traceback(cli, deployment):
    wanted = _letter(deployment, "o-1", _raised_in(reserve))

    result = cli("dlq", "show", "critical", "--message-id", wanted)

    assert result.exit_code == 0, result.output
    line = _line(reserve, 'return payload["qty"]')
    assert f"Failed at: tests/cli/test_dlq_traceback.py:{line} in reserve" in result.stdout
    traceback_block = result.stdout.split("Traceback:\n", 1)[1].split("Message attributes:", 1)[0]
    assert f'File "tests/cli/test_dlq_traceback.py", line {line}, in reserve' in traceback_block
    assert traceback_block.rstrip().endswith("KeyError: 'qty'")
    assert "DeadLetter.Traceback (String): (the traceback above)" in result.stdout

    as_json = json.loads(cli("dlq", "show", "critical", "--message-id", wanted, "--json").stdout)
    assert as_json[0]["frame"].endswith(f":{line} in reserve") and "KeyError: 'qty'" in as_json[0]["traceback"]


def test_an_older_letter_without_a_traceback_still_shows(cli, deployment):
    wanted = _letter(deployment, "o-2", None)

    result = cli("dlq", "show", "critical", "--message-id", wanted)

    assert result.exit_code == 0, result.output
    assert "Failed at: None" in result.stdout and "Traceback:" not in result.stdout


def test_inspect_groups_the_same_message_apart_by_its_failing_frame(cli, deployment):
    for key in ("o-1", "o-2", "o-3"):
        _letter(deployment, key, _raised_in(reserve))
    _letter(deployment, "o-4", _raised_in(release))
    _letter(deployment, "o-5", None)  # a letter of an older consumer: grouped without a frame

    answer = json.loads(cli("dlq", "inspect", "critical", "--json").stdout)
    table = cli("dlq", "inspect", "critical").stdout

    groups = {(group["frame"], group["error_message"]): group["count"] for group in answer["groups"]}
    reserve_at = f"tests/cli/test_dlq_traceback.py:{_line(reserve, 'return payload')} in reserve"
    release_at = f"tests/cli/test_dlq_traceback.py:{_line(release, 'return -payload')} in release"
    assert groups == {(reserve_at, "'qty'"): 3, (release_at, "'qty'"): 1, (None, "'qty'"): 1}
    assert "Failed at" in table and reserve_at in table and release_at in table


def test_letters_without_frames_get_no_failed_at_column(cli, deployment):
    _letter(deployment, "o-1", None)

    table = cli("dlq", "inspect", "critical").stdout

    assert "'qty'" in table and "Failed at" not in table
