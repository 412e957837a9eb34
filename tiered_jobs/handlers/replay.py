"""Lambda entry point of the replay function (``tiered_jobs.handlers.replay.handler``).

Thin on purpose: event -> :mod:`tiered_jobs.replay` -> response. A bad event raises
:class:`~tiered_jobs.replay.ReplayEventError` (the invocation fails with the full message).
"""

from __future__ import annotations

from dataclasses import asdict
from functools import cache
from typing import Any

from tiered_jobs.replay import archive_from_env, parse_event, run, tiers_from_env
from tiered_jobs.replay.breaker import handle_alarm, is_alarm_event
from tiered_jobs.replay.pause import PAUSE_ACTIONS, handle_event, mappings_from_env
from tiered_jobs.replay.reconcile import is_reconcile_event, reconcile


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from tiered_jobs.runtime import (
        aws,  # boto3 loads on the first invocation, not at import
    )

    if is_alarm_event(event) or is_reconcile_event(event):
        # A circuit breaker's alarm changed state (CloudWatch's Lambda action), or the rule's five-minute
        # reconcile: both asynchronous, retried by Lambda, their last failure sent to the alarm topic.
        import os

        from tiered_jobs.contract.names import Env

        topic = os.environ.get(Env.BREAKER_PAGE_TOPIC)

        def page(subject: str, message: str) -> object:  # the closing page, on the alarms' own topic
            return aws.client("sns").publish(TopicArn=topic, Subject=subject, Message=message)

        breaker = handle_alarm if is_alarm_event(event) else reconcile
        result = breaker(
            event,
            stage=os.environ[Env.STAGE],
            mappings=mappings_from_env(os.environ.get(Env.REPLAY_MAPPINGS)),
            lambda_client=aws.client("lambda"),
            cloudwatch=aws.client("cloudwatch"),
            page=page if topic else None,
        )
        _logger().info("circuit breaker", extra={"event": _summary(event), "result": result})  # what it did, why
        return result
    if isinstance(event, dict) and event.get("action") in PAUSE_ACTIONS:  # the tier's mapping, not its letters
        import os

        from tiered_jobs.contract.names import Env

        mappings = mappings_from_env(os.environ.get(Env.REPLAY_MAPPINGS))
        _logger().info("tier mapping change requested", extra={"request": dict(event)})  # who paused what, and when
        return handle_event(event, mappings, aws.client("lambda"))
    tiers = tiers_from_env()
    request = parse_event(event, tiers=tiers)
    _logger().info("replay requested", extra={"request": asdict(request)})  # who moved what, and when
    archive = archive_from_env(request.tier, aws.client("s3")) if request.action == "discard" else None
    result = run(
        request, sqs=aws.client("sqs"), tiers=tiers, remaining_ms=context.get_remaining_time_in_millis, archive=archive
    )
    _logger().info(
        "replay finished", extra={"result": {k: v for k, v in result.items() if k not in ("groups", "letters")}}
    )
    return result


def _summary(event: dict[str, Any]) -> dict[str, Any]:
    """Which alarm change (and when) or which reconcile: what a late or duplicated delivery is told apart by."""
    data = event.get("alarmData")
    if isinstance(data, dict):
        state = data.get("state") or {}
        return {"alarm": data.get("alarmName"), "state": state.get("value"), "changed_at": state.get("timestamp")}
    return {"action": event.get("action"), "tiers": event.get("tiers")}


@cache
def _logger() -> Any:
    from tiered_jobs.runtime.logger import powertools_logger

    return powertools_logger()
