"""``tiered-jobs smoke``: a probe job through each tier, the check a pipeline runs after ``cdk deploy``.

The probes are :func:`tiered_jobs.operations.smoke.smoke`; this module prints one line per tier and
exits 1 when a probe did not complete, so the pipeline's step fails with the reason on its log.
"""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape

from ..operations import smoke as probes
from .common import CliError, fail, reported_errors, terminal

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()


@commands.command()
def smoke(
    ctx: typer.Context,
    tiers: Optional[list[str]] = typer.Option(
        None, "--tier", help="A tier to probe (repeat for several).  [default: every tier of the stage]"
    ),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to wait for every probe, in all."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Send a probe job to each tier and wait until each completes. Exits 1, with the reason, when one
    timed out, was dead-lettered or was refused; the probe writes nothing but its idempotency record."""
    with reported_errors():
        report = probes.smoke(ctx.obj, tiers or (), timeout=timeout)
        if as_json:
            terminal().print_json(data=report.to_dict())
        else:
            out = terminal()
            for result in report.results:
                style = "green" if result.ok else "bold red"
                out.print(
                    f"{escape(result.tier)}: [{style}]{result.outcome.replace('_', ' ')}[/] "
                    f"({result.seconds:.1f} s, key {escape(result.key)}): {escape(result.detail)}",
                    soft_wrap=True,
                )
    if not report.ok:
        failed = [result.tier for result in report.results if not result.ok]
        fail(CliError(f"smoke failed on {', '.join(failed)}: see each tier's line above", 1))
