"""The replay Lambda: inspect a tier's dead-letter queue and move letters back to its queue.

The handler is thin (event -> domain -> response); the operator CLI runs the same domain
directly: ``parse_event`` then ``run``. A bad event *raises* :class:`ReplayEventError`: the
console then shows the invocation as failed with the full message in ``errorMessage`` (every
problem and the allowed fields), and ``aws lambda invoke`` reports ``FunctionError``, so a
script can't mistake a refused event for an empty DLQ.
"""

from __future__ import annotations

from dataclasses import asdict
from functools import cache
from typing import Any

from .archive import JsonLinesArchive, S3Archive, archive_from_env, read_archive
from .events import MAX_MESSAGES_CAP, ReplayEventError, ReplayRequest, parse_event
from .grouping import normalise_message
from .service import approximate_depth, run
from .tiers import TierQueues, tiers_from_env

__all__ = [
    "MAX_MESSAGES_CAP", "JsonLinesArchive", "ReplayEventError", "ReplayRequest", "S3Archive", "TierQueues",
    "approximate_depth", "archive_from_env", "handler", "normalise_message", "parse_event", "read_archive", "run",
    "tiers_from_env",
]


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from functions.runtime import aws  # boto3 loads on the first invocation, not at import

    tiers = tiers_from_env()
    request = parse_event(event, tiers=tiers)
    _logger().info("replay requested", extra={"request": asdict(request)})  # who moved what, and when
    archive = archive_from_env(request.tier, aws.client("s3")) if request.action == "discard" else None
    result = run(request, sqs=aws.client("sqs"), tiers=tiers, remaining_ms=context.get_remaining_time_in_millis,
                 archive=archive)
    _logger().info("replay finished", extra={"result": {k: v for k, v in result.items()
                                                        if k not in ("groups", "letters")}})
    return result


@cache
def _logger() -> Any:
    from aws_lambda_powertools import Logger  # JSON logs, level from POWERTOOLS_LOG_LEVEL

    from tiered_jobs.contract.names import Metrics

    return Logger(service=Metrics.SERVICE)
