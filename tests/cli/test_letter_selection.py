"""``dlq replay`` and ``dlq discard`` pick letters with one set of options, gathered in one holder."""

from __future__ import annotations

import typer.main

from tiered_jobs.cli import app
from tiered_jobs.cli.letter_selection import LetterSelection

SHARED = ["--dry-run", "--message-id", "--job-type", "--error-type", "--older-than", "--max"]


def options(command: str) -> dict[str, tuple[str | None, object]]:
    group = typer.main.get_command(app).commands["dlq"]
    params = group.commands[command].params
    return {opt: (param.help, param.default) for param in params for opt in param.opts if opt.startswith("--")}


def test_replay_and_discard_declare_the_letter_options_once():
    replay, discard = options("replay"), options("discard")
    assert {name: replay[name] for name in SHARED} == {name: discard[name] for name in SHARED}


def test_the_selection_names_the_replay_events_fields_and_message_ids_only_when_given():
    assert LetterSelection("bulk").event("discard") == {
        "action": "discard",
        "tier": "bulk",
        "dry_run": False,
        "max_messages": 100,
        "job_type": None,
        "error_type": None,
        "older_than_seconds": 0,
    }
    picked = LetterSelection("bulk", message_ids=["m-1", "m-2"], older_than=60).event("replay")
    assert picked["message_ids"] == ["m-1", "m-2"] and picked["older_than_seconds"] == 60
