"""``tiered-jobs teardown``: what a destroyed stage left behind, listed then deleted
(:mod:`tiered_jobs.operations.teardown`)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..contract.names import PROJECT, stack_name
from ..operations.teardown import KEY_PENDING_DAYS, delete_leftovers, find_leftovers, stack_status
from .common import CliError, reported_errors

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()


@commands.command("teardown")
def teardown(
    ctx: typer.Context,
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
    key_pending_days: int = typer.Option(
        30,
        "--key-pending-days",
        min=KEY_PENDING_DAYS[0],
        max=KEY_PENDING_DAYS[1],
        help="Days before a scheduled KMS key deletion happens (7-30; cancellable until then).",
    ),
) -> None:
    """List what a destroyed stage left behind (queues, DLQs, tables, log groups, the schedule group, the
    one-time jobs' role, buckets, KMS key, SSM parameters) and delete it."""
    with reported_errors():
        target = ctx.obj
        leftovers = find_leftovers(target.client, target.stage, target.stack_name)
        cloudformation = target.client("cloudformation")
        for stack in sorted({target.stack_name} | {item.owner for item in leftovers if item.owner}):
            status = stack_status(cloudformation, stack)
            if status is not None:
                destroy = (
                    f"npx cdk destroy -c stage={target.stage}"
                    if stack == stack_name(target.stage)
                    else f"npx cdk destroy {stack}"
                )
                raise CliError(
                    f"stack {stack} still exists ({status}) and owns stage {target.stage!r}: "
                    f"run `{destroy}` first, then this command"
                )
        console = Console(highlight=False)
        if not leftovers:
            console.print(
                f"Nothing of stage {target.stage!r} is left ({PROJECT} queues, tables, log groups, "
                "schedule group, roles, buckets, KMS keys, SSM parameters)."
            )
            return
        table = Table(title=f"Left behind by stage {target.stage!r}")
        for column in ("kind", "name", "detail"):
            table.add_column(column)
        for item in leftovers:
            table.add_row(item.kind, escape(item.name), escape(item.detail))
        console.print(table)
        if not yes and not typer.confirm(
            f"Delete these {len(leftovers)} resources? Messages and items in them are lost"
        ):
            console.print("Nothing deleted.")
            raise typer.Exit(1)
        for line in delete_leftovers(target.client, leftovers, key_pending_days):
            console.print(escape(line))
