"""``tiered-jobs search``: the runs of a stage's jobs, by type, key, tenant, tag and outcome."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape
from rich.table import Table

from .common import CliError, reported_errors, terminal

if TYPE_CHECKING:
    from ..operations.lookup import RecordState
    from ..stage.target import Target

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()

#: A search whose scan costs more than this (USD) says so in bold before its runs.
COSTLY_USD = 0.01
_SPAN = re.compile(r"^(\d+(?:\.\d+)?)([mhd])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def span(text: str, option: str = "--since") -> timedelta:
    """``30m``, ``1h``, ``7d`` as a ``timedelta`` (at most 30 days: Logs Insights reads any range, but a
    search that long scans every line of it)."""
    found = _SPAN.match(text)
    if not found:
        raise CliError(f"{option} must be a number and m, h or d (30m, 1h, 7d), got {text!r}", 2)
    value = timedelta(**{_UNITS[found.group(2)]: float(found.group(1))})
    if not timedelta(0) < value <= timedelta(days=30):
        raise CliError(f"{option} must be more than 0 and at most 30d, got {text!r}", 2)
    return value


@commands.command("search")
def search(
    ctx: typer.Context,
    job_type: Optional[str] = typer.Option(None, "--type", help="A job type or a glob of them (invoices.*)."),
    key: Optional[str] = typer.Option(None, "--key", help="The start of an idempotency key (a whole key matches too)."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="The job's tenant."),
    tag: list[str] = typer.Option([], "--tag", help="NAME=VALUE; repeat for more (all must match)."),
    outcome: Optional[str] = typer.Option(None, "--outcome", help="succeeded, retried, dead_lettered..."),
    since: str = typer.Option("1h", "--since", help="How far back: 30m, 1h, 7d."),
    until: Optional[datetime] = typer.Option(None, "--until", help="The end of the range (default: now; UTC)."),
    limit: int = typer.Option(50, "--limit", help="The most runs shown (newest first)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The runs of jobs that match, from the consumers' run lines (CloudWatch Logs Insights; billed per GB scanned)."""
    from ..operations.search import search as run_search
    from ..operations.search_query import Search, SearchError

    with reported_errors():
        wanted = Search(job_type, key, tenant, tuple(tag), outcome, limit)
        problems = wanted.problems()
        if problems:
            raise CliError("; ".join(problems), 2)
        end = until.replace(tzinfo=until.tzinfo or timezone.utc) if until is not None else None
        try:
            found = run_search(ctx.obj, wanted, since=span(since), until=end)
        except SearchError as exc:
            raise CliError(str(exc), 2) from None
        # One job asked for (an exact type and a key): what its idempotency record says now (one GetItem),
        # beside its history, as `tiered-jobs job` reads it.
        now = _record_now(ctx.obj, job_type, key) if job_type and key and not any(c in job_type for c in "*?") else None
        if as_json:
            data = found.to_dict()
            if now is not None:
                data["now"] = {"state": now.state, "detail": now.detail}
            terminal().print_json(data=data)
            return
        out = terminal()
        scanned = (
            f"scanned {found.bytes_scanned / 1e6:.2f} MB ({int(found.records_scanned)} lines) in "
            f"{len(found.groups)} log group(s): ${found.cost_usd:.6f}"
        )
        out.print(f"[bold]{scanned} (over ${COSTLY_USD})[/]" if found.cost_usd > COSTLY_USD else scanned)
        if now is not None:
            out.print(f"now: [bold]{escape(now.state.lower())}[/] — {escape(now.detail)}", soft_wrap=True)
        if not found.runs:
            out.print(f"no runs match in the last {since}")
            return
        table = Table()
        for column in ("when (UTC)", "tier", "type", "key", "outcome", "attempt", "duration", "letter"):
            table.add_column(column)
        for run in found.runs:
            letter = (
                f"{run.letter.get('reason', '')} {run.letter.get('error_type', '')} {run.letter['message_id']}"
                if run.letter
                else ""
            )
            table.add_row(
                escape(run.at),
                escape(run.tier or ""),
                escape(run.job_type or ""),
                escape(run.key or ""),
                escape(run.outcome or ""),
                str(run.attempt or ""),
                f"{run.duration_ms:.0f} ms" if run.duration_ms is not None else "",
                escape(letter.strip()),
            )
        out.print(table)


def _record_now(target: Target, job_type: str, key: str) -> RecordState:
    """The job's idempotency record, read now (``tiered-jobs job``'s first line)."""
    from ..operations.lookup import read_record

    return read_record(target, job_type, key)
