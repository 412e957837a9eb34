"""``tiered-jobs``: publish, watch and steer the queues of a stage without writing boto3.

Works against a deployed stack (credentials and region resolved as the AWS CLI does; the stack
found by its outputs, else by the stage's SSM parameters) and against the local embedded AWS
(``--endpoint-url``, or the ``AWS_ENDPOINT_URL`` variable that the emulator's ``up`` prints).

Every expected failure (no credentials, nothing deployed, unknown tier, bad JSON, an invalid
job, an unreachable endpoint, AWS refusing a call) ends with one ``error: ...`` line on stderr
and a non-zero exit code: 2 for a mistake in the command, 1 for everything else. See docs/cli.md.
"""

from __future__ import annotations

from typing import Optional

import typer

from ..contract.names import STAGE_NAME_PATTERN, Env, stack_name
from ..stage.target import Target
from . import batch, console, dlq, doctor, job, pause, publish, schedules, search, smoke, status, teardown
from .common import CliError, fail

#: boto3's own variable for a custom endpoint (e.g. moto's server): the CLI honours it too.
AWS_ENDPOINT_URL = "AWS_ENDPOINT_URL"

app = typer.Typer(
    name="tiered-jobs",
    help="Publish jobs and operate the tier queues of a Tiered Jobs stage.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Each module's commands, in the order ``--help`` lists them.
for _module in (teardown, publish, schedules, status, doctor, smoke, pause, job, search, batch, console):
    app.add_typer(_module.commands)
app.add_typer(dlq.commands, name="dlq")


@app.callback()
def _options(
    ctx: typer.Context,
    stage: str = typer.Option("dev", "--stage", envvar=Env.STAGE, help="Stage name (dev, prod...)."),
    stack: Optional[str] = typer.Option(
        None, "--stack-name", help="CloudFormation stack name.  [default: TieredJobs-<stage>]"
    ),
    region: Optional[str] = typer.Option(None, "--region", help="AWS region (default: as the AWS CLI resolves it)."),
    endpoint_url: Optional[str] = typer.Option(
        None,
        "--endpoint-url",
        envvar=AWS_ENDPOINT_URL,
        help="Custom AWS endpoint, e.g. the emulator's http://127.0.0.1:<port>.",
    ),
) -> None:
    if not STAGE_NAME_PATTERN.match(stage):
        fail(CliError(f"--stage must match {STAGE_NAME_PATTERN.pattern}, got {stage!r}", 2))
    ctx.obj = Target(stage, stack or stack_name(stage), region, endpoint_url)


def main() -> None:
    """Entry point of the ``tiered-jobs`` command."""
    app()
