"""A failed job shows where it failed: the log has its traceback, its letter the last frames (bounded)
and the frame of the job's own code that raised, within SQS's 10 attributes and 1 MiB."""

from __future__ import annotations

import inspect
import json
import sys

from tests.support.logs import CapturedLogs
from tiered_jobs.contract.letter_traceback import MAX_BYTES, LetterTraceback
from tiered_jobs.contract.names import SQS_MAX_MESSAGE_ATTRIBUTES, DeadLetter, Replay
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import JobRegistry


def _line_of(function, text: str) -> int:
    """The line number of the first source line of ``function`` that contains ``text``."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _read_qty(payload):
    return payload["order"]["qty"]  # the line that raises


def _recurse(depth: int) -> int:
    return _recurse(depth + 1)


def _registry() -> JobRegistry:
    registry = JobRegistry()

    @registry.job("orders.reserve")
    def reserve(payload, ctx):
        return {"qty": _read_qty(payload)}

    @registry.job("orders.deep")
    def deep(payload, ctx):
        return _recurse(0)

    return registry


def _consumer(tier, logs: CapturedLogs, max_attempts: int = 1) -> Consumer:
    config = tier.config(max_attempts=max_attempts)
    clients = {"sqs": tier.sqs, "dynamodb": tier.dynamodb}
    return Consumer(config, _registry(), client=clients.__getitem__, logger=logs.logger, rand=lambda: 0.5)


def _letter_attributes(tier) -> dict[str, str]:
    (letter,) = tier.dlq_messages()
    return {name: value["StringValue"] for name, value in letter["MessageAttributes"].items()}


def test_a_key_error_in_a_job_names_its_file_and_line_in_the_letter_and_the_log(tier):
    logs = CapturedLogs()
    consumer = _consumer(tier, logs, max_attempts=2)
    tier.publish("orders.reserve", {"order": {"id": "o-1"}}, "reserve-1")

    tier.run_batch(consumer)  # attempt 1: transient (an unexpected error), retried
    tier.make_visible()
    tier.run_batch(consumer)  # attempt 2, the last: dead-lettered

    raising_line = _line_of(_read_qty, 'payload["order"]["qty"]')
    here = __file__.rsplit("/", 1)[-1]
    (retry,) = logs.lines("job failed, will retry")
    (dead,) = logs.lines("job dead-lettered")
    for line in (retry, dead):  # the function log: the whole traceback, for both fates
        assert line["exception_name"] == "KeyError"
        assert f'{here}", line {raising_line}, in _read_qty' in line["exception"]

    attributes = _letter_attributes(tier)
    assert attributes[DeadLetter.ERROR_TYPE] == "KeyError"
    assert attributes[DeadLetter.ERROR_MESSAGE] == "'qty'"
    where = LetterTraceback.decode(attributes[DeadLetter.TRACEBACK])
    assert where is not None
    assert where.frame == f"tests/runtime/{here}:{raising_line} in _read_qty"
    assert f'"tests/runtime/{here}", line {raising_line}, in _read_qty' in where.text
    assert "in reserve" in where.text  # the job's own frame above it
    assert where.text.rstrip().endswith("KeyError: 'qty'")
    assert json.loads(attributes[DeadLetter.TRACEBACK])["v"] == 1


def test_a_deep_recursion_keeps_its_last_frames_within_the_cap(tier):
    logs = CapturedLogs()
    consumer = _consumer(tier, logs)
    tier.publish("orders.deep", {}, "deep-1")

    tier.run_batch(consumer)

    value = _letter_attributes(tier)[DeadLetter.TRACEBACK]
    assert len(value.encode("utf-8")) <= MAX_BYTES
    where = LetterTraceback.decode(value)
    assert where is not None
    recursing_line = _line_of(_recurse, "return _recurse(depth + 1)")
    assert where.frame is not None and where.frame.endswith(f":{recursing_line} in _recurse")
    assert where.text.rstrip().endswith("RecursionError: maximum recursion depth exceeded")
    assert where.text.count("in _recurse") >= 1
    assert "in deep" not in where.text, "the outermost frames give way first"
    assert len(logs.lines("job dead-lettered")[0]["exception"]) > len(where.text)  # the log has it whole


def test_the_cap_holds_for_any_message_and_keeps_the_innermost_text():
    from tiered_jobs.runtime.tracebacks import letter_traceback

    def job(payload, ctx):
        raise ValueError("é" * 5000 + '\n"quoted" end of the message')

    try:
        job({}, None)
    except ValueError as exc:
        where = letter_traceback(exc, job, max_bytes=600)
    assert len(where.encode().encode("utf-8")) <= 600
    assert where.text.startswith("…") and where.text.rstrip().endswith('"quoted" end of the message')
    assert where.frame is not None and where.frame.endswith(" in job")


def test_the_letter_stays_within_ten_attributes_with_carried_over_ones(tier):
    """A replayed job (``Replay.Count``) with its publisher's attributes: the reasons fill what is left,
    by priority (the traceback after the moments, before the source queue), never past 10."""
    logs = CapturedLogs()
    consumer = _consumer(tier, logs)
    for user_count, key in ((0, "a"), (1, "b"), (3, "c")):
        user = {f"user{i}": "x" for i in range(user_count)}
        message_id = tier.publish("orders.reserve", {"order": {}}, f"carry-{key}")
        messages = [m for m in tier.receive_for_batch() if m["MessageId"] == message_id]
        messages[0].setdefault("MessageAttributes", {})
        messages[0]["MessageAttributes"].update(
            {Replay.COUNT: {"DataType": "Number", "StringValue": "2"}}
            | {name: {"DataType": "String", "StringValue": v} for name, v in user.items()}
        )
        tier.run_messages(consumer, messages)
        (letter,) = tier.dlq_messages()
        tier.sqs.delete_message(QueueUrl=tier.dlq_url, ReceiptHandle=letter["ReceiptHandle"])
        names = set(letter["MessageAttributes"])
        assert len(names) <= SQS_MAX_MESSAGE_ATTRIBUTES
        assert set(user) | {Replay.COUNT} <= names, "the carried-over attributes are kept first"
        reasons = len(DeadLetter.ALL) + 1
        room = SQS_MAX_MESSAGE_ATTRIBUTES - user_count - 1
        assert len(names) == user_count + 1 + min(reasons, room)
        if room >= reasons - 1:
            assert DeadLetter.TRACEBACK in names
        (dropped,) = [line["dropped_reason_attributes"] for line in logs.lines("job dead-lettered")[-1:]]
        if user_count == 3:  # 6 of 9 reasons fit: the source queue, the traceback and the first failure give way
            assert dropped == [DeadLetter.FIRST_FAILED_AT, DeadLetter.TRACEBACK, DeadLetter.SOURCE_QUEUE]
        else:
            assert DeadLetter.TRACEBACK not in dropped


def test_an_envelope_error_has_a_traceback_but_no_frame_of_job_code(tier):
    logs = CapturedLogs()
    consumer = _consumer(tier, logs)
    tier.send_raw("not json")

    tier.run_batch(consumer)

    where = LetterTraceback.decode(_letter_attributes(tier)[DeadLetter.TRACEBACK])
    assert where is not None and where.frame is None  # no job code ran
    assert "EnvelopeError" in where.text
    (dead,) = logs.lines("job dead-lettered")  # a permanent failure: its log line has the traceback too
    assert dead["reason"] == DeadLetter.REASON_PERMANENT and dead["exception_name"] == "EnvelopeError"
    assert dead["exception"].startswith("Traceback (most recent call last):")


def test_frames_are_named_relative_to_the_longest_import_path(monkeypatch):
    from tiered_jobs.runtime.tracebacks import short_path

    monkeypatch.setattr(sys, "path", ["/var/task", "/opt", "/opt/python/"])
    assert short_path("/opt/python/httpx/_client.py") == "httpx/_client.py"
    assert short_path("/var/task/app/jobs/orders.py") == "app/jobs/orders.py"
    assert short_path("/var/taskforce/x.py") == "/var/taskforce/x.py"


def test_a_message_with_characters_sqs_refuses_still_makes_a_value_sqs_accepts():
    from tiered_jobs.contract.sqs_limits import first_disallowed_character
    from tiered_jobs.runtime.tracebacks import letter_traceback

    def job(payload, ctx):
        raise ValueError("bad \udcff byte, \x00 and \ufffe, é kept")

    try:
        job({}, None)
    except ValueError as exc:
        value = letter_traceback(exc, job).encode()
    assert first_disallowed_character(value) is None
    assert "\\udcff" in value and "\\ufffe" in value  # escaped, since raw they would be refused
    assert "é" in value  # kept: 2 bytes of SQS's size, where its escape would take 6
    decoded = LetterTraceback.decode(value)
    assert decoded is not None
    assert decoded.text.rstrip().endswith("ValueError: bad \udcff byte, \x00 and \ufffe, é kept")
    assert len(value.encode()) <= MAX_BYTES
