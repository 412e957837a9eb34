"""``tiered-jobs status``: per tier the queue counts, DLQ depth, oldest age, recent throttles, alarms
and rates (the reads of :mod:`tiered_jobs.operations.status`, shared with the emulator's live view).

Its AWS calls, for ``n`` tiers: the discovery (one ``DescribeStacks``, or the SSM look-ups), ``2n``
``GetQueueAttributes``, one ``DescribeAlarms`` page per 100 alarms, **one** ``GetMetricData`` for
every tier's oldest age and throttles, one ``GetParameters`` per 10 tiers (rate limits) and ``n``
``GetMetricStatistics`` (completed jobs): ``3n + 4`` with a stack (up to 10 tiers), 13 for three.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ..contract.names import consumer_function_name
from ..operations import status as status_reads
from ..operations.errors import client_error_text
from ..operations.status import format_duration
from ..stage.target import Target
from .common import app, reported_errors, terminal


@app.command()
def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Per tier: messages waiting, in flight and delayed, DLQ depth, oldest message age, throttles, alarms."""
    with reported_errors():
        target: Target = ctx.obj
        deployment = target.deployment()
        sqs = target.client("sqs")
        cloudwatch = target.client("cloudwatch")
        notes: list[str] = []
        alarms = _optional("alarm states", lambda: _alarm_states(cloudwatch, target.stage), notes)
        consumers = {tier: consumer_function_name(target.stage, tier) for tier in deployment.tiers}
        figures = _optional("oldest age and throttles",
                            lambda: asdict(_metric_figures(cloudwatch, deployment.queue_urls(), consumers)), notes)
        ages, throttles = figures.get("ages", {}), figures.get("throttles", {})
        rows: list[dict[str, Any]] = []
        for tier, urls in deployment.tiers.items():
            main = status_reads.queue_counts(sqs, urls.queue_url)
            rows.append(
                {
                    "tier": tier,
                    "visible": main["ApproximateNumberOfMessages"],
                    "in_flight": main["ApproximateNumberOfMessagesNotVisible"],
                    "delayed": main["ApproximateNumberOfMessagesDelayed"],
                    "dlq": status_reads.queue_counts(sqs, urls.dlq_url)["ApproximateNumberOfMessages"]
                    if urls.dlq_url
                    else None,
                    "oldest_age_seconds": ages.get(tier),
                    "throttles": throttles.get(tier),
                    "alarms": status_reads.tier_alarms(alarms, target.stage, tier),
                }
            )
        rates = _rates(target, [row["tier"] for row in rows], notes)
        if as_json:
            terminal().print_json(data={"stage": target.stage, "source": deployment.source, "tiers": rows,
                                        "rates": rates})
            return
        table = Table(title=f"Tiered Jobs · stage {target.stage} · {deployment.source}")
        for title in ("Tier", "Visible", "In flight", "Delayed", "DLQ", "Oldest", "Throttled", "Alarms"):
            table.add_column(title, justify="left" if title in ("Tier", "Alarms") else "right",
                             no_wrap=True, min_width=max(map(len, deployment.tiers)) if title == "Tier" else None)
        for row in rows:
            table.add_row(
                row["tier"], str(row["visible"]), str(row["in_flight"]), str(row["delayed"]),
                _dlq_cell(row["dlq"]), _duration(row["oldest_age_seconds"]), _throttles_cell(row["throttles"]),
                status_reads.alarm_summary(row["alarms"]),
            )
        _print_full_width(table)
        _print_rates(rates)
        for note in notes:
            terminal(stderr=True).print(f"note: {escape(note)}")


#: The reads ``status`` makes (shared with the local mode's live view); module names so tests can swap them.
_alarm_states = status_reads.alarm_states
_metric_figures = status_reads.metric_figures


def _rates(target: Target, tiers: list[str], notes: list[str]) -> dict[str, dict[str, Any]]:
    """Per tier: the configured rate limit (``None``: not limited) and completed jobs per second."""
    from ..operations import rates

    limits = _optional("rate limits", lambda: rates.configured(target.client("ssm"), target.stage, tiers), notes)
    current = _optional("current rates", lambda: rates.current(target.client("cloudwatch"), target.stage, tiers), notes)
    return {tier: {"rate_limit": limits[tier].to_dict() if tier in limits else None,
                   "rate_limit_text": limits[tier].describe() if tier in limits else "none",
                   "completed_per_second": current.get(tier)} for tier in tiers}


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

    from ..operations.rates import LOOKBACK_SECONDS

    table = Table(title="Rates", box=box.SIMPLE_HEAD)
    for title in ("Tier", "Rate limit", f"Completed/s (last {LOOKBACK_SECONDS // 60} min)"):
        table.add_column(title, justify="right" if title.startswith("Completed") else "left")
    for tier, rate in rates.items():
        done = rate["completed_per_second"]
        table.add_row(tier, escape(rate["rate_limit_text"]), "–" if done is None else f"{done:.2f}")
    terminal().print(table)



def _optional(what: str, read: Callable[[], dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    """CloudWatch reads are extras: without the permission, the column stays blank and a note says why."""
    from botocore.exceptions import ClientError

    try:
        return read()
    except ClientError as exc:
        notes.append(f"{what} unavailable ({client_error_text(exc)})")
        return {}


def _throttles_cell(throttles: float | None) -> str:
    """Throttled invocations of the consumer in the last 5 minutes (``–``: not readable)."""
    if throttles is None:
        return "–"
    return f"[bold red]{throttles:.0f}[/]" if throttles else "0"


def _dlq_cell(depth: int | None) -> str:
    if depth is None:
        return "–"
    return f"[bold red]{depth}[/]" if depth else "0"


_duration = format_duration
