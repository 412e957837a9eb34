"""``tiered-jobs status``: every tier's status as a table or JSON, the live job counts per tier and
job type, and each tier's rate limit.

The status is :func:`tiered_jobs.operations.status.read_status`, the read the console's Tiers page
and the emulator's live view show too; this module only renders it, and adds the configured rate
limits: they change with a deploy, not with traffic, so they are no part of what a console refresh reads.

Its AWS calls, for ``n`` tiers: the discovery (one ``DescribeStacks``, or the SSM look-ups), the
status read (``2n`` ``GetQueueAttributes``, one ``DescribeAlarms`` page per 100 alarms, one
``ListMetrics`` page per 500 series (the job types), **one** ``GetMetricData`` for every CloudWatch
figure of every tier and job type, the live counts among them) and one ``GetParameters`` per 10
tiers (rate limits): ``2n + 5`` with a stack (up to 10 tiers), 11 for three.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ..operations.display import alarm_summary, format_duration
from ..operations.errors import client_error_text
from ..operations.status import StageStatus, read_status
from ..stage.target import Target
from .common import reported_errors, terminal
from .counts_table import jobs_table

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()


@commands.command()
def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Per tier: messages waiting, in flight and delayed, DLQ depth, oldest message age, throttles, alarms;
    jobs completed, failed, retried and held in the last 1, 5 and 60 minutes, per tier and job type."""
    with reported_errors():
        target: Target = ctx.obj
        deployment = target.deployment()
        read = read_status(target.stage, deployment.tiers, target.client, source=deployment.source, by_job_type=True)
        notes = list(read.notes)
        rates = _rates(target, read, notes)
        paused = _paused(target, read, deployment.tiers, notes)
        if as_json:
            terminal().print_json(
                data={
                    "stage": read.stage,
                    "source": read.source,
                    "tiers": [row.to_dict() for row in read.tiers],
                    "job_types": [asdict(row) for row in read.job_types],
                    "rates": rates,
                    "paused": paused,
                }
            )
            return
        table = Table(title=f"Tiered Jobs · stage {read.stage} · {read.source}")
        for title in ("Tier", "Visible", "In flight", "Delayed", "DLQ", "Oldest", "Throttled", "Alarms"):
            table.add_column(
                title,
                justify="left" if title in ("Tier", "Alarms") else "right",
                no_wrap=True,
                min_width=max(map(len, deployment.tiers)) if title == "Tier" else None,
            )
        for row in read.tiers:
            table.add_row(
                row.tier,
                str(row.visible),
                str(row.in_flight),
                str(row.delayed),
                _dlq_cell(row.dlq),
                format_duration(row.oldest_age_seconds),
                _throttles_cell(row.throttles),
                alarm_summary(row.alarms),
            )
        _print_full_width(table)
        for state in paused.values():
            terminal().print(f"[bold yellow]{escape(state['line'])}[/]", soft_wrap=True)
        _print_full_width(jobs_table(read))
        _print_rates(rates)
        for note in notes:
            terminal(stderr=True).print(f"note: {escape(note)}")


def _rates(target: Target, read: StageStatus, notes: list[str]) -> dict[str, dict[str, Any]]:
    """Per tier: the configured rate limit (``None``: not limited)."""
    from botocore.exceptions import ClientError

    from ..operations import rates

    try:
        limits = rates.configured(target.client("ssm"), target.stage, [row.tier for row in read.tiers])
    except ClientError as exc:  # an extra, like the CloudWatch figures: the column stays blank
        limits = {}
        notes.append(f"rate limits unavailable ({client_error_text(exc)})")
    return {
        row.tier: {
            "rate_limit": limits[row.tier].to_dict() if row.tier in limits else None,
            "rate_limit_text": limits[row.tier].describe() if row.tier in limits else "none",
        }
        for row in read.tiers
    }


def _paused(target: Target, read: StageStatus, tiers: Any, notes: list[str]) -> dict[str, dict[str, Any]]:
    """``{tier: its mapping's state and the status line}`` of the paused tiers (an extra, like the rates)."""
    from botocore.exceptions import ClientError

    from ..operations import pausing

    try:
        states = pausing.read_pauses(target.stage, [row.tier for row in read.tiers], target.client)
        return {
            tier: {
                **state.to_dict(),
                "retention_seconds": (retention := pausing.retention_seconds(target.client, tiers[tier].queue_url)),
                "line": pausing.paused_line(
                    state, oldest_age_seconds=read.tier(tier).oldest_age_seconds, retention=retention
                ),
            }
            for tier, state in states.items()
            if state.paused
        }
    except ClientError as exc:
        notes.append(f"paused tiers unknown ({client_error_text(exc)})")
        return {}


def _print_full_width(table: Table) -> None:
    """On a terminal, fit its width (a tier's name is never cut); elsewhere (a pipe, a file) every column whole."""
    from rich.measure import Measurement

    console = terminal()
    if not console.is_terminal:
        natural = Measurement.get(console, console.options.update_width(10_000), table).maximum
        console.width = max(console.width, natural)
    console.print(table)


def _print_rates(rates: dict[str, dict[str, Any]]) -> None:
    from rich import box

    table = Table(title="Rates", box=box.SIMPLE_HEAD)
    for title in ("Tier", "Rate limit"):
        table.add_column(title)
    for tier, rate in rates.items():
        table.add_row(tier, escape(rate["rate_limit_text"]))
    terminal().print(table)


def _throttles_cell(throttles: float | None) -> str:
    """Throttled invocations of the consumer in the last 5 minutes (``–``: not readable)."""
    if throttles is None:
        return "–"
    return f"[bold red]{throttles:.0f}[/]" if throttles else "0"


def _dlq_cell(depth: int | None) -> str:
    if depth is None:
        return "–"
    return f"[bold red]{depth}[/]" if depth else "0"
