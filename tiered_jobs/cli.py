"""``tiered-jobs``: publish, watch and steer the queues of a stage without writing boto3.

Works against a deployed stack (credentials and region resolved as the AWS CLI does; the stack
found by its outputs, else by the stage's SSM parameters) and against the local embedded AWS
(``--endpoint-url``, or the ``AWS_ENDPOINT_URL`` variable that the emulator's ``up`` prints).

Every expected failure (no credentials, nothing deployed, unknown tier, bad JSON, an invalid
job, an unreachable endpoint, AWS refusing a call) ends with one ``error: ...`` line on stderr
and a non-zero exit code: 2 for a mistake in the command, 1 for everything else. See docs/cli.md.
"""

from __future__ import annotations

import json
from datetime import timezone
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import scheduling, teardown
from . import status as status_reads
from .contract.names import STAGE_NAME_PATTERN, Env, stack_name
from .operations import OperatorError, Target, Via, client_error_text, explain, format_duration, run_replay
from .publisher import Publisher

#: boto3's own variable for a custom endpoint (e.g. moto's server): the CLI honours it too.
AWS_ENDPOINT_URL = "AWS_ENDPOINT_URL"
#: A replay may run up to Lambda's 15 minutes: wait that long for the answer, and never resend it.
REPLAY_INVOKE_READ_TIMEOUT = 960
#: How far back ``status`` looks for SQS's ``ApproximateAgeOfOldestMessage`` metric.
AGE_LOOKBACK_SECONDS = 900

app = typer.Typer(
    name="tiered-jobs",
    help="Publish jobs and operate the tier queues of a Tiered Jobs stage.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
dlq_app = typer.Typer(help="Inspect a tier's dead-letter queue and replay it.", no_args_is_help=True)
app.add_typer(dlq_app, name="dlq")
teardown.register(app)



def _console(stderr: bool = False) -> Console:
    """Built per use, not at import: the width and terminal are those of this invocation."""
    return Console(stderr=stderr, highlight=False)


#: The CLI reports an :class:`~tiered_jobs.operations.OperatorError` as one ``error:`` line.
CliError = OperatorError


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
    delay: Optional[int] = typer.Option(
        None, "--delay", help="Seconds before the job runs (beyond 900: through a one-time schedule)."),
    at: Optional[str] = typer.Option(
        None, "--at", help="When the job runs: ISO 8601 with a time zone, e.g. 2030-05-01T09:00:00+02:00."),
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
        when = _iso_datetime(at, "--at") if at is not None else None
        result = _publisher(target).publish(job_type, data, key, tier=tier, delay=delay, at=when, tenant=tenant)
        if result.schedule_name is not None:
            state = "Already scheduled" if result.already_scheduled else "Scheduled"
            _console().print(
                f"{state}: {escape(job_type)} (key {escape(repr(key))}) to tier [bold]{result.tier}[/] at "
                f"{result.fire_at.isoformat() if result.fire_at else '?'} (one-time schedule {result.schedule_name}; "
                f"cancel with: tiered-jobs cancel {escape(job_type)} {escape(key)})"
            )
            return
        _console().print(
            f"Published {escape(job_type)} (key {escape(repr(key))}) to tier [bold]{result.tier}[/]: "
            f"message {result.message_id}"
        )


def _publisher(target: Target) -> Publisher:
    """The stage's publisher; where one-time jobs go is looked up only if a job needs it."""
    deployment = target.deployment()
    return Publisher.from_deployment(
        deployment, sqs=target.client("sqs"), scheduler=target.client("scheduler"),
        scheduling=lambda: _scheduling_target(target),
    )


def _scheduling_target(target: Target) -> scheduling.SchedulingTarget:
    return scheduling.locate(target.stage, target.stack_name, list(target.deployment().tiers),
                             cloudformation=target.client("cloudformation"), ssm=target.client("ssm"))


def _iso_datetime(text: str, option: str) -> Any:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise CliError(f"{option} {text!r} is not an ISO 8601 date-time (e.g. 2030-05-01T09:00:00+02:00)", 2) from None


@app.command()
def cancel(
    ctx: typer.Context,
    job_type: str = typer.Argument(..., metavar="TYPE", help="The job type it was published with."),
    key: str = typer.Argument(..., metavar="KEY", help="Its idempotency key."),
) -> None:
    """Cancel a job published for later (one-time schedule); jobs delayed by SQS itself cannot be."""
    with _errors():
        if _publisher(ctx.obj).cancel(job_type, key):
            _console().print(f"Cancelled {escape(job_type)} (key {escape(repr(key))}): it will not run.")
        else:
            raise CliError(f"no pending scheduled job {job_type} (key {key!r}): never scheduled, or already sent")


@app.command("schedules")
def schedules_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Periodic jobs and pending one-time jobs of the stage, with their next fire time."""
    with _errors():
        target: Target = ctx.obj
        jobs = scheduling.list_scheduled(target.client("scheduler"), _scheduling_target(target))
        if as_json:
            _console().print_json(data={"stage": target.stage, "schedules": [job.to_dict() for job in jobs]})
            return
        table = Table(title=f"Scheduled jobs · stage {target.stage}")
        for title in ("Name", "Kind", "Expression", "Time zone", "Job type", "Tier", "Next fire (UTC)", "Key"):
            table.add_column(title, overflow="fold")
        for job in jobs:
            next_fire = job.next_fire.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if job.next_fire else (
                "disabled" if job.state != "ENABLED" else "–")
            table.add_row(job.name, job.kind, job.expression, job.timezone, escape(job.job_type or "?"),
                          job.tier or "?", next_fire, escape(job.idempotency_key or ""))
        _console().print(table)
        if not jobs:
            _console(stderr=True).print("note: no schedules in this stage")


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
        ages = _optional("oldest age", lambda: _oldest_ages(cloudwatch, deployment.queue_urls()), notes)
        rows = []
        for tier, urls in deployment.tiers.items():
            main = status_reads.queue_counts(sqs, urls.queue_url)
            rows.append({
                "tier": tier,
                "visible": main["ApproximateNumberOfMessages"],
                "in_flight": main["ApproximateNumberOfMessagesNotVisible"],
                "delayed": main["ApproximateNumberOfMessagesDelayed"],
                "dlq": status_reads.queue_counts(sqs, urls.dlq_url)["ApproximateNumberOfMessages"] if urls.dlq_url else None,
                "oldest_age_seconds": ages.get(tier),
                "alarms": status_reads.tier_alarms(alarms, target.stage, tier),
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
                _dlq_cell(row["dlq"]), _duration(row["oldest_age_seconds"]), status_reads.alarm_summary(row["alarms"]),
            )
        _console().print(table)
        _print_rates(rates)
        for note in notes:
            _console(stderr=True).print(f"note: {escape(note)}")


#: The reads ``status`` makes (shared with the local mode's live view); module names so tests can swap them.
_alarm_states = status_reads.alarm_states
_oldest_ages = status_reads.oldest_ages


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



def _optional(what: str, read: Callable[[], dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    """CloudWatch reads are extras: without the permission, the column stays blank and a note says why."""
    from botocore.exceptions import ClientError

    try:
        return read()
    except ClientError as exc:
        notes.append(f"{what} unavailable ({client_error_text(exc)})")
        return {}


def _dlq_cell(depth: int | None) -> str:
    if depth is None:
        return "–"
    return f"[bold red]{depth}[/]" if depth else "0"


_duration = format_duration


# -- job ----------------------------------------------------------------------------------------


@app.command("job")
def job(
    ctx: typer.Context,
    job_type: str = typer.Argument(..., metavar="TYPE", help="Job type, e.g. payments.update_balance."),
    key: str = typer.Argument(..., metavar="KEY", help="The job's idempotency key (the business id)."),
    max_letters: int = typer.Option(1000, "--max-letters", help="Letters read per non-empty DLQ, at most."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """What happened to one job: its idempotency record, its dead letters, its scheduled runs."""
    from .lookup import lookup_job

    with _errors():
        found = lookup_job(ctx.obj, job_type, key, max_letters=max_letters)
        if as_json:
            _console().print_json(data=found.to_dict())
            return
        out = _console()
        out.print(f"[bold]{escape(job_type)}[/] key {escape(repr(key))}")
        out.print(f"  state: [bold]{found.record.state.replace('_', ' ')}[/] — {escape(found.record.detail)}",
                  soft_wrap=True)
        if found.record.result is not None:
            out.print(f"  result: {escape(json.dumps(found.record.result))}", soft_wrap=True)
        read = ", ".join(f"{tier} {count}" for tier, count in found.letters_read.items())
        if not found.letters:
            out.print(f"  dead letters: none (letters read: {read or 'no DLQ'})")
        for letter in found.letters:
            reasons = "; ".join(f"{name.removeprefix('DeadLetter.')}={value}" for name, value in letter.reasons.items())
            out.print(f"  dead letter in the {letter.tier} DLQ: {letter.message_id}: "
                      f"{escape(reasons or 'no reasons (moved by SQS redrive: crash or timeout)')}", soft_wrap=True)
        if found.scheduled is None:
            out.print("  scheduled runs: not tracked (no scheduled jobs source)")
        else:
            runs = ", ".join(f"{run.at.isoformat()} ({run.schedule})" for run in found.scheduled)
            out.print(f"  scheduled runs: {escape(runs) or 'none pending'}")
        for note in found.notes:
            _console(stderr=True).print(f"note: {escape(note)}")


# -- console ------------------------------------------------------------------------------------


@app.command("console")
def console(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on; anything but loopback needs --token."),
    port: int = typer.Option(8321, "--port", help="Port to listen on (0: a free one)."),
    token: Optional[str] = typer.Option(
        None, "--token", envvar="TIERED_JOBS_CONSOLE_TOKEN",
        help="Require this token (basic auth password, bearer token or ?token=); mandatory off loopback.",
    ),
    read_only: bool = typer.Option(False, "--read-only", help="Hide every action and refuse action requests."),
) -> None:
    """Serve the web console for this stage: tiers live, DLQ review, job lookup, replay."""
    from .console import INSTALL_HINT, missing_modules

    with _errors():
        if missing_modules():
            raise CliError(f"{INSTALL_HINT} (missing: {', '.join(missing_modules())})")
        from .console.security import BindError, Security
        from .console.server import serve

        target: Target = ctx.obj
        try:
            target.deployment()
        except Exception as exc:  # noqa: BLE001 - explained ones are shown (and kept as a banner until fixed)
            if explain(exc) is None:
                raise
            _console(stderr=True).print(f"warning: {escape(explain(exc)[0])}", soft_wrap=True)
        try:
            serve(target, Security(token=token, read_only=read_only), host, port,
                  on_ready=lambda url: _console().print(f"Console for stage {target.stage}: {url}"
                                                        + (" (read-only)" if read_only else ""), soft_wrap=True))
        except BindError as exc:
            raise CliError(str(exc), 2) from None
        except OSError as exc:
            raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


# -- dlq ----------------------------------------------------------------------------------------

_VIA_HELP = "Run the replay code here (direct) or invoke the deployed replay function (lambda)."
_STOPPED = {
    "dlq_empty": "nothing else in the DLQ",
    "all_seen": "every visible letter was looked at; run again to continue",
    "max_messages": "reached --max; run again for more",
    "all_found": "every --message-id was found",
    "time_budget": "out of time; run again to continue",
    "archive_failed": "the archive could not be written",
}
#: ``--job-type``, ``--error-type``, ``--older-than``, ``--max``: the same filters for replay and discard.
_JOB_TYPE_HELP = "Only these job types (glob, e.g. 'payments.*')."
_ERROR_TYPE_HELP = "Only these error types (glob; 'unknown' for letters without reasons)."
_OLDER_THAN_HELP = "Only letters in the DLQ for at least this many seconds."


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
            f"{answer['left_in_dlq']} in the DLQ now ({_stopped(answer)})."
        )
        _print_outside_window(answer)
        _print_groups(answer["groups"])


@dlq_app.command("replay")
def dlq_replay(
    ctx: typer.Context,
    tier: str = typer.Argument(..., help="The tier whose DLQ to move back to its queue."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count what would move; move nothing."),
    job_type: Optional[str] = typer.Option(None, "--job-type", help=_JOB_TYPE_HELP),
    error_type: Optional[str] = typer.Option(None, "--error-type", help=_ERROR_TYPE_HELP),
    older_than: int = typer.Option(0, "--older-than", help=_OLDER_THAN_HELP),
    max_messages: int = typer.Option(100, "--max", help="Move at most this many letters."),
    max_per_second: Optional[float] = typer.Option(None, "--max-per-second", help="Rate limit (default: none)."),
    allow_outside_window: bool = typer.Option(
        False, "--allow-outside-window",
        help="Also move letters older than the tier's idempotency window (their jobs may run again).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the replay function's JSON response."),
    via: Via = typer.Option(Via.auto, "--via", help=_VIA_HELP),
) -> None:
    """Move letters back to the tier's queue: send first, delete only what was sent."""
    with _errors():
        event = {"action": "replay", "tier": tier, "dry_run": dry_run, "max_messages": max_messages,
                 "job_type": job_type, "error_type": error_type, "older_than_seconds": older_than,
                 "max_per_second": max_per_second}
        if allow_outside_window:
            event["allow_outside_idempotency_window"] = True
        answer = _replay(ctx.obj, event, via)
        if as_json:
            _console().print_json(data=answer)
        else:
            stopped = _stopped(answer)
            if dry_run:
                _console().print(f"Dry run: {answer['matched']} letter(s) would be replayed to the {escape(tier)} queue; "
                          f"nothing was moved ({stopped}).")
            else:
                _console().print(f"Replayed {answer['moved']} of {answer['matched']} matching letter(s) to the "
                          f"{escape(tier)} queue, {answer['failed']} failed; {answer['left_in_dlq']} left in the DLQ "
                          f"({stopped}).")
            _print_outside_window(answer)
            _print_groups(answer["groups"])
        if answer["failed"]:
            raise CliError(f"{answer['failed']} letter(s) could not be sent and stay in the DLQ: run the replay again")


@dlq_app.command("discard")
def dlq_discard(
    ctx: typer.Context,
    tier: str = typer.Argument(..., help="The tier whose DLQ to drop letters from."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count what would be discarded; archive and delete nothing."),
    message_ids: Optional[list[str]] = typer.Option(
        None, "--message-id", help="Only this letter (repeat the option for several)."
    ),
    job_type: Optional[str] = typer.Option(None, "--job-type", help=_JOB_TYPE_HELP),
    error_type: Optional[str] = typer.Option(None, "--error-type", help=_ERROR_TYPE_HELP),
    older_than: int = typer.Option(0, "--older-than", help=_OLDER_THAN_HELP),
    max_messages: int = typer.Option(100, "--max", help="Discard at most this many letters."),
    archive: Optional[Path] = typer.Option(
        None, "--archive", help="JSON-lines file the letters are appended to before they are deleted.  "
                                "[default: ./tiered-jobs-discarded-<stage>-<tier>.jsonl]",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the replay function's JSON response."),
    via: Via = typer.Option(Via.auto, "--via", help=_VIA_HELP),
) -> None:
    """Drop letters that will never succeed: each is archived whole (and synced to disk) before it is deleted."""
    with _errors():
        target: Target = ctx.obj
        event: dict[str, Any] = {"action": "discard", "tier": tier, "dry_run": dry_run, "max_messages": max_messages,
                                 "job_type": job_type, "error_type": error_type, "older_than_seconds": older_than}
        if message_ids:
            event["message_ids"] = list(message_ids)
        path = archive or Path(f"tiered-jobs-discarded-{target.stage}-{tier}.jsonl")
        answer = _replay(target, event, via, archive_path=path)
        if as_json:
            _console().print_json(data=answer)
        elif dry_run:
            _console().print(f"Dry run: {answer['matched']} letter(s) would be discarded from the {escape(tier)} DLQ; "
                             f"nothing was archived or deleted ({_stopped(answer)}).")
        else:
            _console().print(f"Discarded {answer['discarded']} of {answer['matched']} matching letter(s) from the "
                             f"{escape(tier)} DLQ, archived to {escape(str(answer['archive']))}; {answer['failed']} "
                             f"failed; {answer['left_in_dlq']} left in the DLQ ({_stopped(answer)}).")
        if not as_json:
            _print_groups(answer["groups"])
        if answer["archive_error"]:
            raise CliError(f"could not write the archive {answer['archive']} ({answer['archive_error']}): the letters "
                           "not archived were not deleted")
        if answer["failed"]:
            raise CliError(f"{answer['failed']} archived letter(s) could not be deleted and stay in the DLQ: "
                           "run the discard again (the archive may then hold them twice)")


@dlq_app.command("show")
def dlq_show(
    ctx: typer.Context,
    tier: str = typer.Argument(..., help="The tier whose DLQ holds the letter."),
    message_ids: list[str] = typer.Option(..., "--message-id", help="The letter's message id (repeatable)."),
    max_messages: int = typer.Option(1000, "--max", help="Look through at most this many letters."),
    as_json: bool = typer.Option(False, "--json", help="Print the letters as JSON."),
    via: Via = typer.Option(Via.auto, "--via", help=_VIA_HELP),
) -> None:
    """Show letters in full: body, every attribute, and the real (unmasked) error message."""
    with _errors():
        event = {"action": "show", "tier": tier, "message_ids": list(message_ids), "max_messages": max_messages}
        answer = _replay(ctx.obj, event, via)
        letters = answer.get("letters") or []
        if as_json:
            _console().print_json(data=letters)
        for letter in [] if as_json else letters:
            _print_letter(letter)
        missing = sorted(set(message_ids) - {letter["message_id"] for letter in letters})
        if missing:
            raise CliError(f"not found in the {tier} DLQ: {', '.join(missing)} ({_stopped(answer)})")


def _print_letter(letter: dict[str, Any]) -> None:
    """Every field on its own line, never wrapped mid-value; then the body, pretty-printed when it is JSON."""
    console = _console()
    for label, key in (("Message id", "message_id"), ("Job type", "job_type"), ("Reason", "reason"),
                       ("Error type", "error_type"), ("Error message", "error_message"),
                       ("First failed", "first_failed_at"), ("Dead-lettered", "dead_lettered_at"),
                       ("Sent to the DLQ", "sent_at")):
        console.print(f"[bold]{label}:[/] {escape(str(letter.get(key)))}", soft_wrap=True)
    console.print("[bold]Message attributes:[/]")
    for name, value in sorted(letter["message_attributes"].items()):
        shown = value.get("StringValue", value.get("BinaryValue"))
        console.print(f"  {escape(name)} ({value['DataType']}): {escape(str(shown))}", soft_wrap=True)
    console.print("[bold]SQS attributes:[/] " + escape(", ".join(f"{k}={v}" for k, v in sorted(letter["attributes"].items()))),
                  soft_wrap=True)
    console.print("[bold]Body:[/]")
    try:
        body = json.dumps(json.loads(letter["body"]), indent=2, ensure_ascii=False)
    except ValueError:
        body = letter["body"]
    console.print(escape(body), soft_wrap=True, highlight=False)
    console.print()


def _stopped(answer: dict[str, Any]) -> str:
    return _STOPPED.get(answer["stopped_because"], answer["stopped_because"])


def _print_outside_window(answer: dict[str, Any]) -> None:
    """Say how many letters are older than the tier's idempotency window, and what happened to them."""
    outside, refused, ttl = answer.get("outside_window"), answer.get("refused_outside_window"), answer.get("idempotency_ttl_seconds")
    if not outside:
        return
    window = f"the tier's idempotency window ({_duration(ttl)})" if ttl is not None else (
        "the tier's idempotency window (unknown: the stage was deployed before replay could read it)")
    if refused:
        _console().print(f"{refused} letter(s) older than {window} were left in the DLQ: replaying them could run "
                         "jobs that had completed again. Discard them, or replay with --allow-outside-window after "
                         "checking.", soft_wrap=True)
    else:
        _console().print(f"{outside} letter(s) are older than {window}.", soft_wrap=True)


def _replay(target: Target, event: dict[str, Any], via: Via, archive_path: Path | None = None) -> dict[str, Any]:
    """The replay domain (here or in the deployed function), with a progress bar on a terminal.

    Here, each tier's idempotency window comes from the stage's SSM parameters (a note on stderr
    when they cannot be read), and ``discard`` archives to ``archive_path``.
    """
    return run_replay(target, event, via, progress=_progress, status=_console(stderr=True).status,
                      archive_path=archive_path, note=lambda text: _console(stderr=True).print(f"note: {escape(text)}"))


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


#: Narrowest the error message column gets before less important columns make room for it.
ERROR_MESSAGE_MIN_WIDTH = 24


def _group_layouts() -> list[list[tuple[str, Callable[[dict[str, Any]], str]]]]:
    """Column sets from the fullest to the leanest: what a narrow terminal drops first is last here."""
    count = ("Count", lambda g: str(g["count"]))
    job_type = ("Job type", lambda g: g["job_type"])
    error_type = ("Error type", lambda g: g["error_type"])
    reason = ("Reason", lambda g: g.get("reason") or "")
    message = ("Error message", lambda g: g.get("error_message") or "")
    first = ("First failed", lambda g: _minute(g.get("oldest")))
    last = ("Dead-lettered", lambda g: _minute(g.get("newest")))
    last_short = ("Dead-lettered", lambda g: _minute(g.get("newest"))[5:])  # MM-DD HH:MM
    return [
        [count, job_type, error_type, reason, message, first, last],
        [count, job_type, error_type, reason, message, last_short],
        [count, job_type, error_type, message, last_short],
        [count, job_type, error_type, message],
    ]


def _groups_table(groups: list[dict[str, Any]], width: int | None) -> tuple[Table, int] | None:
    """The fullest layout that fits ``width`` columns (``None``: any width), with the width it needs.

    Job type, error type, reason and times are never wrapped or cut: their columns are ``no_wrap``
    and as wide as their longest cell. Only the error message wraps, at spaces, and never narrower
    than ``ERROR_MESSAGE_MIN_WIDTH`` (or its longest word). ``None`` when not even the leanest fits.
    """
    from rich.cells import cell_len

    for layout in _group_layouts():
        rows = [[escape(cell(group)) for _, cell in layout] for group in groups]
        table = Table()
        natural = minimum = len(layout) + 1  # the vertical borders
        for index, (title, _) in enumerate(layout):
            cells = [row[index] for row in rows]
            widest = max(cell_len(text) for text in [title, *cells]) + 2  # + padding
            natural += widest
            if title == "Error message":
                longest_word = max((cell_len(word) for text in cells for word in text.split()), default=0)
                minimum += min(widest, max(ERROR_MESSAGE_MIN_WIDTH, longest_word) + 2)
                table.add_column(title, min_width=ERROR_MESSAGE_MIN_WIDTH, overflow="fold")
            else:
                minimum += widest
                table.add_column(title, no_wrap=True, min_width=widest - 2,
                                 justify="right" if title == "Count" else "left")
        if width is None or minimum <= width:
            for row in rows:
                table.add_row(*row)
            return table, natural
    return None


def _print_groups(groups: list[dict[str, Any]]) -> None:
    """On a terminal, fit its width; elsewhere (a pipe, a file, CI) print every column at full width."""
    if not groups:
        return
    console = _console()
    fitted = _groups_table(groups, console.width if console.is_terminal else None)
    if fitted is None:  # narrower than the leanest table: one block per group, wrapped at spaces only
        from rich.padding import Padding

        for group in groups:
            console.print(f"[bold]{group['count']} x {escape(group['job_type'])}[/]")
            details = (f"{escape(group['error_type'])} · {group.get('reason') or ''} · "
                       f"dead-lettered {_minute(group.get('newest'))}\n{escape(group.get('error_message') or '')}")
            console.print(Padding(details, (0, 0, 0, 4)))
        return
    table, natural = fitted
    if not console.is_terminal:
        console.width = max(console.width, natural)
    console.print(table)


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
    explained = explain(exc)
    if explained is None:
        raise exc
    message, code = explained
    _console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)




def main() -> None:
    """Entry point of the ``tiered-jobs`` command."""
    app()
