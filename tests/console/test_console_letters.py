"""The console's per-letter Retry and Discard over HTTP: a dry run first (nothing moves), then the
confirm it renders; read-only, CSRF and other sites refused before any AWS call."""

from __future__ import annotations

import json
import re

import boto3
import pytest
import requests

from tests.cli.test_cli import _dead_letter
from tests.console.test_console_app import _csrf, _depth, get
from tiered_jobs.replay import read_archive


def _post(url: str, data: dict, **kwargs) -> requests.Response:
    return requests.post(url, data=data, timeout=30, **kwargs)


def _confirm(check: requests.Response, action: str) -> dict[str, str]:
    """The fields of the confirm form the dry run rendered (what the operator's click posts)."""
    form = check.text.split(f'hx-post="/letters/{action}/run"', 1)[1].split("</form>", 1)[0]
    return dict(re.findall(r'name="([a-z_]+)" value="([^"]*)"', form))


def _outcome(response: requests.Response) -> str:
    return re.search(r'data-outcome="([a-z_]+)"', response.text).group(1)


def _dlq_keys(deployment, tier: str = "critical") -> list[str]:
    messages = boto3.client("sqs").receive_message(
        QueueUrl=deployment.dlq_urls[tier], MaxNumberOfMessages=10, VisibilityTimeout=0
    )
    return sorted(json.loads(m["Body"])["idempotency_key"] for m in messages.get("Messages", []))


def test_the_dlq_page_offers_retry_and_discard_for_every_letter_read(deployment, serve):
    ids = [_dead_letter(deployment, "critical", f"k{i}") for i in range(5)]  # one group, more than its 3 samples
    console = serve()

    page = get(console.url + "dlq?tier=critical").text

    for action in ("retry", "discard"):
        offered = re.findall(rf'data-letter="([^"]+)" data-action="{action}"', page)
        assert sorted(offered) == sorted(ids)
    assert "2 more letter(s) of this group" in page
    assert _depth(deployment.dlq_urls["critical"]) == 5  # reading the page removed nothing


def test_retry_one_letter_dry_run_then_confirm(deployment, serve):
    wanted = _dead_letter(deployment, "critical", "pay_1")
    _dead_letter(deployment, "critical", "pay_2")
    console = serve()
    form = {"csrf_token": _csrf(get(console.url + "dlq?tier=critical").text), "tier": "critical", "message_id": wanted}

    check = _post(console.url + "letters/retry/check", form)

    assert (check.status_code, _outcome(check)) == (200, "would_move")
    assert "payments.update_balance · TimeoutError" in check.text
    assert _depth(deployment.queue_urls["critical"]) == 0 and _depth(deployment.dlq_urls["critical"]) == 2
    confirm = _confirm(check, "retry")
    assert confirm == form

    done = _post(console.url + "letters/retry/run", confirm)

    assert _outcome(done) == "moved"
    [moved] = boto3.client("sqs").receive_message(QueueUrl=deployment.queue_urls["critical"])["Messages"]
    assert json.loads(moved["Body"])["idempotency_key"] == "pay_1"  # the same job: its key unchanged
    assert _dlq_keys(deployment) == ["pay_2"]
    assert "/letters/retry/run" not in done.text  # nothing left to confirm


def test_discard_one_letter_dry_run_then_confirm_archives_it_first(deployment, serve, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the console archives where the CLI's discard would: its working directory
    doomed = _dead_letter(deployment, "critical", "pay_1", error_message="account 'acc-1' not found")
    _dead_letter(deployment, "critical", "pay_2")
    console = serve()
    form = {"csrf_token": _csrf(get(console.url + "dlq?tier=critical").text), "tier": "critical", "message_id": doomed}
    archive = tmp_path / "tiered-jobs-discarded-test-critical.jsonl"

    check = _post(console.url + "letters/discard/check", form)

    assert _outcome(check) == "would_discard" and str(archive) in check.text
    assert not archive.exists() and _depth(deployment.dlq_urls["critical"]) == 2

    done = _post(console.url + "letters/discard/run", _confirm(check, "discard"))

    assert _outcome(done) == "discarded"
    [record] = read_archive(archive)
    assert (record["message_id"], record["error_message"]) == (doomed, "account 'acc-1' not found")
    assert _dlq_keys(deployment) == ["pay_2"]


def test_a_letter_no_longer_in_the_dlq_is_said_so_with_nothing_to_confirm(deployment, serve):
    _dead_letter(deployment, "critical", "pay_1")
    console = serve()
    csrf = _csrf(get(console.url + "dlq?tier=critical").text)

    check = _post(console.url + "letters/retry/check", {"csrf_token": csrf, "tier": "critical", "message_id": "gone"})

    assert _outcome(check) == "not_found"
    assert "/letters/retry/run" not in check.text
    assert _dlq_keys(deployment) == ["pay_1"]


def test_read_only_shows_no_letter_action_and_refuses_them(deployment, serve):
    letter = _dead_letter(deployment, "critical", "pay_1")
    console = serve(read_only=True)
    page = get(console.url + "dlq?tier=critical").text
    csrf = re.search(r'"x-csrf-token": "([^"]+)"', page).group(1)

    refused = [
        _post(console.url + f"letters/{action}/{step}", {"csrf_token": csrf, "tier": "critical", "message_id": letter})
        for action in ("retry", "discard")
        for step in ("check", "run")
    ]

    assert "/letters/" not in page and "data-letter" not in page
    assert {r.status_code for r in refused} == {403}
    assert _depth(deployment.dlq_urls["critical"]) == 1 and _depth(deployment.queue_urls["critical"]) == 0


@pytest.mark.parametrize(
    ("fields", "headers"),
    [
        ({}, {}),  # no CSRF token
        ({"csrf_token": "guess"}, {}),
        (None, {"Sec-Fetch-Site": "cross-site"}),  # the right token, but another site's request
        (None, {"Origin": "https://elsewhere.example"}),
    ],
)
def test_letter_actions_refuse_forged_requests(deployment, serve, fields, headers):
    letter = _dead_letter(deployment, "critical", "pay_1")
    console = serve()
    token = {"csrf_token": _csrf(get(console.url + "dlq?tier=critical").text)}

    refused = _post(
        console.url + "letters/retry/run",
        {**(token if fields is None else fields), "tier": "critical", "message_id": letter},
        headers=headers,
    )

    assert refused.status_code == 403
    assert _depth(deployment.dlq_urls["critical"]) == 1 and _depth(deployment.queue_urls["critical"]) == 0


def test_an_unknown_letter_action_is_not_found(deployment, serve):
    console = serve()
    csrf = _csrf(get(console.url + "replay").text)

    assert _post(console.url + "letters/delete/run", {"csrf_token": csrf, "tier": "critical"}).status_code == 404
