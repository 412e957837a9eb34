"""SQS's character set and size rule, read from AWS's own documentation, and the publisher obeying both.

SQS refuses a message holding a character outside its allowed set with ``InvalidMessageContents``;
inside ``SendMessageBatch`` only that entry fails, so a batch would be half-published. moto
accepts every character, so these tests check the publisher *before* anything reaches SQS, and
check the contract's rules against the text of botocore's service model (AWS's API reference).
"""

from __future__ import annotations

import json
import re

import botocore.session
import pytest

from tiered_jobs.contract.envelope import character_problems
from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES
from tiered_jobs.contract.sqs_limits import (
    ALLOWED_CHARACTER_RANGES,
    first_disallowed_character,
    message_size,
    pack_batches,
)
from tiered_jobs.publisher import InvalidJobError, Job


def _sqs_docs(operation: str) -> str:
    model = botocore.session.get_session().get_service_model("sqs")
    return model.operation_model(operation).documentation


def test_the_allowed_characters_are_exactly_those_the_sqs_api_reference_lists():
    for operation in ("SendMessage", "SendMessageBatch"):
        listed = re.search(r"<code>#x9</code>.*?#x10FFFF</code>", _sqs_docs(operation), re.S).group()
        ranges = []
        for part in re.sub(r"</?code>", "", listed).split("|"):
            bounds = [int(x, 16) for x in re.findall(r"#x([0-9A-Fa-f]+)", part)]
            ranges.append((bounds[0], bounds[-1]))
        assert tuple(ranges) == ALLOWED_CHARACTER_RANGES


def test_the_size_rule_and_batch_limit_are_those_the_sqs_api_reference_states():
    batch = _sqs_docs("SendMessageBatch")
    assert "sum of the individual lengths of all of the batched messages" in batch
    assert f"{SQS_MAX_MESSAGE_BYTES:,} bytes" in batch
    assert f"up to {SQS_MAX_BATCH_ENTRIES} messages" in batch
    attribute = botocore.session.get_session().get_service_model("sqs").shape_for("MessageAttributeValue").documentation
    assert (
        "including <code>Name</code>, <code>Type</code>, and <code>Value</code>, are part of the message size"
        in attribute
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain \t\n\r é ☕ 😀 \x7f \ue000 \ufffd \U0010ffff", None),
        ("ab\uffff", (2, "U+FFFF")),
        ("\ufffe", (0, "U+FFFE")),
        ("x\ud800y", (1, "U+D800")),  # a lone surrogate (what a bad UTF-16 decode leaves behind)
        ("x\udfff", (1, "U+DFFF")),
        ("bell\x07", (4, "U+0007")),
        ("\x00", (0, "U+0000")),
        ("\x1f", (0, "U+001F")),
    ],
)
def test_first_disallowed_character(text, expected):
    assert first_disallowed_character(text) == expected


def test_every_code_point_at_a_range_edge_is_refused_exactly_when_it_is_outside_the_allowed_ranges():
    # The check matches the refused ranges (cheap to compile at cold start), derived from the allowed ones.
    edges = {0, 0x10FFFF} | {c + d for low, high in ALLOWED_CHARACTER_RANGES for c in (low, high) for d in (-1, 0, 1)}
    for code in sorted(c for c in edges if 0 <= c <= 0x10FFFF):
        allowed = any(low <= code <= high for low, high in ALLOWED_CHARACTER_RANGES)
        assert (first_disallowed_character(chr(code)) is None) == allowed, hex(code)


def test_a_refused_character_is_named_wherever_it_is_in_a_key_or_a_part_reached_twice():
    # One search over every string finds it; the walk that names it sees each place it is reached from.
    shared = {"k\x00": 1}
    assert character_problems({"payload": {"a": ["fine", shared], "b": shared}}) == [
        f"the key payload[{where}]['k\\x00'] holds U+0000 at character 1, which SQS does not accept in a message"
        for where in ("'a'][1", "'b'")
    ]
    assert character_problems({"payload": {"a": ["fine", {"k": "ok"}], "b": ("é", 1)}}) == []


def test_message_size_counts_the_body_and_every_attribute_name_type_and_value():
    attributes = {
        "tenant": {"DataType": "String", "StringValue": "café"},  # 6 + 6 + 5
        "Replay.Count": {"DataType": "Number", "StringValue": "2"},  # 12 + 6 + 1
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\x02"},  # 4 + 6 + 3
    }
    assert message_size("é☕", attributes) == 2 + 3 + 17 + 19 + 13


def test_the_packer_fills_a_batch_to_exactly_1_mib_and_no_further():
    sizes = [SQS_MAX_MESSAGE_BYTES - 3, 3, 1, SQS_MAX_MESSAGE_BYTES, 400_000, 400_000, 248_576, 1]
    batches = list(pack_batches(sizes, lambda size: size))
    assert batches == [[SQS_MAX_MESSAGE_BYTES - 3, 3], [1], [SQS_MAX_MESSAGE_BYTES], [400_000, 400_000, 248_576], [1]]
    assert all(sum(batch) <= SQS_MAX_MESSAGE_BYTES for batch in batches)


def test_the_packer_never_puts_more_than_ten_entries_in_a_batch():
    assert [len(batch) for batch in pack_batches(range(23), lambda _: 1)] == [10, 10, 3]


# -- the publisher -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "key", "named"),
    [
        ({"label": "a", "memo": "ab\uffff"}, "k1", "payload['memo'] holds U+FFFF at character 2"),
        ({"label": "a", "memo": "x\ud800"}, "k1", "payload['memo'] holds U+D800 at character 1"),
        ({"label": "a", "lines": ["ok", "\ufffe"]}, "k1", "payload['lines'][1] holds U+FFFE at character 0"),
        ({"label": "a", "bad\x00key": 1}, "k1", "the key payload['bad\\x00key'] holds U+0000 at character 3"),
        ({"label": "a"}, "pay\x07", "'idempotency_key' holds U+0007 at character 3"),
    ],
)
def test_characters_sqs_refuses_are_refused_before_anything_is_sent(publisher, batch_calls, payload, key, named):
    good = Job("testjobs.ok", {"label": "a"}, "good-1")
    bad = Job("testjobs.ok", payload, key)

    with pytest.raises(InvalidJobError) as caught:
        publisher.publish_batch([good, bad])

    assert f"job #1 testjobs.ok (key {key!r}): {named}, which SQS does not accept" in str(caught.value)
    assert batch_calls == []  # no entry was sent: no half-published batch


def test_characters_sqs_accepts_are_sent_as_themselves(publisher, sqs, deployment):
    memo = "tab\t nl\n cr\r é ☕ 😀 \ufffd \U0010ffff"
    publisher.publish("testjobs.ok", {"label": "a", "memo": memo}, "chars-1")

    [message] = sqs.receive_message(QueueUrl=deployment.queue_urls["critical"])["Messages"]  # testjobs.* -> critical
    assert json.loads(message["Body"])["payload"]["memo"] == memo
    assert "é ☕ 😀 \ufffd \U0010ffff" in message["Body"]  # not \u-escaped: SQS stores (and counts) them as sent
