"""``tiered-jobs schedules``: periodic and pending one-time jobs with their next fire time."""

from __future__ import annotations

import typer

from ..stage import scheduling
from ..stage.target import Target
from .common import reported_errors, terminal
from .publish import scheduling_target
from .schedules_table import print_schedules

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()


@commands.command("schedules")
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
        print_schedules(target.stage, jobs)
        if not jobs:
            terminal(stderr=True).print("note: no schedules in this stage")
