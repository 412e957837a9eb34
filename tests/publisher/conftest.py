"""Fixtures: a miniature stack in moto (its routes also send the library's test jobs, ``testjobs.*``, to
the critical tier), and a publisher that never really sleeps."""

from __future__ import annotations

import json

import boto3
import pytest

from tests.support.stack import ROUTES, FakeDeployment, deploy
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher

#: The tier of the library's own test jobs (tests/support/jobs) in this folder's deployment.
TEST_JOBS_TIER = "critical"


@pytest.fixture
def deployment(aws) -> FakeDeployment:
    """The miniature stack, its routing table the default plus ``testjobs.*``."""
    return deploy(routes={**ROUTES, "testjobs.*": TEST_JOBS_TIER})


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
