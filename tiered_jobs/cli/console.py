"""``tiered-jobs console``: serve the web console for the stage."""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape

from ..operations.errors import explain
from ..stage.target import Target
from .common import CliError, reported_errors, terminal

#: This module's commands, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer()


@commands.command("console")
def console(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on; anything but loopback needs --token."),
    port: int = typer.Option(
        8321, "--port", envvar="TIERED_JOBS_CONSOLE_PORT", help="Port to listen on (0: a free one)."
    ),
    token: Optional[str] = typer.Option(
        None,
        "--token",
        envvar="TIERED_JOBS_CONSOLE_TOKEN",
        help="Require this token (basic auth password, bearer token or ?token=); mandatory off loopback.",
    ),
    read_only: bool = typer.Option(False, "--read-only", help="Hide every action and refuse action requests."),
    origin: Optional[str] = typer.Option(
        None,
        "--origin",
        help="Behind a reverse proxy: the address users open the console at (e.g. https://jobs.example.com).",
    ),
) -> None:
    """Serve the web console for this stage: tiers live, DLQ review, job lookup, replay."""
    from ..console import INSTALL_HINT, missing_modules

    with reported_errors():
        if missing_modules():
            raise CliError(f"{INSTALL_HINT} (missing: {', '.join(missing_modules())})")
        from ..console.security import BindError, Security
        from ..console.server import serve

        try:
            security = Security(token=token, read_only=read_only, origin=origin)
        except BindError as exc:
            raise CliError(str(exc), 2) from None
        target: Target = ctx.obj
        try:
            target.deployment()
        except Exception as exc:  # explained ones are shown (and kept as a banner until fixed)
            explained = explain(exc)
            if explained is None:
                raise
            terminal(stderr=True).print(f"warning: {escape(explained[0])}", soft_wrap=True)
        try:
            serve(
                target,
                security,
                host,
                port,
                on_ready=lambda url: terminal().print(
                    f"Console for stage {target.stage}: {url}" + (" (read-only)" if read_only else ""), soft_wrap=True
                ),
            )
        except BindError as exc:
            raise CliError(str(exc), 2) from None
        except OSError as exc:
            raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
