"""The live per-tier view of a local session (the emulator's ``up``, the example's demo).

It renders :func:`tiered_jobs.operations.status.read_status`, the read ``tiered-jobs status`` and
the console's Tiers page show: what the view prints is what SQS and CloudWatch hold, not the
emulator's memory, and a figure that is wrong here is wrong there too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table

from emulator.metrics import RETENTION_SECONDS
from emulator.session import LocalSession
from tiered_jobs.contract.names import Metrics
from tiered_jobs.contract.tiers import TierQueues
from tiered_jobs.operations import status as stage_status
from tiered_jobs.operations.display import alarm_summary, format_duration
from tiered_jobs.operations.status import StageStatus, TierStatus

#: How often a live view reads the status again: the console's pace. Each read's ``GetMetricData``
#: runs in the process that also serves the stack; it once scanned every datapoint moto holds for
#: every minute of the hour (1 to 3.5 s a read once the demo's jobs had run, on a busy 2-core
#: machine), and is linear in them since moto_patches' gap 17, but a read every second or two would
#: still compete with the stack for nothing a person can follow.
REFRESH_SECONDS = 5.0


def read(session: LocalSession) -> StageStatus:
    """The session's stage, read as ``tiered-jobs status`` reads a deployed one."""
    assert session.deployment is not None, "the session is started"
    deployment = session.deployment
    tiers = {name: TierQueues(tier.queue_url, tier.dlq_url) for name, tier in deployment.tiers.items()}
    return stage_status.read_status(deployment.stage, tiers, session.clients, source=f"stack {deployment.stack_name}")


def rows(session: LocalSession) -> list[TierStatus]:
    """One consistent snapshot per tier (print it and check it from the same snapshot)."""
    return read(session).tiers


#: The view's columns, and the ones a narrower terminal drops, in turn: no value is ever cut or wrapped.
COLUMNS = ("tier", "visible", "in flight", "delayed", "DLQ", "oldest", "succeeded", "retried", "failed", "alarms")
DROPPED = (("delayed", "retried"), ("in flight", "failed"))


class TiersTable:
    """The tiers' table with as many columns as the width allows (all of them in a pipe: ``FullWidth``)."""

    def __init__(self, title: str, snapshot: Sequence[TierStatus]):
        self.title = title
        self.snapshot = list(snapshot)

    def layout(self, dropped: Sequence[str] = ()) -> Table:
        columns = [column for column in COLUMNS if column not in dropped]
        view = Table(
            title=self.title,
            caption="succeeded, retried, failed: the last hour; alarms: evaluated locally (emulation of CloudWatch)",
            expand=False,
        )
        for column in columns:
            view.add_column(column, justify="left" if column in ("tier", "alarms") else "right", no_wrap=True)
        for row in self.snapshot:
            cells = {
                "tier": row.tier,
                "visible": str(row.visible),
                "in flight": str(row.in_flight),
                "delayed": str(row.delayed),
                "DLQ": "–" if row.dlq is None else str(row.dlq),
                "oldest": format_duration(row.oldest_age_seconds),
                "succeeded": count(row.succeeded),
                "retried": count(row.retried),
                "failed": count(row.failed),
                "alarms": alarm_summary(row.alarms),
            }
            view.add_row(*(cells[column] for column in columns))
        return view

    def fitted(self, console: Console, width: int) -> Table:
        """The fullest layout whose natural width fits ``width`` (the leanest one if none does)."""
        dropped: list[str] = []
        for more in ((), *DROPPED):
            dropped += more
            layout = self.layout(dropped)
            if Measurement.get(console, console.options.update_width(10_000), layout).maximum <= width:
                return layout
        return layout

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.fitted(console, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.layout())


def table(session: LocalSession, title: str = "Tiers", snapshot: list[TierStatus] | None = None) -> TiersTable:
    return TiersTable(title, rows(session) if snapshot is None else snapshot)


def count(value: float | None) -> str:
    """A job count of the window (``–``: CloudWatch holds none)."""
    return "–" if value is None else f"{value:.0f}"


def safe_table(session: LocalSession, title: str = "Tiers") -> Any:
    """The table, or a one-line note while the endpoint is busy (the view must never crash a run)."""
    try:
        return table(session, title)
    except Exception as exc:  # noqa: BLE001
        return f"(view unavailable: {exc})"


# -- what the demo's story checks (not shown in the view) -----------------------------------------


def job_total(session: LocalSession, tier: str, metric: str, job_type: str | None = None) -> int:
    """A job metric summed over the metric store's window (the consumer's own EMF counts)."""
    assert session.metrics is not None and session.deployment is not None
    stage = session.deployment.stage
    dimensions = (
        {Metrics.DIM_STAGE: stage, Metrics.DIM_TIER: tier, Metrics.DIM_JOB_TYPE: job_type}
        if job_type
        else {Metrics.DIM_SERVICE: Metrics.SERVICE, Metrics.DIM_STAGE: stage, Metrics.DIM_TIER: tier}
    )
    return int(sum(session.metrics.values(Metrics.NAMESPACE, metric, dimensions, RETENTION_SECONDS)))


def queue_counts(session: LocalSession, queue_url: str) -> tuple[int, int]:
    """``(visible, in flight)`` of a queue."""
    counts = stage_status.queue_counts(session.clients("sqs"), queue_url)
    return counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]
