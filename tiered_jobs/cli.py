"""``tiered-jobs``: publish, watch and steer the queues of a stage without writing boto3.

Works against a deployed stack (credentials and region resolved as the AWS CLI does; the stack
found by its outputs, else by the stage's SSM parameters) and against the local embedded AWS
(``--endpoint-url``, or the ``AWS_ENDPOINT_URL`` variable that ``tiered-jobs local up`` prints).

Every expected failure (no credentials, nothing deployed, unknown tier, bad JSON, an invalid
job, an unreachable endpoint, AWS refusing a call) ends with one ``error: ...`` line on stderr
and a non-zero exit code: 2 for a mistake in the command, 1 for everything else. See docs/cli.md.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import discovery
from .contract.names import STAGE_NAME_PATTERN, Alarms, Env, stack_name
from .local.cli import app as local_app
from .publisher import InvalidJobError, PublishError, Publisher

#: boto3's own variable for a custom endpoint (e.g. moto's server): the CLI honours it too.
AWS_ENDPOINT_URL = "AWS_ENDPOINT_URL"
#: How far back ``status`` looks for SQS's ``ApproximateAgeOfOldestMessage`` metric.
AGE_LOOKBACK_SECONDS = 900
#: A replay may run up to Lambda's 15 minutes: wait that long for the answer, and never resend it.
REPLAY_INVOKE_READ_TIMEOUT = 960

app = typer.Typer(
    name="tiered-jobs",
    help="Publish jobs and operate the tier queues of a Tiered Jobs stage.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
dlq_app = typer.Typer(help="Inspect a tier's dead-letter queue and replay it.", no_args_is_help=True)
app.add_typer(dlq_app, name="dlq")
app.add_typer(local_app, name="local")



def _console(stderr: bool = False) -> Console:
    """Built per use, not at import: the width and terminal are those of this invocation."""
    return Console(stderr=stderr, highlight=False)


class CliError(Exception):
    """A failure to report as one line; ``code`` 2 for a mistake in the command, 1 otherwise."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class Via(str, Enum):
    """Where a DLQ command runs the replay code."""

    auto = "auto"
    direct = "direct"
    function = "lambda"


@dataclass
class Target:
    """The stage the command works on, and the AWS clients to reach it (built on first use)."""

    stage: str
    stack_name: str
    region: str | None
    endpoint_url: str | None
    _clients: dict[str, Any] = field(default_factory=dict)
    _deployment: discovery.Deployment | None = None

    def client(self, service: str, **config: Any) -> Any:
        if service not in self._clients:
            import boto3
            from botocore.config import Config

            self._clients[service] = boto3.session.Session(region_name=self.region).client(
                service, endpoint_url=self.endpoint_url, config=Config(**config) if config else None
            )
        return self._clients[service]

    def deployment(self) -> discovery.Deployment:
        if self._deployment is None:
            self._deployment = discovery.locate(
                self.stage, self.stack_name, cloudformation=self.client("cloudformation"), ssm=self.client("ssm")
            )
        return self._deployment


@app.callback()
def _options(
    ctx: typer.Context,
    stage: str = typer.Option("dev", "--stage", envvar=Env.STAGE, help="Stage name (dev, prod...)."),
    stack: Optional[str] = typer.Option(
        None, "--stack-name", help="CloudFormation stack name.  [default: TieredJobs-<stage>]"
    ),
    region: Optional[str] = typer.Option(None, "--region", help="AWS region (default: as the AWS CLI resolves it)."),
    endpoint_url: Optional[str] = typer.Option(
        None, "--endpoint-url", envvar=AWS_ENDPOINT_URL,
        help="Custom AWS endpoint, e.g. the local mode's http://127.0.0.1:<port>.",
    ),
) -> None:
    if not STAGE_NAME_PATTERN.match(stage):
        _fail(CliError(f"--stage must match {STAGE_NAME_PATTERN.pattern}, got {stage!r}", 2))
    ctx.obj = Target(stage, stack or stack_name(stage), region, endpoint_url)


# -- publish ------------------------------------------------------------------------------------


@app.command()
def publish(
    ctx: typer.Context,
    job_type: str = typer.Argument(..., metavar="TYPE", help="Job type, e.g. payments.update_balance."),
    key: str = typer.Option(..., "--key", "-k", help="Idempotency key (the business id, e.g. pay_123)."),
    payload: str = typer.Option("{}", "--payload", "-p", help="Payload as a JSON object."),
    tier: Optional[str] = typer.Option(None, "--tier", help="Override the routing table."),
    delay: Optional[int] = typer.Option(None, "--delay", help="Seconds before the job becomes visible (0-900)."),
    tenant: Optional[str] = typer.Option(
        None, "--tenant", help="Tenant the job is for: sent as its MessageGroupId (SQS fair queues)."),
) -> None:
    """Publish one job, routed like every other publisher's."""
    with _errors():
        try:
            data = json.loads(payload)
        except ValueError as exc:
            raise CliError(f"--payload is not valid JSON: {exc}", 2) from None
        target: Target = ctx.obj
        publisher = Publisher.from_deployment(target.deployment(), sqs=target.client("sqs"))
        result = publisher.publish(job_type, data, key, tier=tier, delay=delay, tenant=tenant)
        _console().print(
            f"Published {escape(job_type)} (key {escape(repr(key))}) to tier [bold]{result.tier}[/]: "
            f"message {result.message_id}"
        )


# -- status -------------------------------------------------------------------------------------


@app.command()
def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Per tier: messages waiting, in flight and delayed, DLQ depth, oldest message age, alarms."""
    with _errors():
        target: Target = ctx.obj
        deployment = target.deployment()
        sqs = target.client("sqs")
        cloudwatch = target.client("cloudwatch")
        notes: list[str] = []
        alarms = _optional("alarm states", lambda: _alarm_states(cloudwatch, target.stage), notes)
        ages = _optional("oldest age", lambda: _oldest_ages(cloudwatch, deployment), notes)
        rows = []
        for tier, urls in deployment.tiers.items():
            main = _queue_counts(sqs, urls.queue_url)
            rows.append({
                "tier": tier,
                "visible": main["ApproximateNumberOfMessages"],
                "in_flight": main["ApproximateNumberOfMessagesNotVisible"],
                "delayed": main["ApproximateNumberOfMessagesDelayed"],
                "dlq": _queue_counts(sqs, urls.dlq_url)["ApproximateNumberOfMessages"] if urls.dlq_url else None,
                "oldest_age_seconds": ages.get(tier),
                "alarms": {kind: alarms[name] for kind in Alarms.KINDS
                           if (name := Alarms.name(target.stage, tier, kind)) in alarms},
            })
        rates = _rates(target, [row["tier"] for row in rows], notes)
        if as_json:
            _console().print_json(data={"stage": target.stage, "source": deployment.source, "tiers": rows,
                                        "rates": rates})
            return
        table = Table(title=f"Tiered Jobs · stage {target.stage} · {deployment.source}")
        for title in ("Tier", "Visible", "In flight", "Delayed", "DLQ", "Oldest", "Alarms"):
            table.add_column(title, justify="left" if title in ("Tier", "Alarms") else "right")
        for row in rows:
            table.add_row(
                row["tier"], str(row["visible"]), str(row["in_flight"]), str(row["delayed"]),
                _dlq_cell(row["dlq"]), _duration(row["oldest_age_seconds"]), _alarm_cell(row["alarms"]),
            )
        _console().print(table)
        _print_rates(rates)
        for note in notes:
            _console(stderr=True).print(f"note: {escape(note)}")


def _rates(target: Target, tiers: list[str], notes: list[str]) -> dict[str, dict[str, Any]]:
    """Per tier: the configured rate limit (``None``: not limited) and completed jobs per second."""
    from . import rates

    limits = _optional("rate limits", lambda: rates.configured(target.client("ssm"), target.stage, tiers), notes)
    current = _optional("current rates", lambda: rates.current(target.client("cloudwatch"), target.stage, tiers), notes)
    return {tier: {"rate_limit": limits[tier].to_dict() if tier in limits else None,
                   "rate_limit_text": limits[tier].describe() if tier in limits else "none",
                   "completed_per_second": current.get(tier)} for tier in tiers}


def _print_rates(rates: dict[str, dict[str, Any]]) -> None:
    from rich import box

    from .rates import LOOKBACK_SECONDS

    table = Table(title="Rates", box=box.SIMPLE_HEAD)
    for title in ("Tier", "Rate limit", f"Completed/s (last {LOOKBACK_SECONDS // 60} min)"):
        table.add_column(title, justify="right" if title.startswith("Completed") else "left")
    for tier, rate in rates.items():
        done = rate["completed_per_second"]
        table.add_row(tier, escape(rate["rate_limit_text"]), "–" if done is None else f"{done:.2f}")
    _console().print(table)


def _queue_counts(sqs: Any, queue_url: str) -> dict[str, int]:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
    return {name: int(attributes.get(name, 0)) for name in names}


def _optional(what: str, read: Callable[[], dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    """CloudWatch reads are extras: without the permission, the column stays blank and a note says why."""
    from botocore.exceptions import ClientError

    try:
        return read()
    except ClientError as exc:
        notes.append(f"{what} unavailable ({_client_error_text(exc)})")
        return {}


def _oldest_ages(cloudwatch: Any, deployment: discovery.Deployment) -> dict[str, float]:
    """SQS's own ``ApproximateAgeOfOldestMessage`` (latest 1-minute maximum) per tier's main queue.

    Reading it never consumes a message (peeking would hide letters from consumers). SQS
    publishes it only for active queues: no data point leaves the cell blank.
    """
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    ages: dict[str, float] = {}
    for tier, urls in deployment.tiers.items():
        points = cloudwatch.get_metric_statistics(
            Namespace="AWS/SQS", MetricName="ApproximateAgeOfOldestMessage",
            Dimensions=[{"Name": "QueueName", "Value": urls.queue_url.rstrip("/").rsplit("/", 1)[-1]}],
            StartTime=now - timedelta(seconds=AGE_LOOKBACK_SECONDS), EndTime=now, Period=60,
            Statistics=["Maximum"],
        )["Datapoints"]
        if points:
            ages[tier] = max(points, key=lambda point: point["Timestamp"])["Maximum"]
    return ages


def _alarm_states(cloudwatch: Any, stage: str) -> dict[str, str]:
    """``{alarm name: state}`` of the stage's alarms (found by the name prefix the stack uses)."""
    states: dict[str, str] = {}
    for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNamePrefix=Alarms.prefix(stage)):
        states.update({alarm["AlarmName"]: alarm["StateValue"] for alarm in page.get("MetricAlarms", [])})
    return states


def _alarm_cell(states: dict[str, str]) -> str:
    if not states:
        return "–"
    firing = [kind for kind, state in states.items() if state == "ALARM"]
    if firing:
        return f"[bold red]ALARM: {', '.join(firing)}[/]"
    ok = sum(state == "OK" for state in states.values())
    no_data = len(states) - ok
    parts = ([f"[green]{ok} OK[/]"] if ok else []) + ([f"{no_data} no data"] if no_data else [])
    return ", ".join(parts)


def _dlq_cell(depth: int | None) -> str:
    if depth is None:
        return "–"
    return f"[bold red]{depth}[/]" if depth else "0"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = int(seconds)
    for unit, size, smaller, smaller_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if seconds >= size:
            rest = (seconds % size) // smaller_size
            return f"{seconds // size}{unit} {rest}{smaller}" if rest else f"{seconds // size}{unit}"
    return f"{seconds}s"


# -- dlq ----------------------------------------------------------------------------------------

_VIA_HELP = "Run the replay code here (direct) or invoke the deployed replay function (lambda)."
_STOPPED = {
    "dlq_empty": "nothing else in the DLQ",
    "all_seen": "every visible letter was looked at; run again to continue",
    "max_messages": "reached --max; run again for more",
    "time_budget": "out of time; run again to continue",
}


@dlq_app.command("inspect")
def dlq_inspect(
    ctx: typer.Context,
    tier: str = typer.Argument(..., help="The tier whose DLQ to read."),
    max_messages: int = typer.Option(100, "--max", help="Read at most this many letters."),
    as_json: bool = typer.Option(False, "--json", help="Print the replay function's JSON response."),
    via: Via = typer.Option(Via.auto, "--via", help=_VIA_HELP),
) -> None:
    """Group the letters of a tier's DLQ by job type and error (nothing is removed)."""
    with _errors():
        answer = _replay(ctx.obj, {"action": "inspect", "tier": tier, "max_messages": max_messages}, via)
        if as_json:
            _console().print_json(data=answer)
            return
        _console().print(
            f"{answer['matched']} letter(s) read from the {escape(tier)} DLQ in {len(answer['groups'])} group(s); "
            f"{answer['left_in_dlq']} in the DLQ now ({_STOPPED.get(answer['stopped_because'], answer['stopped_because'])})."
        )
        if answer["groups"]:
            _console().print(_groups_table(answer["groups"]))


@dlq_app.command("replay")
def dlq_replay(
    ctx: typer.Context,
    tier: str = typer.Argument(..., help="The tier whose DLQ to move back to its queue."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count what would move; move nothing."),
    job_type: Optional[str] = typer.Option(None, "--job-type", help="Only these job types (glob, e.g. 'payments.*')."),
    error_type: Optional[str] = typer.Option(
        None, "--error-type", help="Only these error types (glob; 'unknown' for letters without reasons)."
    ),
    older_than: int = typer.Option(0, "--older-than", help="Only letters in the DLQ for at least this many seconds."),
    max_messages: int = typer.Option(100, "--max", help="Move at most this many letters."),
    max_per_second: Optional[float] = typer.Option(None, "--max-per-second", help="Rate limit (default: none)."),
    as_json: bool = typer.Option(False, "--json", help="Print the replay function's JSON response."),
    via: Via = typer.Option(Via.auto, "--via", help=_VIA_HELP),
) -> None:
    """Move letters back to the tier's queue: send first, delete only what was sent."""
    with _errors():
        event = {"action": "replay", "tier": tier, "dry_run": dry_run, "max_messages": max_messages,
                 "job_type": job_type, "error_type": error_type, "older_than_seconds": older_than,
                 "max_per_second": max_per_second}
        answer = _replay(ctx.obj, event, via)
        if as_json:
            _console().print_json(data=answer)
        else:
            stopped = _STOPPED.get(answer["stopped_because"], answer["stopped_because"])
            if dry_run:
                _console().print(f"Dry run: {answer['matched']} letter(s) would be replayed to the {escape(tier)} queue; "
                          f"nothing was moved ({stopped}).")
            else:
                _console().print(f"Replayed {answer['moved']} of {answer['matched']} matching letter(s) to the "
                          f"{escape(tier)} queue, {answer['failed']} failed; {answer['left_in_dlq']} left in the DLQ "
                          f"({stopped}).")
            if answer["groups"]:
                _console().print(_groups_table(answer["groups"]))
        if answer["failed"]:
            raise CliError(f"{answer['failed']} letter(s) could not be sent and stay in the DLQ: run the replay again")


def _replay(target: Target, event: dict[str, Any], via: Via) -> dict[str, Any]:
    """Run the replay code here when it is importable (or asked for), else invoke the deployed function."""
    deployment = target.deployment()
    deployment.tier(event["tier"])  # an unknown tier fails here, naming the known ones
    replay = None if via is Via.function else _replay_module()
    if replay is None and via is Via.direct:
        raise CliError("the replay code (functions/replay) is not importable here: use --via lambda", 2)
    if replay is None:
        return _invoke_replay(target, deployment, event)
    tiers = {name: replay.TierQueues(urls.queue_url, urls.dlq_url)
             for name, urls in deployment.tiers.items() if urls.dlq_url}
    try:
        request = replay.parse_event(event, tiers=tiers)
        sqs = target.client("sqs")
        total = min(request.max_messages, replay.approximate_depth(sqs, tiers[request.tier].dlq_url))
        with _progress(f"{request.action} {request.tier} DLQ", total) as on_progress:
            return replay.run(request, sqs=sqs, tiers=tiers, on_progress=on_progress)
    except replay.ReplayEventError as exc:
        raise CliError(str(exc), 2) from None


def _invoke_replay(target: Target, deployment: discovery.Deployment, event: dict[str, Any]) -> dict[str, Any]:
    name = deployment.replay_function_name
    if not name:
        raise CliError(f"{deployment.source} names no replay function to invoke")
    client = target.client("lambda", read_timeout=REPLAY_INVOKE_READ_TIMEOUT, retries={"total_max_attempts": 1})
    with _console(stderr=True).status(f"invoking {name}..."):
        answer = client.invoke(FunctionName=name, InvocationType="RequestResponse", Payload=json.dumps(event).encode())
    body = json.loads(answer["Payload"].read() or b"null")
    if answer.get("FunctionError"):
        message = body.get("errorMessage") if isinstance(body, dict) else body
        raise CliError(f"the replay function {name} refused or failed: {message}", 2 if "invalid replay event" in str(message) else 1)
    return body


def _replay_module() -> ModuleType | None:
    """``functions.replay`` from this checkout (next to the package), or ``None`` when installed without it."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "functions" / "replay" / "__init__.py").is_file():
        return None
    if str(root) not in sys.path:
        sys.path.append(str(root))
    import functions.replay as replay

    return replay


@contextmanager
def _progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = _console(stderr=True)
    if not console.is_terminal:  # a log or a pipe gets the summary only
        yield lambda matched: None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task(description, total=max(total, 1))
        yield lambda matched: progress.update(task, completed=matched)


def _groups_table(groups: list[dict[str, Any]]) -> Table:
    """One row per group; ``--json`` adds sample message ids (to open in the console) and exact times."""
    table = Table()
    table.add_column("Count", justify="right")
    for title in ("Job type", "Error type", "Reason", "Error message", "First failed", "Dead-lettered"):
        table.add_column(title, overflow="fold")
    for group in groups:
        table.add_row(
            str(group["count"]), escape(group["job_type"]), escape(group["error_type"]), group.get("reason") or "",
            escape(group.get("error_message") or ""), _minute(group.get("oldest")), _minute(group.get("newest")),
        )
    return table


def _minute(iso: str | None) -> str:
    """``2026-11-29T08:13:00.000Z`` -> ``2026-11-29 08:13`` (UTC): enough to tell groups apart."""
    return iso[:16].replace("T", " ") if iso else ""


# -- errors -------------------------------------------------------------------------------------


@contextmanager
def _errors() -> Iterator[None]:
    """Turn the failures an operator can fix into one line and an exit code; anything else is a bug."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - classified below; unknown ones re-raised
        _fail(exc)


def _fail(exc: Exception) -> None:
    from botocore.exceptions import (
        ClientError, EndpointConnectionError, NoCredentialsError, NoRegionError, PartialCredentialsError,
    )

    cause: BaseException = exc
    while isinstance(cause, PublishError) and isinstance(cause.__cause__, Exception):
        cause = cause.__cause__  # the client error behind a failed publish says more
    if isinstance(cause, (NoCredentialsError, PartialCredentialsError)):
        message, code = ("no AWS credentials found: configure them as for the AWS CLI "
                         "(aws configure, AWS_PROFILE, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"), 1
    elif isinstance(cause, NoRegionError):
        message, code = "no AWS region: pass --region or set AWS_REGION", 1
    elif isinstance(cause, EndpointConnectionError):
        message, code = f"cannot reach {cause.kwargs.get('endpoint_url')}: is the endpoint (or the local mode) up?", 1
    elif isinstance(cause, CliError):
        message, code = str(cause), cause.code
    elif isinstance(cause, (discovery.UnknownTierError, InvalidJobError)):
        message, code = str(cause), 2
    elif isinstance(cause, (discovery.DiscoveryError, PublishError)):
        message, code = str(cause), 1
    elif isinstance(cause, ClientError):
        message, code = f"AWS refused the request: {_client_error_text(cause)}", 1
    else:
        raise exc
    _console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


def _client_error_text(exc: Any) -> str:
    error = exc.response.get("Error", {})
    return f"{error.get('Code', 'Error')}: {error.get('Message', '')} ({exc.operation_name})"


def main() -> None:
    """Entry point of the ``tiered-jobs`` command."""
    app()
