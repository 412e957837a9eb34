"""The native mode: hand an unfiltered bulk move to SQS's own ``StartMessageMoveTask``.

SQS moves every letter of the DLQ to the tier's main queue by itself, as is: bodies and *all*
attributes, ``DeadLetter.*`` included, no ``Replay.*`` added (the consumer treats a letter it
receives again like any job). It is the fastest way to drain a big DLQ after a fix, and runs
beyond the Lambda's 15 minutes. Only one move task may run per queue at a time; SQS refuses a
second one with an error the operator sees as is.

moto does not implement ``StartMessageMoveTask``: the tests drive this module with botocore's
``Stubber``.
"""

from __future__ import annotations

from typing import Any

from .events import ReplayRequest, response
from .tiers import TierQueues


def start_move_task(request: ReplayRequest, *, sqs: Any, queues: TierQueues) -> dict[str, Any]:
    """Start the move (or, for a dry run, only count what it would move)."""
    dlq = sqs.get_queue_attributes(QueueUrl=queues.dlq_url, AttributeNames=["QueueArn", "ApproximateNumberOfMessages"])
    depth = int(dlq["Attributes"]["ApproximateNumberOfMessages"])
    if request.dry_run:
        return response(request, matched=depth, left_in_dlq=depth, stopped_because="dry_run")
    main = sqs.get_queue_attributes(QueueUrl=queues.queue_url, AttributeNames=["QueueArn"])
    arguments: dict[str, Any] = {
        "SourceArn": dlq["Attributes"]["QueueArn"],
        "DestinationArn": main["Attributes"]["QueueArn"],
    }
    if request.max_per_second is not None:
        arguments["MaxNumberOfMessagesPerSecond"] = int(request.max_per_second)
    task = sqs.start_message_move_task(**arguments)
    return response(
        request, matched=depth, left_in_dlq=depth, stopped_because="move_task_started", task_handle=task["TaskHandle"]
    )
