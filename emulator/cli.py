"""``python -m emulator ...`` (``make up``, ``make demo``): the real stack on an embedded AWS (moto) on 127.0.0.1."""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from emulator.full_width import FullWidthLive
from emulator.log_render import render as render_log_line
from emulator.seed import SEED_ENV, seed_file
from emulator.server import ENDPOINT_ENV
from tiered_jobs.cdk.packaging import PACKAGE_DIR, SCHEMAS_DIR, JobsSource
from tiered_jobs.contract.names import Env, function_name, stack_name

if TYPE_CHECKING:
    from emulator.session import CodeVersion, LocalSession
    from tiered_jobs.console.server import RunningConsole

app = typer.Typer(
    help="Run the real stack on an embedded AWS (moto) on 127.0.0.1.", no_args_is_help=True, add_completion=False
)

_TIER_HELP = "Only this tier's consumer (repeatable; default: every function)."
_GREP_HELP = "Only lines matching this regular expression."
_METRICS_HELP = "Include the EMF metric documents (CloudWatch turns them into metrics)."


def shown(path: Path) -> str:
    """``path`` as a hint names it: relative to here when under it, else absolute."""
    cwd = Path.cwd()
    return os.path.relpath(path, cwd) if path.is_relative_to(cwd) else str(path)


def command_prefix() -> str:
    """How to run ``tiered-jobs`` from another terminal: ``make setup`` puts it in the virtualenv,
    not on ``PATH``, so hints name it by path (``.venv/bin/tiered-jobs`` from the checkout)."""
    script = Path(sys.executable).parent / "tiered-jobs"
    if not script.is_file():
        return shutil.which("tiered-jobs") or "tiered-jobs"
    return shown(script)


def emulator_prefix(python: str | None = None) -> str:
    """How to run the emulator from another terminal here: ``python -m emulator`` from the checkout
    (``.venv/bin/python -m emulator``), else the checkout's ``emulator`` folder by path; this
    interpreter (by path) unless ``python`` is given."""
    checkout = Path(__file__).resolve().parent.parent
    python = python or shown(Path(sys.executable))
    return f"{python} -m emulator" if Path.cwd() == checkout else f"{python} {shown(checkout / 'emulator')}"


@app.command()
def up(
    port: int = typer.Option(0, help="Port of the embedded AWS on 127.0.0.1 (0: a free one)."),
    view: bool = typer.Option(True, help="Show the live per-tier view (off: one status line every 10 s)."),
    logs: bool = typer.Option(True, help="Print the functions' log lines as they come."),
    tier: Optional[list[str]] = typer.Option(None, "--tier", help="Print only these tiers' logs (repeatable)."),
    grep: Optional[str] = typer.Option(None, "--grep", help="Print only log lines matching this regular expression."),
    reload: bool = typer.Option(True, help="Deploy a new code version when files under the functions' asset change."),
    console_port: int = typer.Option(0, "--console-port", help="Port of the web console on 127.0.0.1 (0: a free one)."),
    web_console: bool = typer.Option(True, "--console/--no-console", help="Serve the web console too."),
    app_command: Optional[str] = typer.Option(
        None, "--app", help="Your CDK app's command, as for `cdk synth --app` (default: cdk.json's \"app\")."
    ),
    app_dir: Path = typer.Option(
        Path("."), "--app-dir", help="Your CDK app's folder: its command runs there, cdk.json is there."
    ),
    stack: Optional[str] = typer.Option(None, "--stack", help="The app's stack that uses TieredJobs, if several do."),
    seed: Optional[Path] = typer.Option(
        None,
        "--seed",
        envvar=SEED_ENV,
        help="Python file run after the deploy to put test data back (default: the app folder's local-seed.py).",
    ),
) -> None:
    """Deploy the app's stack that uses TieredJobs (this folder's, or --app-dir's) and keep it and its
    consumers running until Ctrl-C; publish from anywhere."""
    from emulator.cdk_app import CdkApp, CdkAppError
    from emulator.logs import LogFilter
    from emulator.session import LocalSession
    from emulator.view import REFRESH_SECONDS, count, rows, safe_table

    console = Console()
    stop = threading.Event()
    printed: queue.Queue[str] = queue.Queue()  # printed from the main thread, above the live view
    try:
        wanted = LogFilter(grep)
    except Exception as exc:  # noqa: BLE001 - a bad --grep is a mistake in the command
        raise typer.BadParameter(f"--grep: {exc}") from None
    try:
        cdk_app = CdkApp.load(app_dir, app_command)
    except CdkAppError as exc:
        raise typer.BadParameter(str(exc), param_hint="--app / --app-dir") from None
    try:
        seed_path = seed_file(cdk_app.directory, seed)
    except FileNotFoundError as exc:
        raise typer.BadParameter(str(exc), param_hint="--seed") from None
    names: dict[str, str] = {}  # function name -> what its lines are prefixed with

    def on_line(function_name: str, line: str) -> None:
        label = names.get(function_name)
        if logs and label is not None and wanted.matches(line):
            printed.put(f"[dim]{label} |[/dim] {escape(render_log_line(line))}")  # the shipped line stays JSON

    def on_reload(version: CodeVersion) -> None:
        printed.put(
            f"[bold]code version {version.number}[/bold] ({version.code_sha256[:12]}…): "
            f"{', '.join(version.changed) or 'reloaded'}; new execution environments from the next batch"
        )

    console.print(
        f"Synthesizing `{cdk_app.command}` in {cdk_app.directory} and deploying it into an embedded AWS "
        "(moto) on 127.0.0.1 ...",
        soft_wrap=True,
    )
    session = LocalSession(
        port=port,
        log_sink=on_line,
        reload_interval_seconds=1.0 if reload else None,
        on_reload=on_reload,
        app=cdk_app,
        stack=stack,
    )
    on_sigterm = signal.signal(signal.SIGTERM, lambda *_: stop.set())  # restored when `up` returns
    try:
        session.start()
    except BaseException as exc:
        signal.signal(signal.SIGTERM, on_sigterm)
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C while starting: the session has stopped what it started
            console.print("stopped.")
            raise typer.Exit(130) from None
        if not isinstance(exc, CdkAppError):
            raise
        console.print(f"[bold red]error[/bold red]: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from None
    # From here Ctrl-C asks the loop below to stop, as SIGTERM does, instead of raising KeyboardInterrupt
    # wherever the main thread happens to be: on a loaded machine, an interrupt raised inside a status
    # read was lost and `up` kept running. A second Ctrl-C, once stopping, interrupts the stop itself.
    on_sigint = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        deployment, endpoint = session.deployment, session.endpoint
        assert deployment is not None and endpoint is not None, "the session is started"
        names.update({t.consumer.name: t.name for t in deployment.tiers.values() if not tier or t.name in tier})
        if not tier:
            names[deployment.replay.name] = "replay"
        # this repository's stack is named after its stage; another app's is named as its app names it
        name = deployment.stack_name
        named = f" --stack-name {name}" if name != stack_name(deployment.stage) else ""
        cli = f"{command_prefix()} --stage {deployment.stage}{named}"
        console.print(f"[bold]ready[/bold]: {deployment.stack_name} at {endpoint.url}")
        for change in deployment.assembly.profile_changes:  # the defaults it sped up; the app's own values stay
            console.print(f"local profile: {escape(change)}", soft_wrap=True)
        console.print("In another terminal:")
        for line in endpoint.export_lines():
            console.print(f"  {line}", soft_wrap=True)
        console.print(f"  export {Env.STAGE}={deployment.stage}")
        schemas = session.code_source.directory / SCHEMAS_DIR if session.code_source is not None else None
        if schemas is not None and schemas.is_dir():  # the app's payload schemas, which a publisher checks too
            console.print(f"  export {Env.SCHEMA_DIRS}={shlex.quote(str(schemas))}", soft_wrap=True)
        console.print(f"  {cli} publish {_example_publish(session)}", soft_wrap=True)
        console.print(f"  {cli} status", soft_wrap=True)
        console.print(
            f"  {emulator_prefix()} logs{named} --tier {next(iter(deployment.tiers))} --follow", soft_wrap=True
        )
        console.print(
            f'  aws sqs list-queues --endpoint-url "${ENDPOINT_ENV}"    # the queues: '
            f"{', '.join(deployment.tiers)} (+ DLQs); AWS CLI v1 needs the flag for SQS",
            soft_wrap=True,
        )
        if reload and session.code_source is not None:
            console.print(f"Edit {_watched(session.code_source)}: the next batches run the new code.", soft_wrap=True)
        if seed_path is not None:
            _seed(seed_path, session, cdk_app.directory, console)
        web = _start_console(session, console_port, console) if web_console else None
        console.print("Press Ctrl-C to stop (everything is in memory and goes away).", soft_wrap=True)

        def drain() -> None:
            while True:
                try:
                    console.print(printed.get_nowait(), soft_wrap=True)
                except queue.Empty:
                    return

        try:
            if view:
                with FullWidthLive(safe_table(session), console=console, refresh_per_second=1) as live:
                    last = 0.0
                    while not stop.wait(0.2):
                        drain()
                        if time.monotonic() - last >= REFRESH_SECONDS:
                            live.update(safe_table(session))
                            last = time.monotonic()
                if not console.is_terminal:  # piped, Live leaves its last render's line open
                    console.line()
            else:
                last = time.monotonic()
                while not stop.wait(0.2):
                    drain()
                    if time.monotonic() - last >= 10.0:
                        last = time.monotonic()
                        console.print(
                            time.strftime("%H:%M:%S"),
                            "  ".join(
                                f"{r.tier}: visible {r.visible} ok {count(r.succeeded)} dlq {r.dlq}"
                                for r in rows(session)
                            ),
                        )
        except KeyboardInterrupt:
            pass
        signal.signal(signal.SIGINT, on_sigint)
        drain()
        console.print("stopping…")
        if web is not None:
            web.stop()
    finally:
        signal.signal(signal.SIGINT, on_sigint)
        session.stop()
        signal.signal(signal.SIGTERM, on_sigterm)
    console.print("stopped.")


def _seed(path: Path, session: LocalSession, app_directory: Path, out: Console) -> None:
    """Run the seed with the stage's environment; its failure is printed, and ``up`` carries on."""
    from emulator.seed import run_seed

    deployment, endpoint = session.deployment, session.endpoint
    assert deployment is not None and endpoint is not None, "the session is started"
    environment = {**endpoint.client_env(), Env.STAGE: deployment.stage}
    schemas = session.code_source.directory / SCHEMAS_DIR if session.code_source is not None else None
    if schemas is not None and schemas.is_dir():
        environment[Env.SCHEMA_DIRS] = str(schemas)
    out.print(f"seed: running {shown(path)} ...", soft_wrap=True)
    run = run_seed(path, environment, app_directory)
    for line in run.output.splitlines():
        out.print(f"[dim]seed |[/dim] {escape(line)}", soft_wrap=True)
    if run.ok:
        out.print(f"seed: {shown(path)} done in {run.seconds:.1f} s", soft_wrap=True)
    else:
        out.print(
            f"[bold red]seed failed[/bold red]: {shown(path)} exited with {run.returncode} (its output is above); "
            "local mode keeps running without that data: fix the seed and restart",
            soft_wrap=True,
        )


def _example_publish(session: LocalSession) -> str:
    """``publish``'s arguments for the hint (the emulator knows no app's job types)."""
    return "<job type> --key <idempotency key> --payload '<JSON object>'"


def _watched(source: JobsSource) -> str:
    """What a reload follows: the job folder, and the runtime parts when they are the installed
    package's (an asset's own copy never changes)."""
    if source.runtime_dir != PACKAGE_DIR:
        return f"{shown(source.directory)}/"
    return f"{shown(source.directory)}/ (or {shown(source.runtime_dir / 'contract')}/)"


@app.command("logs")
def logs_command(
    stage: str = typer.Option("local", "--stage", envvar=Env.STAGE, help="Stage of the running local stack."),
    stack: Optional[str] = typer.Option(
        None, "--stack-name", help="CloudFormation stack name (`up` prints it).  [default: TieredJobs-<stage>]"
    ),
    endpoint_url: Optional[str] = typer.Option(
        None, "--endpoint-url", envvar=ENDPOINT_ENV, help="The embedded AWS (`up` prints it)."
    ),
    tier: Optional[list[str]] = typer.Option(None, "--tier", help=_TIER_HELP),
    grep: Optional[str] = typer.Option(None, "--grep", help=_GREP_HELP),
    since: int = typer.Option(600, "--since", help="Start this many seconds ago."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines until Ctrl-C."),
    metrics: bool = typer.Option(False, "--metrics", help=_METRICS_HELP),
) -> None:
    """Print the functions' logs from CloudWatch Logs (where `up` ships them, as Lambda does)."""
    import boto3

    from emulator.logs import LogFilter, read_events
    from emulator.logs import follow as follow_events

    try:
        wanted = LogFilter(grep, metrics=metrics)
    except Exception as exc:  # noqa: BLE001
        raise typer.BadParameter(f"--grep: {exc}") from None
    if not endpoint_url:
        raise typer.BadParameter(f"no endpoint: set {ENDPOINT_ENV} as `up` prints, or pass --endpoint-url")
    session = boto3.session.Session()
    clients = {service: session.client(service, endpoint_url=endpoint_url) for service in ("cloudformation", "logs")}
    groups = function_groups(clients["cloudformation"], stage, tier or [], stack)
    console = Console(highlight=False)
    since_ms = int((time.time() - since) * 1000)
    events = (
        follow_events(clients["logs"], groups, since_ms, stop=lambda: False)
        if follow
        else iter(read_events(clients["logs"], groups, since_ms))
    )
    try:
        for event in events:
            if wanted.matches(event.message):
                stamp = time.strftime("%H:%M:%S", time.localtime(event.timestamp_ms / 1000))
                console.print(f"[dim]{stamp} {event.function} |[/dim] {escape(event.message)}", soft_wrap=True)
    except KeyboardInterrupt:
        pass


def function_groups(cloudformation: Any, stage: str, tiers: list[str], stack: str | None = None) -> dict[str, str]:
    """``{label: log group}``: each tier's consumer (only ``tiers`` if given; labelled by tier) and the
    replay function, read from the deployed stack (``stack``, default the stage's name; its template's
    ``LoggingConfig`` and resources)."""
    from emulator.logs import function_log_groups

    name = stack or stack_name(stage)
    body = cloudformation.get_template(StackName=name)["TemplateBody"]
    template = body if isinstance(body, dict) else json.loads(body)
    paginator = cloudformation.get_paginator("list_stack_resources")
    physical = {
        s["LogicalResourceId"]: s["PhysicalResourceId"]
        for page in paginator.paginate(StackName=name)
        for s in page["StackResourceSummaries"]
    }
    groups = function_log_groups(template, physical)
    prefix = function_name(stage, "")
    labelled = {
        function[len(prefix) :].removesuffix("-consumer"): group
        for function, group in groups.items()
        if function.startswith(prefix)
    }
    if not tiers:
        return labelled
    unknown = sorted(set(tiers) - set(labelled))
    if unknown:
        raise typer.BadParameter(
            f"unknown tier {', '.join(unknown)}; the stack has "
            f"{', '.join(sorted(t for t in labelled if t != 'replay'))}",
            param_hint="--tier",
        )
    return {tier: labelled[tier] for tier in tiers}


def _start_console(session: LocalSession, port: int, out: Console) -> RunningConsole | None:
    """The web console on 127.0.0.1 against the local stack; a note instead when its extra is missing."""
    from tiered_jobs.console import INSTALL_HINT, missing_modules

    if missing_modules():
        out.print(f"(no web console: {INSTALL_HINT})", soft_wrap=True)
        return None
    from emulator.server import FAKE_CREDENTIALS
    from tiered_jobs.console.server import start_in_thread
    from tiered_jobs.stage.target import Target

    deployment, endpoint = session.deployment, session.endpoint
    assert deployment is not None and endpoint is not None, "the session is started"
    target = Target(
        deployment.stage,
        deployment.stack_name,
        endpoint.region,
        endpoint.url,
        credentials={name.lower(): value for name, value in FAKE_CREDENTIALS.items()},
    )
    running = start_in_thread(target, port=port)
    out.print(f"[bold]console[/bold]: {running.url}", soft_wrap=True)
    return running
