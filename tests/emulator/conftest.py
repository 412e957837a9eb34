"""Fixtures of the event source mapping tests (``test_local_esm*.py``): an SQS client and queues on the
embedded AWS, each given as ``(url, arn)``."""

from __future__ import annotations

import boto3
import pytest

#: The queues' region: the functions' of ``test_local_esm.py`` (``REGION``), whose records name it.
REGION = "us-east-1"


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs", region_name=REGION)


def create_queue(sqs, name: str, visibility_timeout: int) -> tuple[str, str]:
    url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": str(visibility_timeout)})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn


@pytest.fixture
def queue(sqs):
    """Visibility 0: whatever the runtime does not delete is visible again at once, for inspection."""
    return create_queue(sqs, "jobs", 0)


@pytest.fixture
def busy_queue(sqs):
    """A normal visibility timeout, for runs with several pollers."""
    return create_queue(sqs, "busy", 30)
