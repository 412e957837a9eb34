"""The live per-tier view of a local session (the emulator's ``demo`` and ``up``).

Queue counts and alarm states are read as ``tiered-jobs status`` reads them (:mod:`tiered_jobs.operations.status`):
what the view prints is what CloudWatch and SQS hold, not the evaluator's memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table

from emulator.metrics import RETENTION_SECONDS
from emulator.session import LocalSession
from tiered_jobs.contract.names import Metrics
from tiered_jobs.operations import status as status_reads


@dataclass(frozen=True)
class TierRow:
    tier: str
    depth: int
    in_flight: int
    succeeded: int
    retried: int
    dead_lettered: int
    dlq: int
    alarms: dict[str, str]


def job_total(session: LocalSession, tier: str, metric: str, job_type: str | None = None) -> int:
    """A job metric summed over the metric store's window (the consumer's own EMF counts)."""
    assert session.metrics is not None and session.deployment is not None
    stage = session.deployment.stage
    dimensions = ({Metrics.DIM_STAGE: stage, Metrics.DIM_TIER: tier, Metrics.DIM_JOB_TYPE: job_type} if job_type else
                  {Metrics.DIM_SERVICE: Metrics.SERVICE, Metrics.DIM_STAGE: stage, Metrics.DIM_TIER: tier})
    return int(sum(session.metrics.values(Metrics.NAMESPACE, metric, dimensions, RETENTION_SECONDS)))


def queue_counts(session: LocalSession, queue_url: str) -> tuple[int, int]:
    """``(visible, in flight)`` of a queue."""
    counts = status_reads.queue_counts(session.clients("sqs"), queue_url)
    return counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]


def rows(session: LocalSession) -> list[TierRow]:
    """One consistent snapshot per tier (print it and check it from the same snapshot)."""
    assert session.deployment is not None
    stage = session.deployment.stage
    states = status_reads.alarm_states(session.clients("cloudwatch"), stage)
    result = []
    for name, tier in session.deployment.tiers.items():
        depth, in_flight = queue_counts(session, tier.queue_url)
        dlq_visible, dlq_in_flight = queue_counts(session, tier.dlq_url)
        result.append(TierRow(
            tier=name, depth=depth, in_flight=in_flight,
            succeeded=job_total(session, name, Metrics.SUCCEEDED), retried=job_total(session, name, Metrics.RETRIED),
            dead_lettered=job_total(session, name, Metrics.DEAD_LETTERED), dlq=dlq_visible + dlq_in_flight,
            alarms=status_reads.tier_alarms(states, stage, name),
        ))
    return result


def table(session: LocalSession, title: str = "Tiers", snapshot: list[TierRow] | None = None) -> Table:
    view = Table(title=title, caption="alarms: evaluated locally (emulation of CloudWatch)", expand=False)
    for column in ("tier", "depth", "in flight", "succeeded", "retried", "dead-lettered", "DLQ", "alarms"):
        view.add_column(column, justify="left" if column in ("tier", "alarms") else "right")
    for row in rows(session) if snapshot is None else snapshot:
        view.add_row(row.tier, str(row.depth), str(row.in_flight), str(row.succeeded), str(row.retried),
                     str(row.dead_lettered), str(row.dlq), status_reads.alarm_summary(row.alarms))
    return view


def safe_table(session: LocalSession, title: str = "Tiers") -> Any:
    """The table, or a one-line note while the endpoint is busy (the view must never crash a run)."""
    try:
        return table(session, title)
    except Exception as exc:  # noqa: BLE001
        return f"(view unavailable: {exc})"
