"""Fixtures: a miniature stack in moto (its routes also send the library's test jobs, ``testjobs.*``, to
the critical tier), a publisher that never really sleeps, and the stage's one-time scheduling parts."""

from __future__ import annotations

import json

import boto3
import pytest

from bench.calls import CallCounter
from tests.support.stack import ROUTES, FakeDeployment, deploy
from tiered_jobs.contract.names import Schedules
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher
from tiered_jobs.stage.scheduling import SchedulingTarget

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


#: The miniature stage's schedule group and the role its one-time schedules send with.
GROUP = Schedules.group_name("test")
ROLE_ARN = "arn:aws:iam::123456789012:role/one-time"


@pytest.fixture
def scheduler(aws):
    """Scheduler on the embedded AWS, the stage's group created."""
    client = boto3.client("scheduler")
    client.create_schedule_group(Name=GROUP)
    return client


@pytest.fixture
def target(deployment, sqs) -> SchedulingTarget:
    """Where the stage's one-time schedules go: its tier queues, the schedules' DLQ, ``ROLE_ARN``."""
    arns = {
        tier: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for tier, url in deployment.queue_urls.items()
    }
    dlq = sqs.create_queue(QueueName="schedules-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return SchedulingTarget(group_name=GROUP, role_arn=ROLE_ARN, dlq_arn=dlq_arn, queue_arns=arns)


@pytest.fixture
def counter() -> CallCounter:
    """Counts the requests of the clients attached to it (``counter.attach(client)``), by service and operation."""
    return CallCounter()
