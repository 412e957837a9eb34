"""The event source mappings' state, as operators change it (pause, resume, maximum concurrency).

moto keeps a mapping's ``Enabled`` and ``ScalingConfig`` and answers ``UpdateEventSourceMapping``,
``GetEventSourceMapping`` and its tags like Lambda; but its SQS invokes an *enabled* mapping itself,
in Docker, on every ``SendMessage`` (``moto_patches``, gap 5), which is why the stack is created
with its mappings disabled. :func:`hand_over` then takes moto's queues' references to the mappings
away (moto's SQS invokes only the mappings its queue holds) and sets each mapping's ``Enabled`` back
to the template's: from then on moto only stores the state, and the local runtime
(:mod:`emulator.esm`) is the one poller, reading that state before every receive (:func:`control`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emulator.esm import MappingControl

EVENT_SOURCE_MAPPING = "AWS::Lambda::EventSourceMapping"


def hand_over(
    clients: Callable[[str], Any], stack_name: str, template: dict[str, Any], account: str, region: str
) -> dict[str, str]:
    """Detach every mapping of the stack from moto's queues, then enable the ones the template
    enables (all, unless it says ``Enabled: false``). Returns ``{function ARN: mapping UUID}``."""
    from moto.awslambda.models import lambda_backends
    from moto.sqs.models import sqs_backends

    cloudformation, lambda_client = clients("cloudformation"), clients("lambda")
    pages = cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name)
    mappings = {
        s["PhysicalResourceId"]: s["LogicalResourceId"]
        for page in pages
        for s in page["StackResourceSummaries"]
        if s["ResourceType"] == EVENT_SOURCE_MAPPING
    }
    backend = lambda_backends[account][region]
    queues = sqs_backends[account][region].queues
    handed: dict[str, str] = {}
    for uuid, logical_id in mappings.items():
        esm = backend.get_event_source_mapping(uuid)
        if esm is None:
            raise RuntimeError(f"event source mapping {logical_id} ({uuid}) is not in moto's Lambda")
        for queue in list(queues.values()):
            queue.lambda_event_source_mappings.pop(esm.function_arn, None)
        enabled = template["Resources"][logical_id].get("Properties", {}).get("Enabled", True) is not False
        lambda_client.update_event_source_mapping(UUID=uuid, Enabled=enabled)
        handed[esm.function_arn] = uuid
    return handed


def control(uuid: str, account: str, region: str) -> Callable[[], MappingControl]:
    """Reads the mapping's ``Enabled`` and ``MaximumConcurrency`` from moto's store (the server runs in
    this process): a dictionary look-up per receive, no request."""
    from moto.awslambda.models import lambda_backends

    backend = lambda_backends[account][region]

    def read() -> MappingControl:
        esm = backend.get_event_source_mapping(uuid)
        if esm is None:  # deleted: Lambda stops polling a deleted mapping
            return MappingControl(enabled=False)
        scaling = esm.scaling_config or {}
        return MappingControl(enabled=bool(esm.enabled), maximum_concurrency=scaling.get("MaximumConcurrency"))

    return read
