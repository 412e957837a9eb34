"""``tiered-jobs pause TIER`` and ``resume TIER``: stop and restart a tier's consumer taking work.

Both are :mod:`tiered_jobs.operations.pausing` (the console's Pause and Resume buttons and the
replay function's ``pause`` action change the same mapping the same way). No confirmation: each
undoes the other, and neither loses a job (a paused tier's queue keeps accepting them).
"""

from __future__ import annotations

import typer
from rich.markup import escape

from ..operations.pausing import MappingState, pause_tier, resume_tier
from ..stage.target import Target
from .common import reported_errors, terminal

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()


@commands.command("pause")
def pause_command(ctx: typer.Context, tier: str = typer.Argument(..., help="The tier to pause.")) -> None:
    """Stop TIER's consumer taking jobs (its event source mapping disabled); its queue keeps accepting them."""
    with reported_errors():
        target: Target = ctx.obj
        target.deployment().tier(tier)  # an unknown tier fails here, naming the known ones
        waiting = terminal(stderr=True)
        _report(
            pause_tier(target.stage, tier, target.client, via="cli", progress=lambda line: waiting.print(escape(line)))
        )


@commands.command("resume")
def resume_command(ctx: typer.Context, tier: str = typer.Argument(..., help="The tier to resume.")) -> None:
    """Let TIER's consumer take jobs again (its event source mapping enabled)."""
    with reported_errors():
        target: Target = ctx.obj
        target.deployment().tier(tier)
        _report(resume_tier(target.stage, tier, target.client))


def _report(state: MappingState) -> None:
    out = terminal()
    out.soft_wrap = True  # one line each, never wrapped at 80 columns when piped
    if state.outcome == "paused":
        out.print(
            f"Paused tier {escape(state.tier)} ({escape(state.state)}): jobs keep queueing and spend no attempt; "
            f"`tiered-jobs resume {escape(state.tier)}` runs them."
        )
    elif state.outcome == "resumed":
        out.print(f"Resumed tier {escape(state.tier)}: its consumer takes the waiting jobs.")
    elif state.outcome == "already paused":
        by = escape(state.paused_by or "?")
        out.print(f"Tier {escape(state.tier)} was already paused (since {state.paused_at or '?'}, by {by}).")
    else:
        out.print(f"Tier {escape(state.tier)} is not paused.")
    if state.may_still_finish:  # Disabling is not paused yet: what may still run, said where it is seen
        out.print(f"Still running: {escape(state.may_still_finish)}.")
    if state.note:
        terminal(stderr=True).print(f"note: {escape(state.note)}")
