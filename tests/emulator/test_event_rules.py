"""Local mode delivers ``PutEvents`` that match a trigger's rule as EventBridge does: the input transformer
builds the envelope, the tier's consumer runs the job once (a redelivered event too), and an event whose
fields cannot fill the envelope, or whose payload breaks the job's schema, is dead-lettered with why."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import boto3
import pytest

from emulator.event_rules import aws_event, create_rule_buses, deliver_matching_events, transform
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.contract.triggers import input_paths, input_template

REGION = "us-east-1"
RULE = "counters"
WHEN = datetime(2026, 12, 7, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def events(tier):
    deliver_matching_events()
    deliver_matching_events()  # idempotent: patched once
    return boto3.client("events", region_name=REGION)


def _trigger(events, tier, pattern: dict[str, Any], key_path: str = "$.id", payload_path: str = "$.detail") -> None:
    """A trigger's rule as the construct writes it (its transformer from the same contract functions)."""
    events.put_rule(Name=RULE, EventPattern=json.dumps(pattern), State="ENABLED")
    events.put_targets(
        Rule=RULE,
        Targets=[
            {
                "Id": "counters",
                "Arn": tier.queue_arn,
                "InputTransformer": {
                    "InputPathsMap": input_paths(key_path, payload_path),
                    "InputTemplate": input_template("testjobs.effect"),
                },
            }
        ],
    )


def _put(events, detail: dict[str, Any], source: str = "shop.orders", detail_type: str = "Order Paid") -> str:
    (entry,) = events.put_events(
        Entries=[{"Source": source, "DetailType": detail_type, "Detail": json.dumps(detail), "Time": WHEN}]
    )["Entries"]
    return entry["EventId"]


def test_a_matching_event_runs_its_job_once_even_delivered_twice(events, tier):
    _trigger(events, tier, {"source": ["shop.orders"]})
    event_id = _put(events, {"counter": "orders", "amount": 5})
    (message,) = tier.receive()
    job = json.loads(message["Body"])
    assert job == {
        "type": "testjobs.effect",
        "idempotency_key": event_id,
        "payload": {"counter": "orders", "amount": 5},
        "version": 1,
        "published_at": "2026-12-07T10:00:00Z",
    }
    tier.make_visible()
    # EventBridge delivers at least once: the same event (same id) through the same rule again.
    from moto.events.models import events_backends

    rule = events_backends["123456789012"][REGION].event_buses["default"].rules[RULE]
    rule.send_to_targets({**job_event(event_id), "detail": {"counter": "orders", "amount": 5}})
    assert len(tier.receive()) == 2
    tier.make_visible()
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert tier.counter("orders") == 5 and tier.dlq_messages() == []


def job_event(event_id: str) -> dict[str, Any]:
    """The event moto builds for a ``PutEvents`` entry (its ``time`` a Unix timestamp)."""
    return {
        "version": "0",
        "id": event_id,
        "detail-type": "Order Paid",
        "source": "shop.orders",
        "account": "123456789012",
        "time": WHEN.timestamp(),
        "region": REGION,
        "resources": [],
        "ingestion-time": WHEN.timestamp(),
    }


def test_an_event_without_the_keys_path_or_with_a_bad_payload_is_dead_lettered_with_why(events, tier):
    _trigger(events, tier, {"source": ["shop.orders"]}, key_path="$.detail.order_id")
    _put(events, {"counter": "orders", "amount": 5})  # no order_id: the key stays empty
    _put(events, {"counter": "orders", "amount": "five", "order_id": "o-1"})  # breaks the job's schema
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert tier.counter("orders") == 0
    letters = {
        json.loads(m["Body"])["idempotency_key"]: (
            m["MessageAttributes"][DeadLetter.REASON]["StringValue"],
            m["MessageAttributes"][DeadLetter.ERROR_MESSAGE]["StringValue"],
        )
        for m in tier.dlq_messages()
    }
    assert letters == {
        "": ("permanent", "invalid job envelope: 'idempotency_key' must be 1-256 characters, got 0"),
        "o-1": ("permanent", "payload field 'amount' must be an integer, got a string"),
    }


@pytest.mark.parametrize(
    ("pattern", "matched", "unmatched"),
    [
        # Exact values: the field equals one of the array's values.
        ({"detail": {"state": ["paid", "refunded"]}}, {"state": "paid"}, {"state": "open"}),
        # prefix: a string that starts with it.
        ({"detail": {"sku": [{"prefix": "eu-"}]}}, {"sku": "eu-42"}, {"sku": "us-42"}),
        # anything-but: present and none of the values (a missing field does not match).
        ({"detail": {"state": [{"anything-but": ["open"]}]}}, {"state": "paid"}, {"state": "open"}),
        ({"detail": {"state": [{"anything-but": ["open"]}]}}, {"state": "paid"}, {}),
        # exists: present or absent.
        ({"detail": {"coupon": [{"exists": True}]}}, {"coupon": "x"}, {}),
        ({"detail": {"coupon": [{"exists": False}]}}, {}, {"coupon": "x"}),
        # An array field matches when one of its elements does.
        ({"detail": {"tags": ["vip"]}}, {"tags": ["new", "vip"]}, {"tags": ["new"]}),
    ],
)
def test_patterns_match_as_eventbridge_documents(events, tier, pattern, matched, unmatched):
    _trigger(events, tier, {"source": ["shop.orders"], **pattern})
    _put(events, {"counter": "m", "amount": 1, **unmatched})
    _put(events, {"counter": "m", "amount": 1, **matched})
    _put(events, {"counter": "m", "amount": 1, **matched}, source="shop.other")
    (message,) = tier.receive()
    assert json.loads(message["Body"])["payload"] == {"counter": "m", "amount": 1, **matched}


def test_a_disabled_rule_delivers_nothing(events, tier):
    _trigger(events, tier, {"source": ["shop.orders"]})
    events.disable_rule(Name=RULE)
    _put(events, {"counter": "orders", "amount": 5})
    assert tier.receive() == []


def test_the_transformer_fills_strings_unescaped_and_values_as_json():
    """EventBridge's documented filling: inside quotes a string goes in unescaped (a quote in it breaks the
    JSON, which the consumer then refuses), an object loses its inner quotes; outside quotes, JSON; a missing
    path leaves an empty place; the predefined variables."""
    event = aws_event({"id": "e-1", "time": WHEN.timestamp(), "ingestion-time": 1.0, "detail": {"n": 1, "q": 'a"b'}})
    assert event == {"id": "e-1", "time": "2026-12-07T10:00:00Z", "detail": {"n": 1, "q": 'a"b'}}
    fill = lambda paths, template: transform(  # noqa: E731
        event, paths, template, rule_arn="arn:r", rule_name="r", ingestion_time="2026-12-07T10:00:01Z"
    )
    assert fill({"d": "$.detail"}, '{"a":<d>,"b":"<d>"}') == '{"a":{"n":1,"q":"a\\"b"},"b":"{n:1,q:a\\b}"}'
    assert fill({"q": "$.detail.q"}, '{"q":"<q>"}') == '{"q":"a"b"}'  # not JSON: the consumer refuses it
    assert fill({"m": "$.detail.missing", "n": "$.detail.n"}, '{"m":"<m>","x":<m>,"n":"<n>"}') == (
        '{"m":"","x":null,"n":"1"}'
    )
    assert fill({}, '"<aws.events.rule-name> <aws.events.event.ingestion-time>"') == '"r 2026-12-07T10:00:01Z"'
    assert fill({"i": "$.detail.list[1]"}, "<i>") == "null"


def test_a_rule_deployed_on_a_partners_bus_delivers_that_buses_events(events, tier):
    """The construct's rule as CloudFormation deploys it locally (its DLQ and retry policy stored, not emulated):
    the partner's bus is created first (on AWS the partner's association made it), and an event put on it runs."""
    bus = "aws.partner/stripe.com/ed_123/acct"
    template = {
        "Resources": {
            "Rule": {
                "Type": "AWS::Events::Rule",
                "Properties": {
                    "EventBusName": bus,
                    "EventPattern": {"detail-type": ["charge.succeeded"]},
                    "State": "ENABLED",
                    "Targets": [
                        {
                            "Id": "stripe",
                            "Arn": tier.queue_arn,
                            "InputTransformer": {
                                "InputPathsMap": input_paths("$.detail.id", "$.detail.counts"),
                                "InputTemplate": input_template("testjobs.effect"),
                            },
                            "DeadLetterConfig": {"Arn": tier.queue_arn.replace("critical", "critical-dlq")},
                            "RetryPolicy": {"MaximumRetryAttempts": 10, "MaximumEventAgeInSeconds": 3600},
                        }
                    ],
                },
            }
        }
    }
    assert create_rule_buses(template, events) == [bus]
    assert create_rule_buses(template, events) == []  # there already
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(StackName="triggers", TemplateBody=json.dumps(template))
    assert cloudformation.describe_stacks(StackName="triggers")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    detail = {"id": "ch_1", "counts": {"counter": "charges", "amount": 3}}
    entry = {"Source": "stripe", "DetailType": "charge.succeeded", "Detail": json.dumps(detail), "EventBusName": bus}
    events.put_events(Entries=[entry])
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert tier.counter("charges") == 3 and tier.dlq_messages() == []
