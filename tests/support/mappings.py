"""A tier's consumer and its SQS event source mapping in moto: what pause and the circuit breaker change."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import boto3

REGION = "us-east-1"


def moto_mapping(
    tier: str = "critical", *, maximum_concurrency: int | None = None, queue_url: str | None = None
) -> tuple[Any, str]:
    """``(lambda client, mapping UUID)`` inside ``mock_aws``: a function reading queue ``tier`` (made here),
    or the queue at ``queue_url`` when given (a deployment's own)."""
    role = boto3.client("iam").create_role(RoleName=f"{tier}-consumer", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return {}\n")
    lam = boto3.client("lambda", region_name=REGION)
    function = lam.create_function(
        FunctionName=f"{tier}-consumer",
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": code.getvalue()},
    )["FunctionArn"]
    sqs = boto3.client("sqs", region_name=REGION)
    queue = queue_url or sqs.create_queue(QueueName=tier)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    scaling = {} if maximum_concurrency is None else {"ScalingConfig": {"MaximumConcurrency": maximum_concurrency}}
    uuid = lam.create_event_source_mapping(EventSourceArn=arn, FunctionName=function, **scaling)["UUID"]
    return lam, uuid
