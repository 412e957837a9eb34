"""``tiered-jobs dlq show`` on an offloaded letter (``large_payloads``): the stored body is printed, and a line says
where it came from, or why it could not be read (then the body shown is the pointer)."""

from __future__ import annotations

import json

from tests.replay.test_replay import job
from tiered_jobs.cli.dlq import _print_letter
from tiered_jobs.contract.large_payloads import Pointer

POINTER = Pointer("stage-large-payloads", "critical/5b1f")


def letter(body: str, error: str | None) -> dict:
    return {
        "message_id": "m-1",
        "job_type": "testjobs.effect",
        "reason": "permanent",
        "error_type": "OffloadedBodyMissing",
        "error_message": "gone",
        "frame": None,
        "first_failed_at": "2026-12-02T10:00:00.000Z",
        "dead_lettered_at": "2026-12-02T10:00:00.000Z",
        "sent_at": "2026-12-02T10:00:00.000Z",
        "traceback": None,
        "message_attributes": {"ExtendedPayloadSize": {"DataType": "Number", "StringValue": "2048"}},
        "attributes": {"SentTimestamp": "0"},
        "body": body,
        "offloaded": {"pointer": POINTER.body(), "size": 2048, "url": POINTER.url, "error": error},
    }


def test_the_stored_body_is_printed_and_said_to_be_read_back(capsys):
    stored = job(key="big-1")
    _print_letter(letter(stored, None))
    out = capsys.readouterr().out
    assert f"Offloaded: {POINTER.url} (2048 bytes); the body below was read back" in out
    assert '"idempotency_key": "big-1"' in out and "PayloadS3Pointer" not in out


def test_an_object_that_could_not_be_read_leaves_the_pointer_and_says_why(capsys):
    _print_letter(letter(POINTER.body(), "ClientError: NoSuchKey"))
    out = capsys.readouterr().out
    assert "not read: ClientError: NoSuchKey" in out
    assert json.loads(POINTER.body())[0] in out
