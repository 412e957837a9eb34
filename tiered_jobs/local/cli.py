"""``tiered-jobs local ...``: the real stack on an embedded AWS (moto) on 127.0.0.1."""

from __future__ import annotations

import signal
import threading
import time

import typer

from tiered_jobs.contract.names import Env
from rich.console import Console
from rich.live import Live

app = typer.Typer(help="Run the real stack on an embedded AWS (moto) on 127.0.0.1.", no_args_is_help=True)


@app.command()
def demo() -> None:
    """Play the whole story (payments, e-mails, outages, a flood, an incident and its replay); exit 1 if any check fails."""
    from tiered_jobs.local.demo import run_demo

    raise typer.Exit(run_demo())


@app.command()
def up(
    port: int = typer.Option(0, help="Port of the embedded AWS on 127.0.0.1 (0: a free one)."),
    view: bool = typer.Option(True, help="Show the live per-tier view (off: one status line every 10 s)."),
    console_port: int = typer.Option(0, "--console-port", help="Port of the web console on 127.0.0.1 (0: a free one)."),
    web_console: bool = typer.Option(True, "--console/--no-console", help="Serve the web console too."),
) -> None:
    """Deploy the stack and keep it and its consumers running until Ctrl-C; publish from anywhere."""
    from tiered_jobs.local.session import LocalSession
    from tiered_jobs.local.view import rows, safe_table

    console = Console()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    console.print("Deploying the real stack into an embedded AWS (moto) on 127.0.0.1 ...")
    with LocalSession(port=port) as session:
        deployment = session.deployment
        console.print(f"[bold]ready[/bold]: {deployment.stack_name} at {session.endpoint.url}")
        console.print("In another terminal:")
        for line in session.endpoint.export_lines():
            console.print(f"  {line}", soft_wrap=True)
        console.print(f"  export {Env.STAGE}={deployment.stage}")
        console.print(f"  tiered-jobs --stage {deployment.stage} publish payments.update_balance "
                      "--key pay_1 --payload '{\"account_id\": \"acc_1\", \"amount\": 500}'", soft_wrap=True)
        console.print(f"  tiered-jobs --stage {deployment.stage} status", soft_wrap=True)
        console.print(f"  aws sqs list-queues    # the queues: {', '.join(deployment.tiers)} (+ DLQs)", soft_wrap=True)
        web = _start_console(session, console_port, console) if web_console else None
        console.print("Press Ctrl-C to stop (everything is in memory and goes away).", soft_wrap=True)
        try:
            if view:
                with Live(safe_table(session), console=console, refresh_per_second=1) as live:
                    while not stop.wait(1.0):
                        live.update(safe_table(session))
            else:
                while not stop.wait(10.0):
                    console.print(time.strftime("%H:%M:%S"), "  ".join(
                        f"{r.tier}: depth {r.depth} ok {r.succeeded} dlq {r.dlq}" for r in rows(session)))
        except KeyboardInterrupt:
            pass
        console.print("stopping ...")
        if web is not None:
            web.stop()
    console.print("stopped.")


def _start_console(session: object, port: int, out: Console) -> object | None:
    """The web console on 127.0.0.1 against the local stack; a note instead when its extra is missing."""
    from tiered_jobs.console import INSTALL_HINT, missing_modules

    if missing_modules():
        out.print(f"(no web console: {INSTALL_HINT})", soft_wrap=True)
        return None
    from tiered_jobs.console.server import start_in_thread
    from tiered_jobs.local.server import FAKE_CREDENTIALS
    from tiered_jobs.operations import Target

    deployment, endpoint = session.deployment, session.endpoint  # type: ignore[attr-defined]
    target = Target(deployment.stage, deployment.stack_name, endpoint.region, endpoint.url,
                    credentials={name.lower(): value for name, value in FAKE_CREDENTIALS.items()})
    running = start_in_thread(target, port=port)
    out.print(f"[bold]console[/bold]: {running.url}", soft_wrap=True)
    return running
