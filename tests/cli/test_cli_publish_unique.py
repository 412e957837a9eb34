"""``tiered-jobs publish --unique-for S`` and ``--debounce S``: the operator's publish, as a service's."""

from __future__ import annotations

import json
import re
from datetime import datetime

import boto3

from tiered_jobs.contract import unique


def test_a_second_publish_while_the_first_is_pending_is_already_queued(cli, deployment):
    first = cli("publish", "payments.capture", "--key", "cap-1", "--unique-for", "600")
    again = cli("publish", "payments.capture", "--key", "cap-1", "--unique-for", "600")

    assert first.exit_code == 0 and first.stdout.startswith("Published payments.capture (key 'cap-1')")
    assert again.exit_code == 0, again.output  # not an error: the job is queued
    assert again.stdout.startswith("Already queued: payments.capture (key 'cap-1') is pending, unique until ")
    assert again.stdout.rstrip().endswith(": nothing sent")
    lock = boto3.client("dynamodb").get_item(
        TableName=deployment.unique_table,
        Key={unique.KEY_ATTRIBUTE: {"S": unique.lock_key("payments.capture", "cap-1")}},
    )["Item"]
    # The lock's end, as the table holds it; the line shows it to the second (a minute's last half
    # second rounds up to the next minute, so it is compared as a time, not as text).
    shown = re.search(r"unique until (\S+Z): nothing sent", again.stdout)
    assert shown is not None, again.stdout
    held = datetime.fromisoformat(lock[unique.UNTIL_ATTRIBUTE]["S"].replace("Z", "+00:00"))
    assert abs((datetime.fromisoformat(shown.group(1).replace("Z", "+00:00")) - held).total_seconds()) <= 1


def test_a_bad_window_is_an_error_and_nothing_is_sent(cli, deployment):
    result = cli("publish", "payments.capture", "--key", "cap-2", "--unique-for", "0")
    assert result.exit_code == 2 and "unique_for must be 1-2592000 seconds, got 0" in result.output
    both = cli("publish", "payments.capture", "--key", "cap-2", "--unique-for", "60", "--debounce", "60")
    assert both.exit_code == 2 and "not both" in both.output
    assert "Item" not in boto3.client("dynamodb").get_item(
        TableName=deployment.unique_table,
        Key={unique.KEY_ATTRIBUTE: {"S": unique.lock_key("payments.capture", "cap-2")}},
    )


def test_a_debounced_publish_says_when_its_one_run_is(cli, scheduling):
    payload = json.dumps({"event": "profile_edited"})
    first = cli("publish", "analytics.record_event", "-k", "p-7", "-p", payload, "--debounce", "60")
    again = cli("publish", "analytics.record_event", "-k", "p-7", "-p", payload, "--debounce", "60")

    assert first.exit_code == 0 and again.exit_code == 0, again.output
    assert first.stdout.startswith("Debounced: analytics.record_event (key 'p-7') runs on tier bulk at ")
    assert "(a new run; one-time schedule once-" in first.stdout
    assert "(moved the pending run; one-time schedule once-" in again.stdout
