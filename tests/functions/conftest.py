"""Fixtures for the Lambda runtime: a tier's queues and tables on moto, real SQS events.

``run_batch`` plays the part of Lambda's event source mapping for one poll: it receives real
messages from moto, builds the exact Lambda SQS event, calls the handler and deletes only what
the partial batch response says succeeded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import functions.jobs  # noqa: F401 -- registers the example jobs
from bench.fixtures import BenchTier, create_tier
from bench.fixtures import lambda_context as make_lambda_context
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.backoff import RetryPolicy
from tiered_jobs.runtime.config import DEFAULT_TIME_BUDGET_MARGIN_MS, TierConfig
from tiered_jobs.runtime.registry import registry as default_registry
from tiered_jobs.contract.envelope import build
from emulator.esm import sqs_event

REGION = "us-east-1"


@dataclass
class Tier(BenchTier):
    #: receipt handles of messages a batch left in flight (failed or crashed), by message id
    in_flight: dict[str, str] = field(default_factory=dict)

    def config(self, margin_ms: int = DEFAULT_TIME_BUDGET_MARGIN_MS, **retry: Any) -> TierConfig:
        return TierConfig(
            stage="test", tier="critical", queue_url=self.queue_url, dlq_url=self.dlq_url,
            idempotency_table=self.idempotency_table, accounts_table=self.accounts_table,
            retry=RetryPolicy(**retry) if retry else RetryPolicy(), time_budget_margin_ms=margin_ms,
        )

    def consumer(self, *, client: Callable[[str], Any] | None = None, registry=default_registry,
                 rand: Callable[[], float] = lambda: 0.5, margin_ms: int = DEFAULT_TIME_BUDGET_MARGIN_MS,
                 **retry: Any) -> Consumer:
        clients = {"sqs": self.sqs, "dynamodb": self.dynamodb}
        return Consumer(self.config(margin_ms, **retry), registry, client=client or clients.__getitem__, rand=rand)

    def publish(self, job_type: str, payload: Any, key: str, **attributes: str) -> str:
        body = build(job_type, payload, key).to_json()
        return self.send_raw(body, **attributes)

    def send_raw(self, body: str, **attributes: str) -> str:
        extra = {"MessageAttributes": {k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()}}
        return self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body, **(extra if attributes else {}))[
            "MessageId"]

    def receive(self, queue_url: str | None = None, max_messages: int = 10) -> list[dict]:
        return self.sqs.receive_message(
            QueueUrl=queue_url or self.queue_url, MaxNumberOfMessages=max_messages,
            MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"], VisibilityTimeout=0,
        ).get("Messages", [])

    def event(self, messages: list[dict]) -> dict:
        return sqs_event(messages, self.queue_arn, REGION)

    def run_batch(self, consumer: Consumer, context: Any = None, max_messages: int = 10) -> dict:
        messages = self.sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=max_messages,
            MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"],
        ).get("Messages", [])
        assert messages, "the queue had nothing to receive"
        self.in_flight.update({m["MessageId"]: m["ReceiptHandle"] for m in messages})
        response = consumer.handle(self.event(messages), context or make_lambda_context())
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        for m in messages:
            if m["MessageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
                self.in_flight.pop(m["MessageId"])
        return response

    def make_visible(self) -> None:
        """Skip a backoff or a visibility timeout: the messages a batch left in flight return now."""
        for receipt in self.in_flight.values():
            self.sqs.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=receipt, VisibilityTimeout=0)
        self.in_flight.clear()

    def dlq_messages(self) -> list[dict]:
        return self.receive(self.dlq_url)

    def balance(self, account_id: str) -> int:
        item = self.dynamodb.get_item(TableName=self.accounts_table, Key={"account_id": {"S": account_id}}).get("Item")
        return int(item["balance"]["N"]) if item else 0


@pytest.fixture
def lambda_context() -> Callable[..., Any]:
    """A factory of Lambda contexts (the local runtime's): ``lambda_context(remaining_ms=1)``."""
    return make_lambda_context


@pytest.fixture
def tier(aws) -> Tier:
    created = create_tier("critical", visibility_timeout=180, max_receive_count=5)
    return Tier(**vars(created))
