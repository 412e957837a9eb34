"""``tiered-jobs status``: per tier the queue counts, DLQ depth, oldest age, alarms and rates
(the reads of :mod:`tiered_jobs.status`, shared with the emulator's live view)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from .. import status as status_reads
from ..operations import Target, client_error_text, format_duration
from .common import app, reported_errors, terminal


@app.command()
def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Per tier: messages waiting, in flight and delayed, DLQ depth, oldest message age, alarms."""
    with reported_errors():
        target: Target = ctx.obj
        deployment = target.deployment()
        sqs = target.client("sqs")
        cloudwatch = target.client("cloudwatch")
        notes: list[str] = []
        alarms = _optional("alarm states", lambda: _alarm_states(cloudwatch, target.stage), notes)
        ages = _optional("oldest age", lambda: _oldest_ages(cloudwatch, deployment.queue_urls()), notes)
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
                    "alarms": status_reads.tier_alarms(alarms, target.stage, tier),
                }
            )
        rates = _rates(target, [row["tier"] for row in rows], notes)
        if as_json:
            terminal().print_json(data={"stage": target.stage, "source": deployment.source, "tiers": rows,
                                        "rates": rates})
            return
        table = Table(title=f"Tiered Jobs · stage {target.stage} · {deployment.source}")
        for title in ("Tier", "Visible", "In flight", "Delayed", "DLQ", "Oldest", "Alarms"):
            table.add_column(title, justify="left" if title in ("Tier", "Alarms") else "right")
        for row in rows:
            table.add_row(
                row["tier"], str(row["visible"]), str(row["in_flight"]), str(row["delayed"]),
                _dlq_cell(row["dlq"]), _duration(row["oldest_age_seconds"]), status_reads.alarm_summary(row["alarms"]),
            )
        terminal().print(table)
        _print_rates(rates)
        for note in notes:
            terminal(stderr=True).print(f"note: {escape(note)}")


#: The reads ``status`` makes (shared with the local mode's live view); module names so tests can swap them.
_alarm_states = status_reads.alarm_states
_oldest_ages = status_reads.oldest_ages


def _rates(target: Target, tiers: list[str], notes: list[str]) -> dict[str, dict[str, Any]]:
    """Per tier: the configured rate limit (``None``: not limited) and completed jobs per second."""
    from .. import rates

    limits = _optional("rate limits", lambda: rates.configured(target.client("ssm"), target.stage, tiers), notes)
    current = _optional("current rates", lambda: rates.current(target.client("cloudwatch"), target.stage, tiers), notes)
    return {tier: {"rate_limit": limits[tier].to_dict() if tier in limits else None,
                   "rate_limit_text": limits[tier].describe() if tier in limits else "none",
                   "completed_per_second": current.get(tier)} for tier in tiers}


def _print_rates(rates: dict[str, dict[str, Any]]) -> None:
    from rich import box

    from ..rates import LOOKBACK_SECONDS

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


def _dlq_cell(depth: int | None) -> str:
    if depth is None:
        return "–"
    return f"[bold red]{depth}[/]" if depth else "0"


_duration = format_duration
