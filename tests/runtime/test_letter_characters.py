"""A letter SQS accepts, whatever the job raised: every reason the consumer writes holds only the
characters SQS allows in a string attribute.

A job raising ``ValueError("\\x00")`` (or a message with a lone surrogate, or a job type carried in a
JSON escape) would otherwise have its letter refused with ``InvalidMessageContents``; the job would
stay in its queue until SQS's redrive moved it without reasons. moto accepts every character, so the
rule is checked here as AWS documents it (botocore's service model), independently of the contract's
own pattern, and the consumer's letters are checked against it.
"""

from __future__ import annotations

import json
import re

import botocore.session
import pytest

from tests.support.logs import CapturedLogs
from tiered_jobs.contract.letter_traceback import LetterTraceback
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.contract.sqs_limits import sqs_safe_text
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import JobRegistry

#: SendMessage's documented set, as AWS writes it (the test below reads it from botocore's model).
DOCUMENTED = "#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF"
MESSAGE = "nul \x00, bell \x07, lone \udcff, \ufffe and \uffff; é and 😀 kept"


def _ranges(text: str) -> list[tuple[int, int]]:
    ranges = []
    for part in text.split("|"):
        bounds = [int(x, 16) for x in re.findall(r"#x([0-9A-Fa-f]+)", part)]
        ranges.append((bounds[0], bounds[-1]))
    return ranges


ALLOWED = _ranges(DOCUMENTED)


def accepted(text: str) -> bool:
    """Whether SQS accepts ``text`` as a string attribute's value, by the documented rule."""
    return all(any(low <= ord(c) <= high for low, high in ALLOWED) for c in text)


def test_a_string_attribute_value_follows_the_documented_rule_of_the_message_body():
    model = botocore.session.get_session().get_service_model("sqs")
    attribute = model.shape_for("MessageAttributeValue").documentation
    assert "the <code>Value</code> attribute has the same restrictions on the content as the message body" in attribute
    body_rule = model.operation_model("SendMessage").documentation
    listed = re.search(r"<code>#x9</code>.*?#x10FFFF</code>", body_rule, re.S)
    assert listed is not None
    assert _ranges(re.sub(r"</?code>", "", listed.group())) == ALLOWED


def test_every_character_sqs_allows_is_kept_and_every_other_is_escaped():
    every = "".join(map(chr, range(0x110000)))
    expected = "".join(c if accepted(c) else f"\\u{ord(c):04x}" for c in every)
    assert sqs_safe_text(every) == expected
    assert accepted(sqs_safe_text(every))
    assert sqs_safe_text("") == ""


def test_an_escaped_json_text_decodes_to_the_same_value():
    value = {"message": MESSAGE, "path": "C:\\jobs\\\udcff"}
    text = sqs_safe_text(json.dumps(value, ensure_ascii=False))
    assert accepted(text)
    assert json.loads(text) == value


def _consumer(tier, logs: CapturedLogs) -> Consumer:
    registry = JobRegistry()

    @registry.job("chars.raise")
    def raise_it(payload, ctx):
        raise ValueError(payload["message"])

    @registry.job("chars.key")
    def key_error(payload, ctx):
        return {}[payload["message"]]

    clients = {"sqs": tier.sqs, "dynamodb": tier.dynamodb}
    config = tier.config(max_attempts=1)
    return Consumer(config, registry, client=clients.__getitem__, logger=logs.logger, rand=lambda: 0.5)


def _letters(tier) -> dict[str, dict[str, str]]:
    return {
        json.loads(letter["Body"])["idempotency_key"]: {
            name: value["StringValue"] for name, value in letter["MessageAttributes"].items()
        }
        for letter in tier.dlq_messages()
    }


@pytest.mark.parametrize(
    ("job_type", "written"),
    [
        ("chars.raise", "nul \\u0000, bell \\u0007, lone \\udcff, \\ufffe and \\uffff; é and 😀 kept"),
        ("chars.key", repr(MESSAGE)),  # a KeyError's message is its key's repr: Python escaped it already
    ],
    ids=["ValueError", "KeyError"],  # plain ids: a worker cannot report a test id it cannot encode
)
def test_a_job_raising_characters_sqs_refuses_is_dead_lettered_with_its_reasons(tier, job_type, written):
    logs = CapturedLogs()
    # The payload reaches the queue in JSON escapes (ASCII, which SQS accepts); decoded, it holds them raw.
    body = json.dumps({"type": job_type, "idempotency_key": "k-1", "payload": {"message": MESSAGE}})
    tier.send_raw(body)

    tier.run_batch(_consumer(tier, logs))

    assert logs.lines("could not dead-letter the job; the message stays in the queue") == []
    reasons = _letters(tier)["k-1"]
    assert set(DeadLetter.ALL) <= set(reasons)
    for name, value in reasons.items():
        assert accepted(value), (name, value)
    assert reasons[DeadLetter.ERROR_MESSAGE] == written
    where = LetterTraceback.decode(reasons[DeadLetter.TRACEBACK])
    assert where is not None and where.frame is not None
    assert MESSAGE in where.text or repr(MESSAGE) in where.text  # the traceback decodes to the raw text


def test_a_job_type_holding_characters_sqs_refuses_is_an_invalid_envelope_whose_letter_sqs_accepts(tier):
    logs = CapturedLogs()
    tier.send_raw(json.dumps({"type": "chars.\udcff\x00", "idempotency_key": "k-2", "payload": {}}))

    tier.run_batch(_consumer(tier, logs))

    reasons = _letters(tier)["k-2"]
    assert all(accepted(value) for value in reasons.values()), reasons
    assert reasons[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    # The envelope's type pattern refuses it: the letter names no type, and its message quotes the escaped one.
    assert (reasons[DeadLetter.JOB_TYPE], reasons[DeadLetter.ERROR_TYPE]) == ("invalid", "EnvelopeError")


def test_every_reason_of_a_letter_is_written_safe_even_when_given_raw():
    from datetime import UTC, datetime

    from tiered_jobs.runtime.deadletter import DeadLetterReason

    now = datetime(2026, 12, 2, tzinfo=UTC)
    letter = DeadLetterReason(
        reason="permanent",
        error_type="Bad\x00Type",
        error_message="\x00" * 5000,
        attempts=1,
        first_failed_at=now,
        last_failed_at=now,
        source_queue="q\udcff",
        job_type="t\ufffe",
        traceback="tb\uffff",
    )
    attributes = letter.attributes()
    assert all(accepted(value) for value in attributes.values()), attributes
    # Escaped before it is cut: the cap in characters still bounds the bytes.
    assert len(attributes[DeadLetter.ERROR_MESSAGE]) == DeadLetter.MAX_ERROR_MESSAGE_CHARS
    assert attributes[DeadLetter.ERROR_TYPE] == "Bad\\u0000Type"
