"""A tier's queues and tables on moto, and Lambda SQS events, for the benchmarks."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import boto3

from tiered_jobs.contract.envelope import build

REGION = "us-east-1"


@dataclass
class BenchTier:
    sqs: Any
    dynamodb: Any
    queue_url: str
    queue_arn: str
    dlq_url: str
    idempotency_table: str
    accounts_table: str


def create_tier(name: str = "bench", endpoint_url: str | None = None, *, visibility_timeout: int = 60,
                max_receive_count: int | None = None) -> BenchTier:
    """A tier's queue, DLQ (redrive when ``max_receive_count`` is given) and tables, as the stack
    shapes them (Powertools' key ``id``; the accounts table's ``account_id``)."""
    kwargs = {"region_name": REGION, **({"endpoint_url": endpoint_url} if endpoint_url else {})}
    sqs, dynamodb = boto3.client("sqs", **kwargs), boto3.client("dynamodb", **kwargs)
    dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    attributes = {"VisibilityTimeout": str(visibility_timeout)}
    if max_receive_count is not None:
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count})
    queue_url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    tier = BenchTier(sqs, dynamodb, queue_url, queue_arn, dlq_url, f"{name}-idempotency", f"{name}-accounts")
    for table, key in ((tier.idempotency_table, "id"), (tier.accounts_table, "account_id")):
        dynamodb.create_table(
            TableName=table, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        )
    return tier


def create_rate_limit_table(dynamodb: Any, name: str) -> str:
    """The token buckets' table, shaped as the stack makes it (partition key ``bucket``)."""
    from tiered_jobs.contract.rate_limits import BUCKET_KEY_ATTRIBUTE

    dynamodb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": BUCKET_KEY_ATTRIBUTE, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": BUCKET_KEY_ATTRIBUTE, "KeyType": "HASH"}],
    )
    return name


def env_for(tier: BenchTier, stage: str = "bench") -> dict[str, str]:
    from tiered_jobs.contract.names import JOB_MODULES, Env, Metrics

    return {
        Env.JOB_MODULES: ",".join(JOB_MODULES), Env.STAGE: stage, Env.TIER: "critical", Env.QUEUE_URL: tier.queue_url, Env.DLQ_URL: tier.dlq_url,
        Env.IDEMPOTENCY_TABLE: tier.idempotency_table, Env.ACCOUNTS_TABLE: tier.accounts_table,
        Env.POWERTOOLS_SERVICE_NAME: Metrics.SERVICE, Env.POWERTOOLS_METRICS_NAMESPACE: Metrics.NAMESPACE,
        Env.POWERTOOLS_LOG_LEVEL: "WARNING",
    }


def payment_bodies(count: int, prefix: str = "pay") -> list[str]:
    return [build("payments.update_balance", {"account_id": f"acc-{i % 50}", "amount": 1 + i % 7},
                  f"{prefix}-{i}").to_json() for i in range(count)]


def analytics_bodies(count: int, prefix: str = "evt") -> list[str]:
    return [build("analytics.record_event", {"event": "page_view", "properties": {"n": i}},
                  f"{prefix}-{i}").to_json() for i in range(count)]


def sqs_event(bodies: list[str], queue_arn: str, receive_count: int = 1) -> dict:
    """A Lambda SQS event for bodies that need no SQS round trip (successful jobs)."""
    return {"Records": [{
        "messageId": str(uuid.uuid4()), "receiptHandle": f"rh-{uuid.uuid4()}", "body": body,
        "attributes": {"ApproximateReceiveCount": str(receive_count), "SentTimestamp": "0",
                       "ApproximateFirstReceiveTimestamp": "0"},
        "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn, "awsRegion": REGION,
    } for body in bodies]}


def chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def lambda_context(remaining_ms: int = 30_000, function_name: str = "tiered-jobs-bench-consumer"):
    """The Lambda context the local runtime passes to handlers, ``remaining_ms`` from now."""
    import time

    from emulator.worker import LambdaContext

    return LambdaContext(function_name=function_name, memory_mb=256,
                         invoked_function_arn=f"arn:aws:lambda:{REGION}:123456789012:function:{function_name}",
                         request_id="bench", deadline_ms=int(time.time() * 1000) + remaining_ms,
                         log_group_name=f"/aws/lambda/{function_name}", log_stream_name="bench")
