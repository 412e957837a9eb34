"""`tiered-jobs dlq`: the idempotency window, discard with its archive, show, and tables that fit."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone

import boto3
import pytest
from rich.console import Console

from tests.cli.test_cli import _dead_letter, _iso, _one_error_line
from tests.support.stack import received_bodies
from tiered_jobs.cli import groups as cli_groups
from tiered_jobs.contract.names import Ssm
from tiered_jobs.stage import discovery

OLD = _iso(datetime.now(timezone.utc) - timedelta(days=30))  # published before the 18-day window


def _dlq_ids(deployment, tier: str) -> list[str]:
    sqs = boto3.client("sqs")
    messages = sqs.receive_message(QueueUrl=deployment.dlq_urls[tier], MaxNumberOfMessages=10, VisibilityTimeout=0).get(
        "Messages", []
    )
    return sorted(m["MessageId"] for m in messages)


# -- the idempotency window -------------------------------------------------------------------


def test_replay_leaves_letters_outside_the_window_unless_told(cli, deployment):
    _dead_letter(deployment, "critical", "fresh")
    _dead_letter(deployment, "critical", "old", published_at=OLD)

    result = cli("dlq", "replay", "critical")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Replayed 1 of 1 matching letter(s) to the critical queue, 0 failed; 1 left")
    assert (
        "1 letter(s) older than the tier's idempotency window (18d) were left in the DLQ: replaying them could "
        "run jobs that had completed again."
    ) in result.stdout
    assert [b["idempotency_key"] for b in received_bodies(deployment.queue_urls["critical"])] == ["fresh"]

    result = cli("dlq", "replay", "critical", "--allow-outside-window", "--json")

    answer = json.loads(result.stdout)
    assert (answer["moved"], answer["outside_window"], answer["refused_outside_window"]) == (1, 1, 0)
    assert [b["idempotency_key"] for b in received_bodies(deployment.queue_urls["critical"])] == ["old"]


def test_a_stage_without_the_window_parameter_replays_nothing_by_default(cli, deployment):
    boto3.client("ssm").delete_parameter(Name=Ssm.tier("test", "critical", Ssm.TIER_IDEMPOTENCY_TTL))
    _dead_letter(deployment, "critical", "fresh")

    result = cli("dlq", "replay", "critical")

    assert result.exit_code == 0, result.output
    assert "idempotency window (unknown: the stage was deployed before replay could read it)" in result.stdout
    assert received_bodies(deployment.queue_urls["critical"]) == []


def test_a_window_that_cannot_be_read_counts_as_unknown(cli, deployment, monkeypatch):
    from botocore.exceptions import ClientError

    def denied(*args, **kwargs):
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetParameters")

    monkeypatch.setattr(discovery, "idempotency_ttls", denied)
    _dead_letter(deployment, "critical", "fresh")

    result = cli("dlq", "replay", "critical")

    assert result.exit_code == 0, result.output
    assert (
        "note: the tiers' idempotency windows unavailable (AccessDeniedException: no (GetParameters))" in result.stderr
    )
    assert received_bodies(deployment.queue_urls["critical"]) == []


# -- discard ----------------------------------------------------------------------------------


def test_discard_by_message_id_archives_then_deletes(cli, deployment, tmp_path):
    ids = [
        _dead_letter(deployment, "critical", f"k{i}", error_message=f"account 'acc-{i}' not found") for i in range(3)
    ]
    archive = tmp_path / "dropped.jsonl"

    result = cli(
        "dlq", "discard", "critical", "--message-id", ids[0], "--message-id", ids[2], "--archive", str(archive)
    )

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        f"Discarded 2 of 2 matching letter(s) from the critical DLQ, archived to {archive}; 0 failed; 1 left"
    )
    records = [json.loads(line) for line in archive.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["message_id"] for r in records) == sorted([ids[0], ids[2]])
    assert {r["error_message"] for r in records} == {"account 'acc-0' not found", "account 'acc-2' not found"}
    assert all(json.loads(r["body"])["type"] == "payments.update_balance" for r in records)
    assert _dlq_ids(deployment, "critical") == [ids[1]]


def test_discard_defaults_to_an_archive_named_after_stage_and_tier(cli, deployment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _dead_letter(deployment, "bulk", "e1", job_type="analytics.record_event")

    result = cli("dlq", "discard", "bulk", "--job-type", "analytics.*")

    assert result.exit_code == 0, result.output
    [line] = (tmp_path / "tiered-jobs-discarded-test-bulk.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["job_type"] == "analytics.record_event"


def test_a_discard_dry_run_changes_nothing(cli, deployment, tmp_path):
    _dead_letter(deployment, "critical", "k1")

    result = cli("dlq", "discard", "critical", "--dry-run", "--archive", str(tmp_path / "a.jsonl"))

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Dry run: 1 letter(s) would be discarded from the critical DLQ; nothing was")
    assert not (tmp_path / "a.jsonl").exists()
    assert len(_dlq_ids(deployment, "critical")) == 1


def test_a_discard_whose_archive_cannot_be_written_deletes_nothing(cli, deployment, tmp_path):
    ids = [_dead_letter(deployment, "critical", f"k{i}") for i in range(2)]

    result = cli("dlq", "discard", "critical", "--archive", str(tmp_path / "no-such-dir" / "a.jsonl"))

    assert result.exit_code == 1
    assert _one_error_line(result).startswith(
        f"error: could not write the archive {tmp_path}/no-such-dir/a.jsonl (FileNotFoundError"
    )
    assert _dlq_ids(deployment, "critical") == sorted(ids)


# -- show and inspect ---------------------------------------------------------------------------


def test_show_prints_the_letter_with_its_real_error_message(cli, deployment):
    wanted = _dead_letter(
        deployment,
        "critical",
        "pay-7",
        error_type="PayloadValidationError",
        error_message="payload field 'amount' must be positive",
    )

    result = cli("dlq", "show", "critical", "--message-id", wanted)

    assert result.exit_code == 0, result.output
    assert f"Message id: {wanted}" in result.stdout
    assert "Error message: payload field 'amount' must be positive" in result.stdout
    assert "DeadLetter.Attempts (String): 5" in result.stdout
    assert '"idempotency_key": "pay-7"' in result.stdout
    assert len(_dlq_ids(deployment, "critical")) == 1


def test_show_of_a_letter_that_is_not_there_says_so(cli, deployment):
    result = cli("dlq", "show", "critical", "--message-id", "nope")

    assert result.exit_code == 1
    assert _one_error_line(result) == "error: not found in the critical DLQ: nope (nothing else in the DLQ)"


def test_inspect_masks_the_values_and_names_the_field_in_the_table_and_in_json(cli, deployment):
    _dead_letter(deployment, "critical", "k1", error_message="payload field 'amount' must be >= 1, got -5")
    _dead_letter(deployment, "critical", "k2", error_message="payload field 'amount' must be >= 1, got -7")
    _dead_letter(deployment, "critical", "k3", error_message="payload field 'items.3.qty' must be >= 1, got 0")

    table = cli("dlq", "inspect", "critical")
    as_json = json.loads(cli("dlq", "inspect", "critical", "--json").stdout)

    pattern = "payload field 'amount' must be >= <n>, got <n>"
    assert pattern in table.stdout and "-5" not in table.stdout
    assert [(g["error_message"], g["count"]) for g in as_json["groups"]] == [
        (pattern, 2),
        ("payload field 'items.<n>.qty' must be >= <n>, got <n>", 1),
    ]


# -- tables that fit ----------------------------------------------------------------------------

GROUPS = [
    {
        "count": 12,
        "job_type": "notifications.send_email",
        "error_type": "IdempotencyConflictError",
        "reason": "permanent",
        "outside_window": 0,
        "oldest": "2026-11-29T08:00:00.000Z",
        "newest": "2026-11-29T08:13:00.000Z",
        "sample_message_ids": [],
        "error_message": "idempotency key '<value>' was already used for '<value>' with a different payload",
    },
    {
        "count": 3,
        "job_type": "demo.flaky",
        "error_type": "TimeoutError",
        "reason": "retries_exhausted",
        "outside_window": 0,
        "oldest": "2026-11-29T09:00:00.000Z",
        "newest": "2026-11-29T09:30:00.000Z",
        "sample_message_ids": [],
        "error_message": "bank API timed out after <n> s",
    },
]


def _render(monkeypatch, groups, **console: object) -> list[str]:
    out = io.StringIO()
    monkeypatch.setattr(cli_groups, "terminal", lambda stderr=False: Console(file=out, highlight=False, **console))
    cli_groups.print_groups(groups)
    return out.getvalue().splitlines()


def _words_whole(lines: list[str], words: list[str]) -> list[str]:
    """The words that appear on no single line (i.e. were broken or cut)."""
    return [word for word in words if not any(word in line for line in lines)]


SHORT = [
    {
        **GROUPS[1],
        "count": 7,
        "job_type": "payments.update_balance",
        "error_type": "TimeoutError",
        "error_message": "bank API timed out after <n> s while the partner was being upgraded",
    },
    GROUPS[1],
]


def test_at_80_columns_a_table_drops_columns_and_never_breaks_an_identifier(monkeypatch):
    lines = _render(monkeypatch, SHORT, width=80, force_terminal=True, color_system=None)

    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if "Job type" in line)
    assert all(title in header for title in ("Count", "Job type", "Error type", "Error message"))
    assert "First failed" not in header and "Reason" not in header  # the less important columns made room
    assert _words_whole(lines, [w for g in SHORT for w in (g["job_type"], g["error_type"])]) == []
    assert _words_whole(lines, [w for g in SHORT for w in g["error_message"].split()]) == []  # wrapped at spaces


@pytest.mark.parametrize("width", [80, 60])
def test_identifiers_too_long_for_any_table_get_one_block_per_group(monkeypatch, width):
    lines = _render(monkeypatch, GROUPS, width=width, force_terminal=True, color_system=None)

    assert max(len(line) for line in lines) <= width
    assert _words_whole(lines, [w for g in GROUPS for w in (g["job_type"], g["error_type"])]) == []
    assert _words_whole(lines, [w for g in GROUPS for w in g["error_message"].split()]) == []
    assert lines[0] == "12 x notifications.send_email"
    assert lines[1].strip().startswith("IdempotencyConflictError · permanent · dead-lettered")


def test_piped_output_is_printed_at_full_width(monkeypatch):
    lines = _render(monkeypatch, GROUPS, width=80, force_terminal=False)

    rows = [line for line in lines if line.startswith("│")]
    assert len(rows) == len(GROUPS)  # one line per group: nothing wrapped, nothing dropped
    assert GROUPS[0]["error_message"] in rows[0]
    assert "2026-11-29 08:00" in rows[0] and "First failed" in lines[1]
    assert max(len(line) for line in lines) > 80


@pytest.mark.parametrize("width", [100, 120, 160])
def test_wider_terminals_keep_more_columns_and_always_fit(monkeypatch, width):
    lines = _render(monkeypatch, GROUPS, width=width, force_terminal=True, color_system=None)

    header = next(line for line in lines if "Job type" in line)
    assert all(title in header for title in ("Count", "Job type", "Error type", "Error message"))
    assert max(len(line) for line in lines) <= width
    assert _words_whole(lines, [w for g in GROUPS for w in (g["job_type"], g["error_type"])]) == []
