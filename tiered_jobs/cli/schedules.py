"""``tiered-jobs schedules``: periodic and pending one-time jobs with their next fire time."""

from __future__ import annotations

from datetime import timezone

import typer
from rich.markup import escape
from rich.table import Table

from ..stage import scheduling
from ..stage.target import Target
from .common import app, reported_errors, terminal
from .publish import scheduling_target


@app.command("schedules")
def schedules_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Periodic jobs and pending one-time jobs of the stage, with their next fire time."""
    with reported_errors():
        target: Target = ctx.obj
        jobs = scheduling.list_scheduled(target.client("scheduler"), scheduling_target(target))
        if as_json:
            terminal().print_json(data={"stage": target.stage, "schedules": [job.to_dict() for job in jobs]})
            return
        table = Table(title=f"Scheduled jobs · stage {target.stage}")
        for title in ("Name", "Kind", "Expression", "Time zone", "Job type", "Tier", "Next fire (UTC)", "Key"):
            table.add_column(title, overflow="fold")
        for job in jobs:
            next_fire = (
                job.next_fire.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
                if job.next_fire
                else ("disabled" if job.state != "ENABLED" else "–")
            )
            table.add_row(
                job.name,
                job.kind,
                job.expression,
                job.timezone,
                escape(job.job_type or "?"),
                job.tier or "?",
                next_fire,
                escape(job.idempotency_key or ""),
            )
        terminal().print(table)
        if not jobs:
            terminal(stderr=True).print("note: no schedules in this stage")
