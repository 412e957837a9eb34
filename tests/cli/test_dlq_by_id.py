"""`tiered-jobs dlq` on one letter: `inspect --ids` names every letter, `replay --message-id` moves
exactly those (a missing one is an error, never a silent no-op), `discard --message-id` the same."""

from __future__ import annotations

import io
import json
import re

import boto3
import pytest
from rich.console import Console

from tests.cli.test_cli import _dead_letter, _one_error_line
from tests.support.stack import received_bodies
from tiered_jobs.cli import dlq as cli_dlq
from tiered_jobs.cli import groups as cli_groups

#: An SQS message id: a UUID, 36 characters.
MESSAGE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _in_dlq(deployment, tier: str) -> list[str]:
    messages = boto3.client("sqs").receive_message(
        QueueUrl=deployment.dlq_urls[tier], MaxNumberOfMessages=10, VisibilityTimeout=0
    )
    return sorted(m["MessageId"] for m in messages.get("Messages", []))


def _keys(deployment, tier: str) -> list[str]:
    return sorted(body["idempotency_key"] for body in received_bodies(deployment.queue_urls[tier]))


def test_replay_with_repeated_message_ids_moves_exactly_those_letters(cli, deployment):
    ids = [_dead_letter(deployment, "critical", f"k{i}") for i in range(4)]

    result = cli("dlq", "replay", "critical", "--message-id", ids[1], "--message-id", ids[3])

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "Replayed 2 of 2 matching letter(s) to the critical queue, 0 failed; 2 left in the DLQ "
        "(every --message-id was found)."
    )
    assert _keys(deployment, "critical") == ["k1", "k3"]
    assert _in_dlq(deployment, "critical") == sorted([ids[0], ids[2]])


def test_a_dry_run_by_message_id_moves_nothing(cli, deployment):
    wanted = _dead_letter(deployment, "critical", "k1")
    _dead_letter(deployment, "critical", "k2")

    result = cli("dlq", "replay", "critical", "--message-id", wanted, "--dry-run")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "Dry run: 1 letter(s) would be replayed to the critical queue; nothing was moved "
        "(every --message-id was found)."
    )
    assert _keys(deployment, "critical") == []
    assert len(_in_dlq(deployment, "critical")) == 2


def test_a_message_id_not_in_the_dlq_is_an_error_and_nothing_else_moves(cli, deployment):
    wanted = _dead_letter(deployment, "critical", "k1")
    other = _dead_letter(deployment, "critical", "k2")

    result = cli("dlq", "replay", "critical", "--message-id", wanted, "--message-id", "no-such-letter")

    assert result.exit_code == 1
    assert _one_error_line(result) == "error: not found in the critical DLQ: no-such-letter (nothing else in the DLQ)"
    assert _keys(deployment, "critical") == ["k1"]  # the one found was replayed, and only it
    assert _in_dlq(deployment, "critical") == [other]


def test_the_json_answer_says_what_became_of_each_message_id(cli, deployment):
    wanted = _dead_letter(deployment, "critical", "k1")

    result = cli("dlq", "replay", "critical", "--message-id", wanted, "--message-id", "gone", "--json")

    assert result.exit_code == 1
    assert json.loads(result.stdout)["outcomes"] == {wanted: "moved", "gone": "not_found"}


def test_discard_by_a_message_id_not_in_the_dlq_is_an_error_too(cli, deployment, tmp_path):
    kept = _dead_letter(deployment, "critical", "k1")

    result = cli("dlq", "discard", "critical", "--message-id", "gone", "--archive", str(tmp_path / "a.jsonl"))

    assert result.exit_code == 1
    assert _one_error_line(result) == "error: not found in the critical DLQ: gone (nothing else in the DLQ)"
    assert _in_dlq(deployment, "critical") == [kept]


def test_inspect_ids_lists_every_letter_by_group_whole_at_80_columns(cli, deployment, monkeypatch):
    timeouts = [_dead_letter(deployment, "critical", f"t{i}") for i in range(4)]  # more than the 3 samples
    missing = _dead_letter(
        deployment, "critical", "m1", error_type="AccountNotFound", error_message="account 'acc-1' not found"
    )
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None, highlight=False)
    progress = Console(file=io.StringIO(), width=80, force_terminal=True)  # stderr: the progress bar
    for module in (cli_dlq, cli_groups):
        monkeypatch.setattr(module, "terminal", lambda stderr=False: progress if stderr else console)

    result = cli("dlq", "inspect", "critical", "--ids")

    assert result.exit_code == 0, result.output
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    listed = [line for line in lines if MESSAGE_ID.fullmatch(line.strip())]
    assert sorted(line.strip() for line in listed) == sorted([*timeouts, missing])  # every id, each whole on a line
    heading = lines.index("4 x payments.update_balance · TimeoutError")
    assert sorted(line.strip() for line in lines[heading + 1 : heading + 5]) == sorted(timeouts)
    assert lines[lines.index("1 x payments.update_balance · AccountNotFound") + 1].strip() == missing


def test_inspect_without_ids_lists_none(cli, deployment):
    letter = _dead_letter(deployment, "critical", "k1")

    result = cli("dlq", "inspect", "critical")

    assert result.exit_code == 0, result.output
    assert letter not in result.stdout


@pytest.mark.parametrize("outcome", ["not_matched", "refused_outside_window"])
def test_a_named_letter_left_in_the_dlq_is_named_in_the_error(monkeypatch, outcome):
    answer = {"outcomes": {"a": "moved", "b": outcome}, "stopped_because": "all_found"}

    with pytest.raises(cli_dlq.CliError, match="left in the critical DLQ by the other filters or their age: b$"):
        cli_dlq._refuse_not_found(answer, "critical")
