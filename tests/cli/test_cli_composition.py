"""``tiered-jobs`` is composed from each module's own commands (typer's ``add_typer``), not registered on
a shared app as a side effect of importing the module."""

from __future__ import annotations

import importlib

import typer.main

import tiered_jobs.cli as cli
from tiered_jobs.cli import common

MODULES = [
    "teardown",
    "publish",
    "schedules",
    "status",
    "doctor",
    "smoke",
    "pause",
    "job",
    "search",
    "batch",
    "console",
]


def test_no_shared_app_to_register_on():
    assert not hasattr(common, "app") and not hasattr(common, "dlq_app")


def test_the_command_lists_each_modules_commands_in_order_and_dlq_as_a_group():
    listed = list(typer.main.get_command(cli.app).commands)
    expected = []
    for name in MODULES:
        module = importlib.import_module(f"tiered_jobs.cli.{name}")
        own = [
            command.name or command.callback.__name__.replace("_", "-")
            for command in module.commands.registered_commands
        ]
        assert own, f"tiered_jobs.cli.{name} declares no command"
        expected += own
    assert listed == [*expected, "dlq"]
    dlq = typer.main.get_command(cli.app).commands["dlq"]
    assert list(dlq.commands) == ["inspect", "replay", "discard", "show"]
