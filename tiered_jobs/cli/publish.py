"""``tiered-jobs publish`` and ``cancel``: one job, routed like every other publisher's (``cancel`` with a
type glob and no key: every queued job matching a filter, :mod:`tiered_jobs.operations.bulk_cancel`)."""

from __future__ import annotations

import math
import sys
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import typer
from rich.markup import escape

from ..publisher import Publisher
from ..stage import cancelling, scheduling
from ..stage.target import Target
from .common import CliError, reported_errors, terminal
from .payload import read_payload

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()


@commands.command()
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
    expires_in: Optional[int] = typer.Option(
        None, "--expires-in", help="Deadline: seconds after the job is due; not started by then, it is not run."
    ),
    expires_at: Optional[str] = typer.Option(
        None, "--expires-at", help="Deadline as ISO 8601 with a time zone; not started by then, it is not run."
    ),
    unique_for: Optional[int] = typer.Option(
        None, "--unique-for", help="Seconds: not sent while a job of this type and key is pending (first wins)."
    ),
    debounce: Optional[int] = typer.Option(
        None, "--debounce", help="Seconds: run once, this long after the last publish of this type and key (last wins)."
    ),
) -> None:
    """Publish one job, routed like every other publisher's."""
    with reported_errors():
        data = read_payload(payload, sys.stdin)
        target: Target = ctx.obj
        when = _iso_datetime(at, "--at") if at is not None else None
        deadline = _iso_datetime(expires_at, "--expires-at") if expires_at is not None else None
        sent = datetime.now(timezone.utc)
        result = _publisher(target).publish(
            job_type,
            data,
            key,
            tier=tier,
            delay=delay,
            at=when,
            tenant=tenant,
            expires_at=deadline,
            expires_in=expires_in,
            unique_for=unique_for,
            debounce=debounce,
        )
        if result.already_queued:
            lock_end = result.unique_until.isoformat().replace("+00:00", "Z") if result.unique_until else "?"
            terminal().print(
                f"Already queued: {escape(job_type)} (key {escape(repr(key))}) is pending, unique until {lock_end}: "
                "nothing sent"
            )
            return
        if result.debounced:
            moved = "moved the pending run" if result.already_scheduled else "a new run"
            terminal().print(
                f"Debounced: {escape(job_type)} (key {escape(repr(key))}) runs on tier [bold]{result.tier}[/] at "
                f"{result.fire_at.isoformat() if result.fire_at else '?'} with this payload ({moved}; one-time "
                f"schedule {result.schedule_name}; a later publish of the key moves it again)",
                soft_wrap=True,
            )
            return
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
                f"(in {math.ceil((until - sent).total_seconds())} s); cancel with: "
                f"tiered-jobs cancel {escape(job_type)} {escape(key)} (a cancel marker: SQS keeps the message, "
                "the consumer archives it unrun)",
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
        dynamodb=target.client("dynamodb"),
        cancel_marks=lambda: cancelling.from_ssm(target.stage, deployment, ssm=target.client("ssm")),
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


#: What a cancel may find that leaves nothing to cancel: an error line and exit code 1, so a script can tell.
_NOT_CANCELLED = ("already done", "already expired", "not found", "already sent")


@commands.command()
def cancel(
    ctx: typer.Context,
    job_type: str = typer.Argument(..., metavar="TYPE", help="The job type (with no KEY: a glob, e.g. 'invoices.*')."),
    key: Optional[str] = typer.Argument(None, metavar="[KEY]", help="Its idempotency key (none: cancel by filter)."),
    tier: Optional[str] = typer.Option(None, "--tier", help="The tier it went to, when not the routing table's."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="By filter: only this tenant's jobs."),
    published_before: Optional[str] = typer.Option(
        None, "--published-before", help="By filter: only jobs published before this ISO 8601 time (with a zone)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="By filter: list what would be cancelled; write nothing."),
    max_messages: int = typer.Option(1000, "--max-messages", help="By filter: messages read per tier, at most."),
    as_json: bool = typer.Option(False, "--json", help="By filter: print JSON."),
) -> None:
    """Cancel a pending job: a one-time schedule is deleted; a queued, SQS-delayed or replayed one is archived
    unrun by the consumer (a cancel marker, kept for the tier's idempotency window). Without KEY, every
    queued job whose type matches TYPE (and --tenant, --published-before) is cancelled."""
    with reported_errors():
        if key is None:
            _cancel_by_filter(ctx.obj, job_type, tier, tenant, published_before, dry_run, max_messages, as_json)
            return
        if tenant is not None or published_before is not None or dry_run:
            raise CliError("--tenant, --published-before and --dry-run filter a bulk cancel: give TYPE without KEY", 2)
        found = _publisher(ctx.obj).cancellation(job_type, key, tier=tier)
        if found.outcome in _NOT_CANCELLED:
            raise CliError(found.describe(job_type, key))
        terminal().print(escape(found.describe(job_type, key)), soft_wrap=True)


def _cancel_by_filter(
    target: Target,
    glob: str,
    tier: str | None,
    tenant: str | None,
    published_before: str | None,
    dry_run: bool,
    max_messages: int,
    as_json: bool,
) -> None:
    from ..operations.bulk_cancel import bulk_cancel

    before = _iso_datetime(published_before, "--published-before") if published_before is not None else None
    if before is not None and before.tzinfo is None:
        raise CliError(f"--published-before {published_before!r} needs a time zone (e.g. ...T09:00:00Z)", 2)
    found = bulk_cancel(
        target, glob, tenant=tenant, published_before=before, tier=tier, dry_run=dry_run, max_messages=max_messages
    )
    if as_json:
        terminal().print_json(data=found.to_dict())
        return
    out = terminal()
    verb = "would cancel" if dry_run else "cancelled"
    for match in found.matches:
        state = "" if match.outcome is None else f" ({match.outcome})"
        out.print(
            f"  {match.tier}: {escape(match.job_type)} key {escape(repr(match.key))}"
            f"{' tenant ' + escape(match.tenant) if match.tenant else ''}{state}",
            soft_wrap=True,
        )
    read = ", ".join(f"{name} {count}" for name, count in found.read.items()) or "none"
    summary = found.to_dict()
    count = len(found.matches) if dry_run else summary["cancelled"]
    out.print(f"{'Dry run: ' if dry_run else ''}{verb} {count} job(s) (messages read: {read})", soft_wrap=True)
    if found.recopied:
        out.print(f"{found.recopied} message(s) were on their last receive and were sent again as copies")
    if found.skipped:  # stored in S3 and unreadable: neither matched nor cancelled, so said
        out.print(f"{len(found.skipped)} offloaded job(s) could not be read to match:")
        for skipped in found.skipped:
            out.print(
                f"  {skipped['tier']}: {escape(skipped['offloaded'])}: {escape(skipped['reason'])}", soft_wrap=True
            )
    for note in found.notes:
        out.print(escape(note), soft_wrap=True)
