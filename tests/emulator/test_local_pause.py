"""Pause and resume a tier on local mode: a paused tier's jobs wait in its queue, unreceived; after the
resume each is received and run once. Paused by ``tiered-jobs pause`` and resumed by the replay
function's ``resume`` action, so both faces are driven end to end."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from emulator.deploy import LOCAL_STAGE
from emulator.session import LocalSession
from tests.emulator.local_support import TEST_TIER_SETTINGS, balance, depth, wait_until
from tiered_jobs.cli import app
from tiered_jobs.operations import pausing
from tiered_jobs.publisher import Publisher
from tiered_jobs.replay.pause import TAG_PAUSED_AT, TAG_PAUSED_BY

pytestmark = pytest.mark.e2e

ACCOUNT = "acc_paused"
JOBS = 12
#: A bound for each wait, far above an honest run on a loaded machine.
PATIENCE_SECONDS = 300


@pytest.fixture(scope="module")
def session():
    local = LocalSession(tier_settings=TEST_TIER_SETTINGS).start()
    yield local
    local.stop()


def _cli(session, *args: str) -> str:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["--stage", LOCAL_STAGE, "--endpoint-url", session.endpoint.url, *args]
    )
    assert result.exit_code == 0, result.output
    return result.output


def _invoke_replay(session, event: dict) -> dict:
    answer = session.clients("lambda").invoke(FunctionName=session.deployment.replay.name, Payload=json.dumps(event))
    body = json.loads(answer["Payload"].read())
    assert "FunctionError" not in answer, body
    return body


def test_jobs_published_while_paused_wait_unreceived_and_after_resume_each_runs_once(session):
    tier = session.deployment.tiers["critical"]
    mapping = session.runtime.by_function(tier.consumer.name)
    publisher = Publisher.from_stage(LOCAL_STAGE, ssm=session.clients("ssm"), sqs=session.clients("sqs"))

    said = _cli(session, "pause", "critical")
    assert "Paused tier critical" in said
    # A long poll already waiting when the pause lands still returns (Lambda's "Disabling"): publish once
    # every poller has read the paused state and held back (its "Disabled"), not after a number of seconds.
    wait_until(
        lambda: mapping.holding() == frozenset(range(mapping.pollers)),
        PATIENCE_SECONDS,
        "every poller of the paused tier held back",
        seen=lambda: {"holding": sorted(mapping.holding()), "pollers": mapping.pollers},
    )
    received_before = mapping.stats.snapshot()["records"]
    for n in range(JOBS):
        publisher.publish("payments.update_balance", {"account_id": ACCOUNT, "amount": 1}, f"paused-{n}")
    # Each poller looks at the mapping's state again, three times, with the jobs waiting: a running
    # mapping would have received them then. A held poller leaves its hold only by reading "enabled".
    looked = mapping.stats.snapshot()["held"]
    wait_until(
        lambda: mapping.stats.snapshot()["held"] >= looked + 3 * mapping.pollers,
        PATIENCE_SECONDS,
        "each poller reading the paused state again",
        seen=mapping.stats.snapshot,
    )

    assert mapping.stats.snapshot()["records"] == received_before  # not one receive spent
    assert depth(session, tier.queue_url) == JOBS and balance(session, ACCOUNT) == 0
    status = _cli(session, "status")
    assert "critical: paused since" in status and "via cli" in status and "retention" in status
    state = pausing.read_pauses(LOCAL_STAGE, ["critical"], session.clients)["critical"]
    assert state.paused and state.paused_by and state.paused_by.endswith(" via cli") and state.paused_at
    again = _cli(session, "pause", "critical")  # a second pause keeps the first record
    assert "already paused" in again and state.paused_at in again

    resumed = _invoke_replay(session, {"action": "resume", "tier": "critical"})
    assert resumed["outcome"] == "resumed" and not resumed["paused"]

    wait_until(
        lambda: balance(session, ACCOUNT) == JOBS and depth(session, tier.queue_url) == 0,
        PATIENCE_SECONDS,
        "the jobs run",
        seen=lambda: {"balance": balance(session, ACCOUNT), "queue": depth(session, tier.queue_url)},
    )
    # Every job was received after the resume (none spent while paused) and ran once: the balance is
    # exactly JOBS. A loaded machine may run a batch past the local timeout, and SQS then hands it out
    # again: more receives, never a second effect (idempotency answers the duplicate).
    assert mapping.stats.snapshot()["records"] - received_before >= JOBS
    assert balance(session, ACCOUNT) == JOBS
    assert depth(session, tier.dlq_url) == 0
    arn = session.clients("lambda").get_event_source_mapping(UUID=state.uuid)["EventSourceMappingArn"]
    tags = session.clients("lambda").list_tags(Resource=arn)["Tags"]
    assert TAG_PAUSED_BY not in tags and TAG_PAUSED_AT not in tags  # a resume leaves no record behind
    assert "paused since" not in _cli(session, "status")


def test_the_replay_function_pauses_a_tier_naming_who_asked_and_refuses_an_unknown_tier(session):
    paused = _invoke_replay(session, {"action": "pause", "tier": "bulk", "by": "ops@example.com"})
    try:
        assert paused["outcome"] == "paused" and paused["paused_by"] == "ops@example.com"
        state = pausing.read_pauses(LOCAL_STAGE, ["bulk"], session.clients)["bulk"]
        assert state.paused and state.paused_by == "ops@example.com"
    finally:
        _invoke_replay(session, {"action": "resume", "tier": "bulk"})
    answer = session.clients("lambda").invoke(
        FunctionName=session.deployment.replay.name, Payload=json.dumps({"action": "pause", "tier": "nope"})
    )
    assert answer.get("FunctionError")
    assert "'tier' must be one of" in answer["Payload"].read().decode()
