"""Tags: up to 10 short ``name: value`` pairs in the envelope, refused by name before sending, carried
unchanged by the body (so by every copy, letter and replay) and read back by a consumer's parse."""

from __future__ import annotations

import json

import pytest

from tiered_jobs.contract import envelope, tags
from tiered_jobs.publisher import InvalidJobError, Job

TAGS = {"order": "o-17", "customer": "c-9"}


def test_tags_are_sent_in_the_body_and_parsed_back(publisher, sqs, deployment):
    entries = []
    sqs.meta.events.register(
        "before-parameter-build.sqs.SendMessageBatch", lambda params, **_: entries.extend(params["Entries"])
    )
    publisher.publish("payments.capture", {"n": 1}, "k-1", tags=TAGS)
    publisher.publish_batch([{"job_type": "payments.capture", "payload": {}, "idempotency_key": "k-2", "tags": TAGS}])

    bodies = [json.loads(entry["MessageBody"]) for entry in entries]
    assert [body["tags"] for body in bodies] == [TAGS, TAGS]
    assert envelope.parse(entries[0]["MessageBody"]).tags == TAGS
    assert "MessageAttributes" not in entries[0], "tags spend none of the message's 10 attributes"


def test_bad_tags_are_refused_with_each_tag_named(publisher):
    many = {f"t{n}": "v" for n in range(11)}
    with pytest.raises(InvalidJobError) as refused:
        publisher.publish_batch(
            [
                Job("payments.capture", {}, "k-1", tags=many),
                Job("payments.capture", {}, "k-2", tags={"Order": "o-1", "note": "two words"}),
                Job("payments.capture", {}, "k-3", tags=["order"]),  # type: ignore[arg-type]
            ]
        )
    text = str(refused.value)
    assert "'tags' must hold at most 10 tags, got 11" in text
    assert "got 'Order'" in text and "'tags.note' must be a string of 1-64" in text
    assert "'tags' must be an object of tag names to values" in text


def test_a_search_tag_filter_is_name_equals_value_under_the_same_rules():
    assert tags.parse_filter("order=o-17") == ("order", "o-17")
    assert tags.parse_filter("ref=a=b") == ("ref", "a=b")
    for bad, said in (("order", "NAME=VALUE"), ("Order=x", "lower-case"), ("order=a b", "no spaces")):
        with pytest.raises(ValueError, match=said):
            tags.parse_filter(bad)
