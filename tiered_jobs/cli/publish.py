"""``tiered-jobs publish`` and ``cancel``: one job, routed like every other publisher's."""

from __future__ import annotations

import math
import sys
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import typer
from rich.markup import escape

from ..contract.names import SQS_MAX_DELAY_SECONDS
from ..publisher import Publisher
from ..stage import scheduling
from ..stage.target import Target
from .common import CliError, app, reported_errors, terminal
from .payload import read_payload


@app.command()
def publish(
    ctx: typer.Context,
    job_type: str = typer.Argument(..., metavar="TYPE", help="Job type, e.g. invoices.send."),
    key: str = typer.Option(..., "--key", "-k", help="Idempotency key (the business id, e.g. pay_123)."),
    payload: str = typer.Option(
        "{}", "--payload", "-p", help="Payload as a JSON object, @FILE to read it from a file, or - for stdin."
    ),
    tier: Optional[str] = typer.Option(None, "--tier", help="Override the routing table."),
    delay: Optional[int] = typer.Option(
        None, "--delay", help="Seconds before the job runs (beyond 900: through a one-time schedule)."
    ),
    at: Optional[str] = typer.Option(
        None, "--at", help="When the job runs: ISO 8601 with a time zone, e.g. 2030-05-01T09:00:00+02:00."
    ),
    tenant: Optional[str] = typer.Option(
        None, "--tenant", help="Tenant the job is for: sent as its MessageGroupId (SQS fair queues)."
    ),
) -> None:
    """Publish one job, routed like every other publisher's."""
    with reported_errors():
        data = read_payload(payload, sys.stdin)
        target: Target = ctx.obj
        when = _iso_datetime(at, "--at") if at is not None else None
        sent = datetime.now(timezone.utc)
        result = _publisher(target).publish(job_type, data, key, tier=tier, delay=delay, at=when, tenant=tenant)
        if result.schedule_name is not None:
            state = "Already scheduled" if result.already_scheduled else "Scheduled"
            terminal().print(
                f"{state}: {escape(job_type)} (key {escape(repr(key))}) to tier [bold]{result.tier}[/] at "
                f"{result.fire_at.isoformat() if result.fire_at else '?'} (one-time schedule {result.schedule_name}; "
                f"cancel with: tiered-jobs cancel {escape(job_type)} {escape(key)})"
            )
            return
        terminal().print(
            f"Published {escape(job_type)} (key {escape(repr(key))}) to tier [bold]{result.tier}[/]: "
            f"message {result.message_id}"
        )
        until = _sqs_delayed_until(sent, delay, when)
        if until is not None:
            terminal().print(
                f"Delayed by SQS until {until.isoformat().replace('+00:00', 'Z')} "
                f"(in {math.ceil((until - sent).total_seconds())} s); it cannot be cancelled: only a job due more "
                f"than {SQS_MAX_DELAY_SECONDS // 60} minutes ahead becomes a one-time schedule, "
                "which `tiered-jobs cancel` can delete",
                soft_wrap=True,
            )


def _sqs_delayed_until(sent: datetime, delay: int | None, at: datetime | None) -> datetime | None:
    """When a job sent with SQS's own delay becomes visible (UTC, whole seconds), or ``None`` if not delayed.

    The publisher sends a job due within 15 minutes with ``DelaySeconds`` (the seconds up to ``at``,
    rounded up), which no API can take back: the operator is told when it will run, and that it stays.
    """
    if at is not None:
        seconds = math.ceil((at - sent).total_seconds())
    else:
        seconds = delay or 0
    if seconds <= 0:
        return None
    until = sent + timedelta(seconds=seconds)
    return until + timedelta(microseconds=1_000_000 - until.microsecond) if until.microsecond else until


def _publisher(target: Target) -> Publisher:
    """The stage's publisher; where one-time jobs go is looked up only if a job needs it."""
    deployment = target.deployment()
    return Publisher.from_deployment(
        deployment,
        sqs=target.client("sqs"),
        scheduler=target.client("scheduler"),
        scheduling=lambda: scheduling_target(target),
    )


def scheduling_target(target: Target) -> scheduling.SchedulingTarget:
    return scheduling.locate(
        target.stage,
        target.stack_name,
        list(target.deployment().tiers),
        cloudformation=target.client("cloudformation"),
        ssm=target.client("ssm"),
    )


def _iso_datetime(text: str, option: str) -> Any:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise CliError(f"{option} {text!r} is not an ISO 8601 date-time (e.g. 2030-05-01T09:00:00+02:00)", 2) from None


@app.command()
def cancel(
    ctx: typer.Context,
    job_type: str = typer.Argument(..., metavar="TYPE", help="The job type it was published with."),
    key: str = typer.Argument(..., metavar="KEY", help="Its idempotency key."),
) -> None:
    """Cancel a job published for later (one-time schedule) whose time has not come; jobs delayed by SQS
    itself cannot be."""
    with reported_errors():
        found = _publisher(ctx.obj).cancellation(job_type, key)
        if found.cancelled:
            terminal().print(f"Cancelled {escape(job_type)} (key {escape(repr(key))}): it will not run.")
        elif found.outcome == "already sent":
            when = found.fire_at.isoformat() if found.fire_at else "?"
            raise CliError(
                f"not cancelled: scheduled job {job_type} (key {key!r}) was due at {when}, so it was "
                "already sent (or is being sent); its schedule stays until EventBridge Scheduler deletes it"
            )
        else:
            raise CliError(f"no pending scheduled job {job_type} (key {key!r}): never scheduled, or already sent")
