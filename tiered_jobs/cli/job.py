"""``tiered-jobs job TYPE KEY``: what happened to one job."""

from __future__ import annotations

import json

import typer
from rich.markup import escape

from .common import reported_errors, terminal

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()


@commands.command("job")
def job(
    ctx: typer.Context,
    job_type: str = typer.Argument(..., metavar="TYPE", help="Job type, e.g. invoices.send."),
    key: str = typer.Argument(..., metavar="KEY", help="The job's idempotency key (the business id)."),
    max_letters: int = typer.Option(1000, "--max-letters", help="Letters read per non-empty DLQ, at most."),
    debounce_hours: float = typer.Option(
        24, "--debounce-hours", min=0, max=24 * 30, help="How far back a key with no record is looked for as debounced."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """What happened to one job: its idempotency record, its dead letters, its scheduled runs."""
    from ..operations.lookup import PAUSED, QUEUED, lookup_job

    with reported_errors():
        found = lookup_job(ctx.obj, job_type, key, max_letters=max_letters, debounce_hours=debounce_hours)
        if as_json:
            terminal().print_json(data=found.to_dict())
            return
        out = terminal()
        out.print(f"[bold]{escape(job_type)}[/] key {escape(repr(key))}")
        detail = found.record.detail
        if found.state == QUEUED:  # the record knows nothing yet: the lock says a publish is pending
            detail = "published with unique_for and not finished: publishing it again is refused as already queued"
        elif found.state == PAUSED:
            detail = (
                "published with unique_for and not finished, and its tier is paused: it runs once the tier is "
                "resumed (`tiered-jobs resume`)"
            )
        out.print(f"  state: [bold]{escape(found.describe_state())}[/] — {escape(detail)}", soft_wrap=True)
        if found.record.progress is not None:  # ctx.progress, as last stored
            out.print(f"  progress: {escape(found.record.progress.describe())}", soft_wrap=True)
        if found.queue is not None:  # no record of a run: what was checked, since SQS cannot be searched by key
            out.print(f"  queue: {escape(found.queue.describe())}", soft_wrap=True)
        if found.runs is not None:
            since = f"since {found.runs.since:%Y-%m-%d %H:%M} UTC"
            if not found.runs.run_keys:
                out.print(f"  debounced runs ({escape(key)}@<minute>): none {since}")
            for run_key, record in zip(found.runs.run_keys, found.run_records, strict=True):
                out.print(
                    f"  debounced run {escape(run_key)}: [bold]{record.state.replace('_', ' ')}[/] — "
                    f"{escape(record.detail)}",
                    soft_wrap=True,
                )
            if found.runs.unanswered:
                out.print(f"  debounced runs: {found.runs.unanswered} minute(s) DynamoDB left unanswered")
        if found.unique_until is not None and found.state not in (QUEUED, PAUSED):
            out.print(f"  unique until {found.unique_until.isoformat()} (publishing it again is refused until then)")
        if found.record.result is not None:
            out.print(f"  result: {escape(json.dumps(found.record.result))}", soft_wrap=True)
        read = ", ".join(f"{tier} {count}" for tier, count in found.letters_read.items())
        if not found.letters:
            out.print(f"  dead letters: none (letters read: {read or 'no DLQ'})")
        for letter in found.letters:
            reasons = "; ".join(f"{name.removeprefix('DeadLetter.')}={value}" for name, value in letter.reasons.items())
            out.print(
                f"  dead letter in the {letter.tier} DLQ: {letter.message_id}: "
                f"{escape(reasons or 'no reasons (moved by SQS redrive: crash or timeout)')}",
                soft_wrap=True,
            )
        if found.scheduled is None:  # never "none": it could not be read, and the note says why
            out.print("  scheduled runs: unknown")
        else:
            runs = ", ".join(f"{run.at.isoformat()} ({run.detail}; schedule {run.schedule})" for run in found.scheduled)
            out.print(f"  scheduled runs: {escape(runs) or 'none'}", soft_wrap=True)
        for note in found.notes:
            terminal(stderr=True).print(f"note: {escape(note)}")
