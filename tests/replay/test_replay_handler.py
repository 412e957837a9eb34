"""The Lambda entry point (on moto) and the native mode (botocore's Stubber: moto lacks StartMessageMoveTask)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tests.support.context import lambda_context
from tiered_jobs.contract.names import DeadLetter, Env
from tiered_jobs.contract.replay_events import RESPONSE_FIELDS
from tiered_jobs.handlers.replay import handler
from tiered_jobs.replay import ReplayEventError, TierQueues, parse_event, run
from tiered_jobs.runtime import aws as runtime_aws

REGION = "us-east-1"
ROOT = Path(__file__).resolve().parents[2]


def invocation_context(remaining_ms: int = 60_000):
    return lambda_context(remaining_ms, "tiered-jobs-test-replay")


@pytest.fixture
def deployed(aws, monkeypatch) -> dict[str, TierQueues]:
    """Two tiers' queues and the environment the stack gives the replay function."""
    runtime_aws.reset()
    sqs = boto3.client("sqs", region_name=REGION)
    tiers = {
        tier: TierQueues(
            sqs.create_queue(QueueName=tier)["QueueUrl"], sqs.create_queue(QueueName=f"{tier}-dlq")["QueueUrl"]
        )
        for tier in ("critical", "bulk")
    }
    monkeypatch.setenv(
        Env.REPLAY_TIERS,
        json.dumps(
            {
                t: {"queue_url": q.queue_url, "dlq_url": q.dlq_url, "idempotency_ttl_seconds": 18 * 86400}
                for t, q in tiers.items()
            }
        ),
    )
    yield tiers
    runtime_aws.reset()


def test_importing_the_handler_loads_neither_boto3_nor_powertools():
    code = (
        "import sys, tiered_jobs.handlers.replay; print(sorted({'boto3', 'aws_lambda_powertools'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_handler_replays_with_the_shared_client_and_the_lambda_time_budget(deployed, caplog):
    sqs = boto3.client("sqs", region_name=REGION)
    for key in ("a", "b"):
        sqs.send_message(
            QueueUrl=deployed["bulk"].dlq_url,
            MessageBody=key,
            MessageAttributes={DeadLetter.REASON: {"DataType": "String", "StringValue": DeadLetter.REASON_PERMANENT}},
        )

    response = handler({"tier": "bulk", "max_messages": 2}, invocation_context())

    assert (response["moved"], response["stopped_because"], response["left_in_dlq"]) == (2, "max_messages", 0)
    assert tuple(response) == RESPONSE_FIELDS
    bodies = [
        m["Body"] for m in sqs.receive_message(QueueUrl=deployed["bulk"].queue_url, MaxNumberOfMessages=10)["Messages"]
    ]
    assert sorted(bodies) == ["a", "b"]
    audit = [
        (r.getMessage(), getattr(r, "request", {}).get("tier"), getattr(r, "result", {}).get("moved"))
        for r in caplog.records
        if r.name == "tiered-jobs"
    ]
    assert audit == [("replay requested", "bulk", None), ("replay finished", None, 2)]


def test_the_handler_stops_at_once_when_the_budget_is_already_spent(deployed):
    sqs = boto3.client("sqs", region_name=REGION)
    sqs.send_message(QueueUrl=deployed["critical"].dlq_url, MessageBody="x")

    response = handler({"tier": "critical"}, invocation_context(remaining_ms=5_000))

    assert (response["moved"], response["stopped_because"], response["left_in_dlq"]) == (0, "time_budget", 1)


def test_the_handler_replays_the_letters_named_by_message_ids_and_says_what_became_of_each(deployed):
    sqs = boto3.client("sqs", region_name=REGION)
    ids = [sqs.send_message(QueueUrl=deployed["bulk"].dlq_url, MessageBody=body)["MessageId"] for body in "abc"]

    response = handler({"tier": "bulk", "message_ids": [ids[1], "not-in-the-dlq"]}, invocation_context())

    assert response["outcomes"] == {ids[1]: "moved", "not-in-the-dlq": "not_found"}
    assert (response["moved"], response["left_in_dlq"]) == (1, 2)
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=deployed["bulk"].queue_url)["Messages"]] == ["b"]


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        ({"message_ids": "m1"}, "'message_ids' must be a list of 1-100 message ids"),
        ({"message_ids": [7]}, "'message_ids' must be a list of 1-100 message ids"),
        (
            {"message_ids": ["m1"], "mode": "native", "allow_outside_idempotency_window": True},
            "'mode': 'native' moves every letter and cannot filter: remove 'message_ids' or use 'mode': 'batch'",
        ),
    ],
)
def test_the_handler_refuses_message_ids_it_cannot_honour_and_moves_nothing(deployed, event, problem):
    sqs = boto3.client("sqs", region_name=REGION)
    sqs.send_message(QueueUrl=deployed["bulk"].dlq_url, MessageBody="kept")

    with pytest.raises(ReplayEventError, match=re.escape(problem)):
        handler({"tier": "bulk", **event}, invocation_context())
    assert sqs.receive_message(QueueUrl=deployed["bulk"].queue_url).get("Messages") is None


def test_a_bad_event_raises_so_the_console_shows_every_problem(deployed):
    with pytest.raises(ReplayEventError) as caught:
        handler({"tier": "gold", "max_messages": 0}, invocation_context())
    assert str(caught.value).startswith(
        "invalid replay event: unknown tier 'gold' (this stage has 'bulk', 'critical'); "
        "'max_messages' must be a whole number from 1 to 10000, got 0. Allowed fields: action: "
    )


def test_the_handler_refuses_to_guess_without_its_tier_table(monkeypatch):
    monkeypatch.delenv(Env.REPLAY_TIERS, raising=False)
    with pytest.raises(RuntimeError, match=f"{Env.REPLAY_TIERS} is not set"):
        handler({"tier": "critical"}, invocation_context())


# -- native mode (botocore Stubber: moto does not implement StartMessageMoveTask) ----------------

TIERS = {
    "critical": TierQueues(
        "https://sqs.us-east-1.amazonaws.com/1/critical", "https://sqs.us-east-1.amazonaws.com/1/critical-dlq"
    )
}
DLQ_ARN = "arn:aws:sqs:us-east-1:1:critical-dlq"
QUEUE_ARN = "arn:aws:sqs:us-east-1:1:critical"


def stubbed() -> tuple[Any, Stubber]:
    client = boto3.client("sqs", region_name=REGION)
    stubber = Stubber(client)
    stubber.add_response(
        "get_queue_attributes",
        {"Attributes": {"QueueArn": DLQ_ARN, "ApproximateNumberOfMessages": "1234"}},
        {"QueueUrl": TIERS["critical"].dlq_url, "AttributeNames": ["QueueArn", "ApproximateNumberOfMessages"]},
    )
    return client, stubber


def test_native_mode_starts_an_sqs_move_task_from_the_dlq_to_the_tier_queue():
    client, stubber = stubbed()
    stubber.add_response(
        "get_queue_attributes",
        {"Attributes": {"QueueArn": QUEUE_ARN}},
        {"QueueUrl": TIERS["critical"].queue_url, "AttributeNames": ["QueueArn"]},
    )
    stubber.add_response(
        "start_message_move_task",
        {"TaskHandle": "task-1"},
        {"SourceArn": DLQ_ARN, "DestinationArn": QUEUE_ARN, "MaxNumberOfMessagesPerSecond": 50},
    )

    with stubber:
        response = run(
            parse_event(
                {"tier": "critical", "mode": "native", "max_per_second": 50, "allow_outside_idempotency_window": True}
            ),
            sqs=client,
            tiers=TIERS,
        )

    stubber.assert_no_pending_responses()
    assert response == {
        "action": "replay",
        "tier": "critical",
        "mode": "native",
        "dry_run": False,
        "matched": 1234,
        "moved": 0,
        "failed": 0,
        "left_in_dlq": 1234,
        "groups": [],
        "stopped_because": "move_task_started",
        "task_handle": "task-1",
        "idempotency_ttl_seconds": None,
        "outside_window": 0,
        "refused_outside_window": 0,
        "left_expired": 0,
        "discarded": 0,
        "archive": None,
        "archive_error": None,
        "letters": [],
        "outcomes": None,  # native mode cannot select letters
    }


def test_native_mode_without_a_rate_lets_sqs_choose_it():
    client, stubber = stubbed()
    stubber.add_response(
        "get_queue_attributes",
        {"Attributes": {"QueueArn": QUEUE_ARN}},
        {"QueueUrl": TIERS["critical"].queue_url, "AttributeNames": ["QueueArn"]},
    )
    stubber.add_response(
        "start_message_move_task", {"TaskHandle": "task-2"}, {"SourceArn": DLQ_ARN, "DestinationArn": QUEUE_ARN}
    )

    with stubber:
        response = run(
            parse_event({"tier": "critical", "mode": "native", "allow_outside_idempotency_window": True}),
            sqs=client,
            tiers=TIERS,
        )

    stubber.assert_no_pending_responses()
    assert response["task_handle"] == "task-2"


def test_native_dry_run_only_counts():
    client, stubber = stubbed()  # no move task is expected: the Stubber fails on any other call

    with stubber:
        response = run(parse_event({"tier": "critical", "mode": "native", "dry_run": True}), sqs=client, tiers=TIERS)

    stubber.assert_no_pending_responses()
    assert (response["matched"], response["stopped_because"], response["task_handle"]) == (1234, "dry_run", None)


def test_native_mode_passes_on_sqs_refusing_a_second_task():
    client, stubber = stubbed()
    stubber.add_response(
        "get_queue_attributes",
        {"Attributes": {"QueueArn": QUEUE_ARN}},
        {"QueueUrl": TIERS["critical"].queue_url, "AttributeNames": ["QueueArn"]},
    )
    stubber.add_client_error(
        "start_message_move_task",
        "AWS.SimpleQueueService.UnsupportedOperation",
        "There is already a task running. Only one active task is allowed for a source queue.",
    )

    with stubber, pytest.raises(client.exceptions.ClientError, match="already a task running"):
        run(
            parse_event({"tier": "critical", "mode": "native", "allow_outside_idempotency_window": True}),
            sqs=client,
            tiers=TIERS,
        )
