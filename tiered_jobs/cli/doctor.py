"""``tiered-jobs doctor``: what will throttle, the account's limits against the stage's settings.

The checks are :func:`tiered_jobs.operations.doctor.diagnose` and, for a stage with its own KMS key,
:func:`tiered_jobs.operations.doctor_key.key_checks`; this module renders them and exits non-zero when one
fails, so a pipeline can run it before (or after) a deploy.
"""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from ..operations import doctor as checks
from ..operations.doctor_key import key_checks
from ..stage.target import Target
from .common import reported_errors, terminal

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()

_STYLES = {checks.OK: "green", checks.WARN: "yellow", checks.FAIL: "bold red", checks.UNREADABLE: "dim"}


@commands.command()
def doctor(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """The account's Lambda concurrency, Scheduler and SQS quotas against the stage's tiers: ok, warn
    or fail, with the fix. Exits 1 when a check fails; an unreadable quota is said, never a failure."""
    with reported_errors():
        target: Target = ctx.obj
        deployment = target.deployment()
        report = checks.diagnose(target.stage, list(deployment.tiers), target.client, local_mode=deployment.local_mode)
        if not deployment.local_mode and deployment.tiers:  # every tier queue has the stage's key: one tells
            report.checks.extend(key_checks(next(iter(deployment.tiers.values())).queue_url, target.client))
        if as_json:
            terminal().print_json(data=report.to_dict())
        else:
            table = Table(title=f"Tiered Jobs · stage {report.stage} · limits")
            for title in ("Check", "Status", "Detail", "Fix"):
                table.add_column(title, overflow="fold")
            for check in report.checks:
                style = _STYLES.get(check.status, "")
                table.add_row(
                    escape(check.name),
                    f"[{style}]{escape(check.status)}[/]",
                    escape(check.detail),
                    escape(check.fix),
                )
            terminal().print(table)
    if report.failed:
        raise typer.Exit(1)
