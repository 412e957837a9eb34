"""Fixtures: a miniature stack in moto, and a publisher that never really sleeps."""

from __future__ import annotations

import json

import boto3
import pytest

from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs")


@pytest.fixture
def waits() -> list[float]:
    """The backoff waits the publisher asked for (its ``sleep`` is ``waits.append``)."""
    return []


@pytest.fixture
def publisher(deployment, sqs, waits) -> Publisher:
    return Publisher(deployment.queue_urls, Routes(deployment.routes), sqs=sqs, sleep=waits.append, random=lambda: 0.5)


@pytest.fixture
def batch_calls(sqs) -> list[tuple[str, list[str]]]:
    """Every SendMessageBatch call on ``sqs``: (queue URL, idempotency keys), seen by a botocore hook."""
    calls: list[tuple[str, list[str]]] = []

    def record(params, **_):
        calls.append((params["QueueUrl"], [json.loads(e["MessageBody"])["idempotency_key"] for e in params["Entries"]]))

    sqs.meta.events.register("before-parameter-build.sqs.SendMessageBatch", record)
    return calls
