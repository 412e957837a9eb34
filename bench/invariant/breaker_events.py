"""The circuit breaker's alarm events, delivered as Lambda delivers an asynchronous invoke: at least once.

CloudWatch's Lambda alarm action invokes the replay function asynchronously. Lambda retries an
asynchronous invocation that failed (twice by default) and may deliver one event more than once. The
composed run moves its tier's breaker through its three changes mid-run (open, half-open, closed) with
``tiered_jobs.replay.breaker.handle_alarm`` on the run's real mapping (moto's Lambda, read by the
pollers before every receive), and each change's event is delivered three times: a first delivery that
dies midway (one Lambda call of its raising, as a process that dies there), Lambda's retry of it, and a
duplicate. The breaker must end closed, its mapping enabled with the concurrency it had and no record of
the breaker left, with nothing received while it was open and no poller above the probe's concurrency
receiving while it was half-open (:class:`BreakerRecord`, read by the checker).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract.names import Alarms

from .plan import FaultPlan, Wrapped

#: The stage the breaker's alarms are named for (``Alarms.name``).
STAGE = "bench"
#: The account and region of moto's CloudWatch alarm ARNs.
ACCOUNT, REGION = "123456789012", "us-east-1"
#: Each change, the alarm that makes it, and the outcome ``handle_alarm`` answers for it.
CHANGES = (
    (Alarms.CIRCUIT_BREAKER, "ALARM", "opened"),
    (Alarms.CIRCUIT_BREAKER, "OK", "half-open"),
    (Alarms.CIRCUIT_PROBE, "ALARM", "closed"),
)
#: The Lambda call each change's first delivery dies at, in turn (every change makes at least one).
DIES_AT = ("update_event_source_mapping", "tag_resource", "untag_resource")


class DeliveryDied(Exception):
    """The replay function's invocation died midway (injected): Lambda retries the asynchronous event."""


@dataclass
class BreakerRecord:
    """What the breaker's deliveries did, and what the pollers did meanwhile (thread-safe counts)."""

    changes: int = 0
    deliveries: int = 0
    failed_deliveries: int = 0
    duplicated_deliveries: int = 0
    pages: int = 0
    #: When the open breaker's disable had landed, and when the half-open probe's concurrency had.
    opened_at: float | None = None
    probing_at: float | None = None
    received_while_open: int = 0
    received_above_probe: int = 0
    #: How the mapping ended (``None``: as it began: enabled, its concurrency, no breaker tags), else said.
    ended_off: str | None = None
    outcomes: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def receive(self, messages: int, read_at: float, poller: int) -> None:
        """A poller received ``messages`` after reading the mapping's state at ``read_at``."""
        from tiered_jobs.replay.breaker import PROBE_CONCURRENCY

        with self._lock:
            if self.opened_at is not None and read_at > self.opened_at:
                self.received_while_open += messages
            if self.probing_at is not None and read_at > self.probing_at and poller >= PROBE_CONCURRENCY:
                self.received_above_probe += messages


def create_alarms(cloudwatch: Any, tier: str) -> None:
    """The tier's two breaker alarms in moto's CloudWatch (half-open sets the probe's state)."""
    for kind in (Alarms.CIRCUIT_BREAKER, Alarms.CIRCUIT_PROBE):
        cloudwatch.put_metric_alarm(
            AlarmName=Alarms.name(STAGE, tier, kind),
            Namespace="TieredJobs",
            MetricName="JobsProcessed",
            Statistic="Sum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="GreaterThanThreshold",
        )


def event(tier: str, kind: str, state: str, changed_at: datetime) -> dict[str, Any]:
    """CloudWatch's event for an alarm's change of state, as its Lambda action sends it."""
    name = Alarms.name(STAGE, tier, kind)
    return {
        "source": "aws.cloudwatch",
        "alarmArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}",
        "accountId": ACCOUNT,
        "region": REGION,
        "alarmData": {
            "alarmName": name,
            "state": {"value": state, "timestamp": changed_at.isoformat(timespec="milliseconds")},
            "previousState": {"value": "OK" if state == "ALARM" else "ALARM"},
        },
    }


def deliver_changes(
    record: BreakerRecord,
    plan: FaultPlan,
    *,
    tier: str,
    uuid: str,
    lambda_client: Any,
    cloudwatch: Any,
    wait: Callable[[float], None] = time.sleep,
) -> None:
    """Open, half-open and close the breaker, each change's event delivered three times (died, retried,
    duplicated), ``plan.breaker_open_seconds`` open and ``plan.breaker_probe_seconds`` half-open."""
    from tiered_jobs.replay.breaker import handle_alarm

    def page(subject: str, message: str) -> None:
        with record._lock:
            record.pages += 1

    for index, (kind, state, expected) in enumerate(CHANGES):
        changed = event(tier, kind, state, datetime.now(timezone.utc))
        if expected == "half-open":
            with record._lock:
                record.opened_at = None  # the mapping is enabled again inside this change
        if expected == "closed":
            with record._lock:
                record.probing_at = None
        dies_at = DIES_AT[index % len(DIES_AT)]
        for delivery in ("dies", "retried", "duplicate"):
            client = lambda_client
            if delivery == "dies":
                client = Wrapped(lambda_client, _dying_at(dies_at))
            try:
                answer = handle_alarm(
                    changed, stage=STAGE, mappings={tier: uuid}, lambda_client=client, cloudwatch=cloudwatch, page=page
                )
            except DeliveryDied:
                with record._lock:
                    record.failed_deliveries += 1
                    plan.injected["breaker_delivery_died"] += 1
                continue
            with record._lock:
                record.deliveries += 1
                record.outcomes.append(f"{expected} ({delivery}): {answer['outcome']}")
                if delivery == "duplicate":
                    record.duplicated_deliveries += 1
                    plan.injected["breaker_delivery_duplicated"] += 1
                if expected == "opened" and record.opened_at is None:
                    record.opened_at = time.monotonic()  # every read from now on finds it disabled
                if expected == "half-open" and record.probing_at is None:
                    record.probing_at = time.monotonic()
        with record._lock:
            record.changes += 1
        if expected == "opened":
            wait(plan.breaker_open_seconds)
        elif expected == "half-open":
            wait(plan.breaker_probe_seconds)


def check_ended(record: BreakerRecord, *, uuid: str, lambda_client: Any, concurrency: int) -> None:
    """How the breaker left the mapping once every change was delivered: enabled, with ``concurrency``, and no
    record of the breaker (its tags); anything else is said in ``record.ended_off``."""
    from tiered_jobs.replay.breaker import TAG_CIRCUIT, TAG_RESTORE
    from tiered_jobs.replay.pause import TAG_PAUSED_BY

    mapping = lambda_client.get_event_source_mapping(UUID=uuid)
    tags = lambda_client.list_tags(Resource=mapping["EventSourceMappingArn"]).get("Tags", {})
    left = sorted(set(tags) & {TAG_CIRCUIT, TAG_RESTORE, TAG_PAUSED_BY})
    scaling = (mapping.get("ScalingConfig") or {}).get("MaximumConcurrency")
    if mapping.get("State") != "Enabled" or scaling != concurrency or left or record.changes != len(CHANGES):
        record.ended_off = (
            f"state {mapping.get('State')}, maximum concurrency {scaling} (had {concurrency}), breaker tags {left}, "
            f"{record.changes} of {len(CHANGES)} changes; deliveries: {record.outcomes}"
        )


def _dying_at(call: str) -> Callable[[str, dict[str, Any]], None]:
    def before(op: str, kwargs: dict[str, Any]) -> None:
        if op == call:
            raise DeliveryDied(f"the replay function's invocation died in {call} (injected)")

    return before
