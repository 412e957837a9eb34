"""``tiered-jobs job TYPE KEY``: what happened to one job."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.markup import escape

from .common import reported_errors, terminal
from .search import span

if TYPE_CHECKING:
    from ..operations.search import Found

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
    history: Optional[str] = typer.Option(
        None,
        "--history",
        help="Also list every run of the key (and its debounced runs) from the run lines of this long: 1h, 7d "
        "(a Logs Insights query, billed per GB scanned).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """What happened to one job: its idempotency record, its dead letters, its scheduled runs (and its runs)."""
    from ..operations.lookup import PAUSED, QUEUED, lookup_job

    with reported_errors():
        back = span(history, "--history") if history is not None else None  # a bad span is refused before any call
        found = lookup_job(ctx.obj, job_type, key, max_letters=max_letters, debounce_hours=debounce_hours)
        past = _runs(ctx.obj, job_type, key, back) if back is not None else None
        if as_json:
            data = found.to_dict()
            if past is not None:
                data["history"] = past.to_dict()
            terminal().print_json(data=data)
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
        if past is not None:
            out.print(
                f"  runs in the last {history} ({len(past.runs)}; scanned {past.bytes_scanned / 1e6:.2f} MB, "
                f"${past.cost_usd:.6f}):" + ("" if past.runs else " none")
            )
            for run in past.runs:
                sent = f", letter {run.letter['message_id']}" if run.letter else ""
                took = f" in {run.duration_ms:.0f} ms" if run.duration_ms is not None else ""
                out.print(
                    f"    {escape(run.at)} {escape(run.key or '')} attempt {run.attempt}: "
                    f"[bold]{escape(run.outcome or '')}[/]{took}{escape(sent)}",
                    soft_wrap=True,
                )
        for note in found.notes:
            terminal(stderr=True).print(f"note: {escape(note)}")


def _runs(target: Any, job_type: str, key: str, since: timedelta) -> Found:
    """Every run of ``key`` (and of its debounced runs' keys) of the last ``since``, newest first."""
    from ..operations.search import search
    from ..operations.search_query import MAX_LIMIT, Search

    return search(target, Search(job_type=job_type, key=key, limit=MAX_LIMIT), since=since)
