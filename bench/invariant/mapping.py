"""The run's event source mapping as Lambda keeps it, so that an operator's pause is the real one.

The run's pollers are the local runtime's (:mod:`emulator.esm`), as in local mode; the mapping they
poll for is a real one in moto's Lambda, read before every receive (``emulator.mapping_state.control``),
and paused and resumed with the very functions ``tiered-jobs pause`` / ``resume``, the console and the
replay function call (:mod:`tiered_jobs.replay.pause`): its ``Enabled`` flag and its tags.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from typing import Any

from emulator.esm import MappingControl

#: moto's account (the embedded AWS runs in this process: its store is read directly).
ACCOUNT = "123456789012"


def create_mapping(
    name: str, queue_arn: str, region: str, concurrency: int
) -> tuple[str, Callable[[], MappingControl]]:
    """A function and its SQS mapping (``MaximumConcurrency``: ``concurrency``, the run's pollers) in moto for the
    run's queue; ``(its UUID, the runtime's control)``.

    moto's SQS would invoke an enabled mapping itself, in Docker, on every send: the queue's reference
    to it is taken away at once, as local mode does (``emulator.mapping_state.hand_over``), so moto
    only stores its state and the local runtime is its one poller."""
    import boto3
    from moto.sqs.models import sqs_backends

    from emulator.mapping_state import control

    role = boto3.client("iam").create_role(RoleName=f"{name}-consumer", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:  # never run: the pollers invoke the real consumer in-process
        archive.writestr("handler.py", "def handler(event, context):\n    return {}\n")
    lambda_client = boto3.client("lambda", region_name=region)
    function = lambda_client.create_function(
        FunctionName=f"{name}-consumer",
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": code.getvalue()},
    )["FunctionArn"]
    uuid: str = lambda_client.create_event_source_mapping(
        EventSourceArn=queue_arn, FunctionName=function, ScalingConfig={"MaximumConcurrency": concurrency}
    )["UUID"]
    for queue in sqs_backends[ACCOUNT][region].queues.values():
        queue.lambda_event_source_mappings.pop(function, None)
    return uuid, control(uuid, ACCOUNT, region)


def lambda_client(region: str) -> Any:
    import boto3

    return boto3.client("lambda", region_name=region)
