"""`tiered-jobs console` takes its port from --port or TIERED_JOBS_CONSOLE_PORT (a developer's own
console, or `make up`, may hold the documented 8321 while something else runs a console)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "args, env, port",
    [
        ([], {}, 8321),
        ([], {"TIERED_JOBS_CONSOLE_PORT": "0"}, 0),
        (["--port", "9001"], {"TIERED_JOBS_CONSOLE_PORT": "0"}, 9001),  # the flag wins
    ],
)
def test_the_console_listens_where_it_is_told(deployment, monkeypatch, args, env, port):
    from typer.testing import CliRunner

    from tiered_jobs.cli import app
    from tiered_jobs.console import server

    bound: list[tuple[str, int]] = []
    monkeypatch.setattr(server, "serve", lambda target, security, host, port, on_ready: bound.append((host, port)))
    result = CliRunner(env=env).invoke(app, ["--stage", "test", "console", *args])
    assert result.exit_code == 0, result.output
    assert bound == [("127.0.0.1", port)]


def test_a_port_that_is_not_a_number_is_refused_in_one_line(deployment, monkeypatch):
    from typer.testing import CliRunner

    from tiered_jobs.cli import app

    result = CliRunner(env={"TIERED_JOBS_CONSOLE_PORT": "eighty", "COLUMNS": "250"}).invoke(
        app, ["--stage", "test", "console"]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Invalid value for '--port' (env var: 'TIERED_JOBS_CONSOLE_PORT')" in result.output
