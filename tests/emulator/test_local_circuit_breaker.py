"""The circuit breaker on local mode, against the same downstream outage on two tiers at once.

Both tiers get 4 attempts, 15 s apart; only ``transactional`` has the breaker. ``demo.flaky`` with
``down_while_file`` plays a downstream that is down while a file exists: the test takes it down
before the publish and brings it back at the events the story is about, never after a number of
seconds (a fixed 45 s outage raced the machine's load: ``bulk``'s attempts could run past its end).
Without the breaker (``bulk``) every job spends its 4 attempts inside the outage and is
dead-lettered; the outage lasts until the test has seen every letter. With it, the first failed
attempts open the breaker (its alarm's Lambda action, the replay function, disables the mapping),
the jobs wait in the queue with their attempts; the test brings the tier's downstream back once it
has seen the breaker open (the mapping disabled, every poller held back), the window's OK starts
the probe at concurrency 2, the probe's successes close it, and every job runs once: 0 letters.
The on-call inbox (an SQS queue on the alarm topic) hears of the breaker's tier exactly twice: when
it opens (the alarm's ALARM) and when it closes (the replay function's page).

The one timing the story keeps is the breaker's own promise: it opens before a job spends its last
attempt. The attempts are 15 s apart, so the breaker has 45 s from the first failures to open (it
takes about two on an idle machine: the alarm's next half-second round and the replay function's
invoke).

``transactional`` also deploys by canary (``deployment``): on AWS its mapping invokes an alias that
CodeDeploy shifts; local mode shifts no traffic and its mapping invokes the function itself (docs/local.md,
gap 18), which the breaker disables and enables as any tier's.

Slow by nature: the breaker's window is one CloudWatch minute, and half-open needs a window without
datapoints (about 75 s in all). The figures are printed (``-s``) for the closing note.
"""

from __future__ import annotations

import json
import time

import pytest

from emulator.session import LocalSession
from tests.emulator.local_support import depth, wait_until
from tiered_jobs.contract.names import Alarms, Metrics
from tiered_jobs.publisher import Publisher
from tiered_jobs.replay.breaker import TAG_CIRCUIT
from tiered_jobs.replay.pause import TAG_PAUSED_BY

pytestmark = pytest.mark.e2e

JOBS = 30
#: 15 s between attempts: the breaker opens within 45 s of the first failures or a job is dead-lettered.
RETRIES = {"max_attempts": 4, "retry_schedule_seconds": [15], "retry_jitter": 0}
#: The tier's own timeout, not the local profile's 5 s: on a loaded machine a worker's cold start passed
#: 5 s, and a batch that times out emits no metric, so the breaker's alarm never saw the failures it is
#: there to count (the attempts were spent by SQS's receive count all the same).
TIMEOUT = {"timeout_seconds": 30}
#: A bound for each wait, far above an honest run on a loaded machine (the whole test takes about 90 s).
PATIENCE_SECONDS = 600
BREAKER = {"circuit_breaker_percent": 50, "circuit_breaker_min_jobs": 10, "circuit_breaker_minutes": 1}
CANARY = {"deployment": "canary_10_percent_5_minutes"}


@pytest.fixture(scope="module")
def session():
    tiers = {
        "critical": {},
        "transactional": {**RETRIES, **TIMEOUT, **BREAKER, **CANARY},
        "bulk": {**RETRIES, **TIMEOUT},
    }
    local = LocalSession(alarm_interval_seconds=0.5, settings={"tiers": tiers}).start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def inbox(session):
    """An SQS queue subscribed to the alarm topic: what the on-call receives, alarms' pages and the breaker's."""
    sqs = session.clients("sqs")
    url = sqs.create_queue(QueueName="breaker-inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    session.clients("sns").subscribe(
        TopicArn=session.deployment.alarm_topic_arn,
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    return url


def _pages(session, inbox: str) -> list[dict]:
    sqs, pages = session.clients("sqs"), []
    while messages := sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            sqs.delete_message(QueueUrl=inbox, ReceiptHandle=message["ReceiptHandle"])
            pages.append(json.loads(message["Body"]))
    return pages


def _sum(session, tier: str, metric: str) -> float:
    dims = {Metrics.DIM_SERVICE: Metrics.SERVICE, Metrics.DIM_STAGE: session.deployment.stage, Metrics.DIM_TIER: tier}
    return sum(session.metrics.values(Metrics.NAMESPACE, metric, dims, 3600))


def _settled(session, tier) -> bool:
    attributes = session.clients("sqs").get_queue_attributes(
        QueueUrl=tier.queue_url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return all(int(v) == 0 for v in attributes.values())


def _state(session) -> dict:
    """What the waits read, for a failure's message: each tier's queue, letters, outcomes and receives."""
    state = {}
    for name in ("transactional", "bulk"):
        tier = session.deployment.tiers[name]
        stats = session.runtime.by_function(tier.consumer.name).stats.snapshot()
        state[name] = {
            "queue": depth(session, tier.queue_url),
            "letters": depth(session, tier.dlq_url),
            "succeeded": _sum(session, name, Metrics.SUCCEEDED),
            "failed": _sum(session, name, Metrics.FAILED),
            "records": stats["records"],
            "timeouts": stats["timeouts"],
        }
    state["breaker"] = _changes(session)
    return state


def _changes(session) -> list[str]:
    """The breaker alarm's changes of state so far, oldest first."""
    name = Alarms.name(session.deployment.stage, "transactional", Alarms.CIRCUIT_BREAKER)
    return [t.new_state for t in list(session.alarms.transitions) if t.alarm_name == name]


def test_an_outage_dead_letters_every_job_without_the_breaker_and_none_with_it(session, inbox, tmp_path):
    stage = session.deployment.stage
    on, off = session.deployment.tiers["transactional"], session.deployment.tiers["bulk"]
    pages: list[dict] = []
    publisher = Publisher.from_stage(stage, ssm=session.clients("ssm"), sqs=session.clients("sqs"))
    # One downstream per tier, both down from before the publish: each comes back at its own event.
    down = {tier: tmp_path / f"{tier}-downstream-down" for tier in ("transactional", "bulk")}
    for marker in down.values():
        marker.touch()
    started = time.time()
    for n in range(JOBS):
        for tier in ("transactional", "bulk"):
            payload = {"fail_times": 0, "down_while_file": str(down[tier])}
            publisher.publish("demo.flaky", payload, f"outage-{tier}-{n}", tier=tier)

    # The breaker's tier: its downstream comes back once the breaker is open, so its probe, a window later,
    # meets a downstream that is up whatever the machine's load. Open means the mapping disabled and every
    # poller held back, not the alarm's ALARM alone: until the replay function has disabled it the tier
    # still receives, and a downstream back by then would drain the queue, leaving no job to probe with.
    lambda_client, uuid = session.clients("lambda"), _uuid(session, "transactional")
    arn = lambda_client.get_event_source_mapping(UUID=uuid)["EventSourceMappingArn"]
    held = session.runtime.by_function(on.consumer.name)

    def circuit() -> str:
        return lambda_client.list_tags(Resource=arn)["Tags"].get(TAG_CIRCUIT, "closed")

    wait_until(
        lambda: circuit() == "open" and held.holding() == frozenset(range(held.pollers)),
        PATIENCE_SECONDS,
        "the breaker open: its tag, every poller held back",
        seen=lambda: {**_state(session), "circuit": circuit(), "holding": sorted(held.holding())},
    )
    down["transactional"].unlink()
    recovered = time.time()
    # Without the breaker: the outage lasts until every job has spent its attempts and been dead-lettered.
    wait_until(
        lambda: depth(session, off.dlq_url) == JOBS and _settled(session, off),
        PATIENCE_SECONDS,
        "bulk's letters",
        seen=lambda: _state(session),
    )
    down["bulk"].unlink()
    off_drained = time.time()
    # Settled, and each job's outcome counted (its metric follows the delete by a moment): a success, or a
    # letter, which ends the wait at once to fail below.
    wait_until(
        lambda: (
            _settled(session, on)
            and _sum(session, "transactional", Metrics.SUCCEEDED) + depth(session, on.dlq_url) >= JOBS
        ),
        PATIENCE_SECONDS,
        "the breaker's tier drains",
        seen=lambda: _state(session),
    )
    on_drained = time.time()

    assert depth(session, on.dlq_url) == 0, _state(session)  # 0 letters with the breaker
    assert _sum(session, "transactional", Metrics.SUCCEEDED) == JOBS, _state(session)  # every job ran once
    assert _sum(session, "bulk", Metrics.SUCCEEDED) == 0 and _sum(session, "bulk", Metrics.FAILED) == JOBS
    spent_on = session.runtime.by_function(on.consumer.name).stats.snapshot()["records"]
    stats_off = session.runtime.by_function(off.consumer.name).stats.snapshot()
    spent_off = stats_off["records"]
    # Every job spent its attempts. On a loaded machine an invocation may run short of time: the records it
    # had not started are sent again unstarted (deferred by the time budget, counted), one receive more each
    # and no attempt; or a batch may run past local mode's timeout and be received again (as on Lambda):
    # more receives, each such one explained by a timed-out batch.
    deferred = _sum(session, "bulk", Metrics.DEFERRED)
    expected = JOBS * RETRIES["max_attempts"] + deferred
    assert spent_off == expected or (spent_off > expected and stats_off["timeouts"] > 0), {
        **stats_off,
        "deferred": deferred,
    }
    assert spent_on < spent_off  # held jobs spent no attempt while the breaker was open

    # Opened by its alarm's ALARM, half-open at its OK; closed by the probe alarm.
    changes = _changes(session)
    assert changes[:2] == ["ALARM", "OK"], changes
    # The probe's jobs drain at concurrency 2, possibly before the probe alarm's minute closes the breaker.
    wait_until(
        lambda: TAG_CIRCUIT not in lambda_client.list_tags(Resource=arn)["Tags"],
        PATIENCE_SECONDS,
        "the breaker closes",
        seen=lambda: lambda_client.list_tags(Resource=arn)["Tags"],
    )
    mapping = lambda_client.get_event_source_mapping(UUID=uuid)
    assert mapping["State"] == "Enabled" and TAG_PAUSED_BY not in lambda_client.list_tags(Resource=arn)["Tags"]
    # The tier's own concurrency is back (local mode's profile may have lowered the template's).
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": on.mapping.maximum_concurrency}

    # Exactly two pages about the breaker's tier: it opened (the alarm's), it closed (the replay function's).
    # Its OK at half-open and the probe alarm page nothing, and no other alarm of the tier fired.
    wait_until(
        lambda: len(_read_pages(session, inbox, pages)) >= 2,
        PATIENCE_SECONDS,
        "the closing page",
        seen=lambda: pages,
    )
    about = _read_pages(session, inbox, pages)
    assert [p.get("AlarmName") or p.get("Event") for p in about] == [
        Alarms.name(stage, "transactional", Alarms.CIRCUIT_BREAKER),
        "closed",
    ], about
    opened, closed = about
    assert opened["NewStateValue"] == "ALARM"
    assert closed["FirstCommand"] == f"tiered-jobs --stage {stage} status"
    spacing = RETRIES["retry_schedule_seconds"][0]
    print(
        f"\n{JOBS} jobs per tier, {RETRIES['max_attempts']} attempts {spacing} s apart, the outage from the publish:"
        f"\n  breaker off: {depth(session, off.dlq_url)} letters, {spent_off} attempts, "
        f"settled {off_drained - started:.0f} s after the publish"
        f"\n  breaker on:  {depth(session, on.dlq_url)} letters, {spent_on} attempts, opened "
        f"{recovered - started:.0f} s after the publish (its downstream back then), "
        f"drained {on_drained - recovered:.0f} s later; breaker changes {changes}"
    )


def _uuid(session, tier: str) -> str:
    from tiered_jobs.operations import pausing

    return pausing.read_pauses(session.deployment.stage, [tier], session.clients)[tier].uuid


def _read_pages(session, inbox: str, pages: list[dict]) -> list[dict]:
    """Reads the inbox into ``pages``; the pages about the breaker's tier so far, oldest first."""
    pages.extend(_pages(session, inbox))
    return [p for p in pages if p.get("Tier") == "transactional" or "-transactional-" in p.get("AlarmName", "")]


def test_the_canary_tier_deploys_without_traffic_shifting_and_its_mapping_invokes_the_function(session):
    tier = session.deployment.tiers["transactional"]
    left_out = session.deployment.gaps["left out: no traffic shifting locally"]
    assert len(left_out) == 3 and all(lid.startswith("Tiertransactional") for lid in left_out), left_out
    lambda_client = session.clients("lambda")
    (mapping,) = lambda_client.list_event_source_mappings(FunctionName=tier.consumer.name)["EventSourceMappings"]
    assert mapping["FunctionArn"] == tier.consumer.arn  # the function itself, no alias qualifier
    versions = lambda_client.list_versions_by_function(FunctionName=tier.consumer.name)["Versions"]
    assert len(versions) >= 2  # $LATEST and the published version the alias names on AWS
