"""``tiered-jobs batch ID``: a batch's or chain's members and state."""

from __future__ import annotations

import typer
from rich.markup import escape

from .common import reported_errors, terminal

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()


@commands.command("batch")
def batch(
    ctx: typer.Context,
    batch_id: str = typer.Argument(..., metavar="ID", help="The batch's or chain's id (batch.batch_id, chain_id)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """A batch's (or chain's) counts, its callbacks, its links and why its failed members failed."""
    from ..operations.batches import describe, read_batch

    with reported_errors():
        view = read_batch(ctx.obj, batch_id)
        if as_json:
            terminal().print_json(data=view.to_dict())
            return
        out = terminal()
        for line in describe(view):
            out.print(escape(line), soft_wrap=True)
