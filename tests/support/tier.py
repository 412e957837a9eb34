"""One tier on moto (its queue, DLQ and tables, shaped as the stack makes them), for the tests and the
benchmarks: create it, configure a consumer on it, publish, receive, run one poll of the event source
mapping, and read what happened.

Its consumer is given the tables of both job packages the suite registers: the example app's
payments table (:meth:`Tier.balance`, the example's jobs and the benchmarks) and the library's own
test jobs' counters table (:meth:`Tier.counter`, ``tests/support/jobs``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3

from emulator.esm import sqs_event
from tests.support.context import lambda_context
from tiered_jobs.contract.envelope import build
from tiered_jobs.runtime.backoff import RetryPolicy
from tiered_jobs.runtime.config import DEFAULT_TIME_BUDGET_MARGIN_MS, TierConfig
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import registry as default_registry

REGION = "us-east-1"
#: ``tests.support.jobs.effect.TABLE``, named here so that the benchmarks, which run the example's jobs
#: only, do not import (and so register) the test jobs (a test holds the two equal).
COUNTERS_RESOURCE = "testjobs_counters"


@dataclass
class Tier:
    sqs: Any
    dynamodb: Any
    queue_url: str
    queue_arn: str
    dlq_url: str
    idempotency_table: str
    #: The table of the example payments job (``cdk.json``'s resource ``functions.jobs.payments.TABLE``).
    payments_table: str
    #: The table of the test jobs' ``testjobs.effect`` (resource :data:`COUNTERS_RESOURCE`).
    counters_table: str
    #: The main queue's redrive ``maxReceiveCount`` (``None``: no redrive policy).
    max_receive_count: int | None = None
    #: receipt handles of messages a batch left in flight (failed or crashed), by message id
    in_flight: dict[str, str] = field(default_factory=dict)

    @property
    def resources(self) -> dict[str, str]:
        """The resources a consumer of this tier is given: ``{name: table name}``, as ``TierConfig.resources``."""
        from functions.jobs.payments import TABLE

        return {TABLE: self.payments_table, COUNTERS_RESOURCE: self.counters_table}

    def config(self, margin_ms: int = DEFAULT_TIME_BUDGET_MARGIN_MS, **retry: Any) -> TierConfig:
        return TierConfig(
            stage="test",
            tier="critical",
            queue_url=self.queue_url,
            dlq_url=self.dlq_url,
            idempotency_table=self.idempotency_table,
            resources=self.resources,
            # A queue with a redrive of N is a tier of N attempts: the stack makes them one number.
            retry=RetryPolicy(**{**self._attempts(), **retry}),
            time_budget_margin_ms=margin_ms,
        )

    def _attempts(self) -> dict[str, int]:
        return {"max_attempts": self.max_receive_count} if self.max_receive_count is not None else {}

    def consumer(
        self,
        *,
        client: Callable[[str], Any] | None = None,
        registry=default_registry,
        rand: Callable[[], float] = lambda: 0.5,
        margin_ms: int = DEFAULT_TIME_BUDGET_MARGIN_MS,
        **retry: Any,
    ) -> Consumer:
        clients = {"sqs": self.sqs, "dynamodb": self.dynamodb}
        return Consumer(self.config(margin_ms, **retry), registry, client=client or clients.__getitem__, rand=rand)

    def publish(self, job_type: str, payload: Any, key: str, **attributes: str) -> str:
        body = build(job_type, payload, key).to_json()
        return self.send_raw(body, **attributes)

    def send_raw(self, body: str, **attributes: str) -> str:
        extra = {"MessageAttributes": {k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()}}
        return self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body, **(extra if attributes else {}))[
            "MessageId"
        ]

    def receive(self, queue_url: str | None = None, max_messages: int = 10) -> list[dict]:
        return self.sqs.receive_message(
            QueueUrl=queue_url or self.queue_url,
            MaxNumberOfMessages=max_messages,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
            VisibilityTimeout=0,
        ).get("Messages", [])

    def event(self, messages: list[dict]) -> dict:
        return sqs_event(messages, self.queue_arn, REGION)

    def receive_for_batch(self, max_messages: int = 10) -> list[dict]:
        """Receive as the event source mapping does (the messages stay in flight until deleted)."""
        return self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=max_messages,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])

    def run_batch(self, consumer: Consumer, context: Any = None, max_messages: int = 10) -> dict:
        messages = self.receive_for_batch(max_messages)
        assert messages, "the queue had nothing to receive"
        return self.run_messages(consumer, messages, context)

    def run_messages(self, consumer: Consumer, messages: list[dict], context: Any = None) -> dict:
        """Invoke ``consumer`` on received ``messages`` and delete the ones it did not name as failures."""
        self.in_flight.update({m["MessageId"]: m["ReceiptHandle"] for m in messages})
        response = consumer.handle(self.event(messages), context or lambda_context())
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
        item = self.dynamodb.get_item(TableName=self.payments_table, Key={"account_id": {"S": account_id}}).get("Item")
        return int(item["balance"]["N"]) if item else 0

    def counter(self, name: str) -> int:
        """The total ``testjobs.effect`` has added to counter ``name`` (0 before any)."""
        item = self.dynamodb.get_item(TableName=self.counters_table, Key={"id": {"S": name}}).get("Item")
        return int(item["total"]["N"]) if item else 0


def create_tier(
    name: str = "bench",
    endpoint_url: str | None = None,
    *,
    visibility_timeout: int = 60,
    max_receive_count: int | None = None,
) -> Tier:
    """A tier's queue, DLQ (redrive when ``max_receive_count`` is given) and tables, as the stack
    shapes them (Powertools' key ``id``; the payments job's table: ``account_id``; the test jobs' counters: ``id``)."""
    kwargs = {"region_name": REGION, **({"endpoint_url": endpoint_url} if endpoint_url else {})}
    sqs, dynamodb = boto3.client("sqs", **kwargs), boto3.client("dynamodb", **kwargs)
    dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    attributes = {"VisibilityTimeout": str(visibility_timeout)}
    if max_receive_count is not None:
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count})
    queue_url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    tier = Tier(
        sqs,
        dynamodb,
        queue_url,
        queue_arn,
        dlq_url,
        f"{name}-idempotency",
        f"{name}-payments",
        f"{name}-counters",
        max_receive_count=max_receive_count,
    )
    for table, key in (
        (tier.idempotency_table, "id"),
        (tier.payments_table, "account_id"),
        (tier.counters_table, "id"),
    ):
        dynamodb.create_table(
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        )
    return tier


def create_rate_limit_table(dynamodb: Any, name: str) -> str:
    """The token buckets' table, shaped as the stack makes it (partition key ``bucket``)."""
    from tiered_jobs.contract.rate_limits import BUCKET_KEY_ATTRIBUTE

    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": BUCKET_KEY_ATTRIBUTE, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": BUCKET_KEY_ATTRIBUTE, "KeyType": "HASH"}],
    )
    return name


def env_for(tier: Tier, stage: str = "bench") -> dict[str, str]:
    import functions.jobs
    from tiered_jobs.contract.names import Env, Metrics

    return {
        Env.JOB_MODULES: functions.jobs.__name__,
        Env.STAGE: stage,
        Env.TIER: "critical",
        Env.QUEUE_URL: tier.queue_url,
        Env.DLQ_URL: tier.dlq_url,
        Env.IDEMPOTENCY_TABLE: tier.idempotency_table,
        **{Env.resource_var(name): value for name, value in tier.resources.items()},
        Env.POWERTOOLS_SERVICE_NAME: Metrics.SERVICE,
        Env.POWERTOOLS_METRICS_NAMESPACE: Metrics.NAMESPACE,
        Env.POWERTOOLS_LOG_LEVEL: "WARNING",
    }


def payment_bodies(count: int, prefix: str = "pay") -> list[str]:
    return [
        build(
            "payments.update_balance", {"account_id": f"acc-{i % 50}", "amount": 1 + i % 7}, f"{prefix}-{i}"
        ).to_json()
        for i in range(count)
    ]


def analytics_bodies(count: int, prefix: str = "evt") -> list[str]:
    return [
        build("analytics.record_event", {"event": "page_view", "properties": {"n": i}}, f"{prefix}-{i}").to_json()
        for i in range(count)
    ]


def chunks(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]
