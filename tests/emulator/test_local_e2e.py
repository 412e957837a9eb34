"""End to end on moto's server: the real stack deployed, consumed, retried, dead-lettered, alarmed, replayed.

One session serves the module (deploying takes ~15 s); the last test stops it and checks that no
thread, worker process or port is left behind.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path

import pytest

from emulator.server import ACCOUNT_ID
from emulator.session import LocalSession
from emulator.view import job_total
from functions.jobs.payments import TABLE as PAYMENTS_TABLE
from tests.emulator.local_support import TEST_TIER_SETTINGS, balance, child_pids, depth, port_is_free, wait_until
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.names import Alarms, DeadLetter, Env, Handlers, Metrics, Schedules
from tiered_jobs.publisher import InvalidJobError, Publisher

pytestmark = pytest.mark.e2e

#: A bound for each wait, far above an honest run on a loaded machine.
PATIENCE_SECONDS = 300


@pytest.fixture(scope="module")
def baseline():
    return {"threads": set(threading.enumerate()), "children": child_pids()}


@pytest.fixture(scope="module")
def session(baseline):
    local = LocalSession(alarm_interval_seconds=0.5, tier_settings=TEST_TIER_SETTINGS).start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def publisher(session):
    return Publisher.from_stage(session.deployment.stage, ssm=session.clients("ssm"), sqs=session.clients("sqs"))


@pytest.fixture(scope="module")
def inbox(session):
    """An SQS queue subscribed to the alarm topic: what on-call would receive."""
    sqs = session.clients("sqs")
    url = sqs.create_queue(QueueName="e2e-inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    session.clients("sns").subscribe(
        TopicArn=session.deployment.alarm_topic_arn,
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    return url


def test_deployment_is_read_back_from_the_deployed_resources(session):
    deployment = session.deployment
    assert set(deployment.tiers) == {"critical", "transactional", "bulk"}
    critical = deployment.tiers["critical"]
    assert critical.consumer.handler == Handlers.CONSUMER
    assert critical.consumer.environment[Env.RETRY_SCHEDULE] == "1,2,3"  # the local profile
    assert critical.consumer.environment[Env.QUEUE_URL] == critical.queue_url
    assert (critical.mapping.batch_size, critical.mapping.maximum_concurrency) == (5, 2)  # preset, local profile
    assert deployment.tiers["bulk"].mapping.batching_window_seconds == 5
    assert Path(critical.consumer.code_root, "tiered_jobs", "handlers", "consumer.py").is_file()
    assert Path(critical.consumer.code_root, "functions", "jobs", "__init__.py").is_file()
    assert not Path(critical.consumer.code_root, "infra").exists()  # only the Lambda asset
    assert not Path(critical.consumer.code_root, "emulator").exists()
    assert not Path(critical.consumer.code_root, "tiered_jobs", "cli").exists()
    assert deployment.replay.handler == Handlers.REPLAY

    clients = session.clients
    mappings = clients("lambda").list_event_source_mappings()["EventSourceMappings"]
    assert {m["State"] for m in mappings} == {"Enabled"}  # as the template says (emulator.mapping_state)
    from moto.sqs.models import sqs_backends

    queues = sqs_backends[ACCOUNT_ID][session.endpoint.region].queues.values()
    assert [q.name for q in queues if q.lambda_event_source_mappings] == []  # moto's SQS would run Docker
    alarms = clients("cloudwatch").describe_alarms(AlarmNamePrefix=Alarms.prefix("local"), MaxRecords=100)
    names = {alarm["AlarmName"] for alarm in alarms["MetricAlarms"]}
    assert names == {Alarms.name("local", tier, kind) for tier in deployment.tiers for kind in Alarms.KINDS} | {
        Schedules.dlq_alarm_name("local")
    }
    ttl = clients("dynamodb").describe_time_to_live(TableName=deployment.idempotency_table)
    assert ttl["TimeToLiveDescription"]["TimeToLiveStatus"] == "ENABLED"
    policy = clients("sqs").get_queue_attributes(QueueUrl=critical.queue_url, AttributeNames=["Policy"])
    assert "aws:SecureTransport" in policy["Attributes"]["Policy"]
    assert clients("cloudwatch").list_dashboards()["DashboardEntries"]


def test_publish_consume_with_duplicates_applies_once(session, publisher):
    tier = session.deployment.tiers["critical"]
    mapping = session.runtime.by_function(tier.consumer.name)
    deleted_before = mapping.stats.snapshot()["deleted"]
    account = f"acc-{uuid.uuid4().hex[:8]}"
    jobs = [
        {
            "job_type": "payments.update_balance",
            "idempotency_key": f"{account}-{i}",
            "payload": {"account_id": account, "amount": 10 * (i + 1)},
        }
        for i in range(3)
    ]
    publisher.publish_batch(jobs + jobs)  # every payment twice
    # Not a sleep for the duplicates to land: wait until all six messages were run and deleted, then
    # the balance shows whether any duplicate took effect.
    wait_until(
        lambda: depth(session, tier.queue_url) == 0 and mapping.stats.snapshot()["deleted"] - deleted_before >= 6,
        PATIENCE_SECONDS,
        "the six messages run and deleted",
        seen=lambda: {
            "balance": balance(session, account),
            "queue": depth(session, tier.queue_url),
            **mapping.stats.snapshot(),
        },
    )
    assert balance(session, account) == 60


def test_a_batch_across_tiers_fires_each_callback_once_and_a_chain_runs_its_links_in_order(session):
    """On the deployed stack: its batches table, the consumers' grants, a callback sent to another tier."""
    from tiered_jobs.operations.batches import read_from

    publisher = Publisher.from_stage(
        session.deployment.stage,
        ssm=session.clients("ssm"),
        sqs=session.clients("sqs"),
        dynamodb=session.clients("dynamodb"),  # the batches table's client: local mode's, as every other
    )
    account = f"acc-{uuid.uuid4().hex[:8]}"
    report = ("notifications.send_email", {"to": "ops@example.com", "subject": f"{account}: done"})
    bonus = ("payments.update_balance", {"account_id": account, "amount": 1000})
    with publisher.batch(on_complete=report, on_success=bonus) as batch:
        batch.publish("payments.update_balance", {"account_id": account, "amount": 5}, f"{account}-a")
        batch.publish("notifications.send_email", {"to": "a@example.com", "subject": "paid"}, f"{account}-b")
    chain = publisher.chain(
        ("payments.update_balance", {"account_id": account, "amount": 10}, f"{account}-c1"),
        ("payments.update_balance", {"account_id": account, "amount": 20}, f"{account}-c2"),
    )
    dynamodb, table = session.clients("dynamodb"), publisher.batch_table

    def heads() -> tuple:
        return read_from(dynamodb, table, batch.batch_id).head, read_from(dynamodb, table, chain.chain_id).head

    wait_until(
        lambda: (
            heads()[0].fired == {"on_complete", "on_success"}
            and heads()[1].state == "succeeded"
            and balance(session, account) == 1035
        ),
        timeout=PATIENCE_SECONDS,  # a loaded machine's cold start may pass the local 5 s timeout: a record comes back
        what="the batch's callbacks and the chain's links",
        seen=lambda: (heads(), balance(session, account)),
    )
    # Not a sleep for a late duplicate: once every tier's queue is empty nothing is left to run.
    queues = [t.queue_url for t in session.deployment.tiers.values()]
    wait_until(
        lambda: all(depth(session, url) == 0 for url in queues),
        PATIENCE_SECONDS,
        "every tier's queue empty",
        seen=lambda: [depth(session, url) for url in queues],
    )
    batched, chained = heads()
    assert (batched.total, batched.done, batched.succeeded, batched.failed) == (2, 2, 2, 0)
    assert (chained.total, chained.succeeded) == (2, 2)
    assert balance(session, account) == 1035  # each member, link and the on_success bonus applied once


def test_transient_failures_are_retried_with_backoff_then_succeed(session, publisher):
    tier = session.deployment.tiers["transactional"]
    mapping = session.runtime.by_function(tier.consumer.name)
    before = mapping.stats.snapshot()

    def outcomes() -> dict[str, int]:
        return {m: job_total(session, "transactional", m, "demo.flaky") for m in (Metrics.RETRIED, Metrics.SUCCEEDED)}

    publisher.publish("demo.flaky", {"fail_times": 2}, f"flaky-{uuid.uuid4().hex}")
    # The job's own outcomes (the tier may still be finishing other tests' jobs, which never fail): its
    # success, counted after its two failed attempts.
    wait_until(
        lambda: outcomes()[Metrics.SUCCEEDED] >= 1,
        PATIENCE_SECONDS,
        "the flaky job's success",
        seen=lambda: {**outcomes(), "letters": depth(session, tier.dlq_url)},
    )
    after = mapping.stats.snapshot()
    retried, succeeded = outcomes()[Metrics.RETRIED], outcomes()[Metrics.SUCCEEDED]
    # Two failed attempts, then one success. On a loaded machine an attempt may instead pass the local
    # timeout (as on Lambda: the batch comes back, that attempt counted by SQS's receive and not retried).
    timed_out = after["timeouts"] - before["timeouts"]
    assert succeeded == 1 and (retried == 2 or (retried < 2 and retried + timed_out >= 2)), (outcomes(), after)
    assert depth(session, tier.dlq_url) == 0


def test_permanent_failures_are_dead_lettered_at_once_with_reasons(session, publisher):
    tier = session.deployment.tiers["transactional"]
    with pytest.raises(InvalidJobError, match="payload field 'to' must match"):  # the publisher checks the schema
        publisher.publish("notifications.send_email", {"to": "not-an-address", "subject": "hi"}, "bad-mail-1")
    # a publisher that skips the schema (raw SendMessage): the consumer applies the same schema
    body = build("notifications.send_email", {"to": "not-an-address", "subject": "hi"}, "bad-mail-1")
    session.clients("sqs").send_message(QueueUrl=tier.queue_url, MessageBody=body.to_json())
    wait_until(lambda: depth(session, tier.dlq_url) == 1, PATIENCE_SECONDS, "dead letter")
    (letter,) = session.clients("sqs").receive_message(
        QueueUrl=tier.dlq_url, MessageAttributeNames=["All"], VisibilityTimeout=0
    )["Messages"]
    attributes = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert attributes[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert attributes[DeadLetter.ATTEMPTS] == "1"
    assert attributes[DeadLetter.JOB_TYPE] == "notifications.send_email"
    assert attributes[DeadLetter.SOURCE_QUEUE] == tier.queue_arn
    session.clients("sqs").purge_queue(QueueUrl=tier.dlq_url)


def notified(session, inbox) -> list[tuple[str, str]]:
    sqs = session.clients("sqs")
    found = []
    for message in sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", []):
        sqs.delete_message(QueueUrl=inbox, ReceiptHandle=message["ReceiptHandle"])
        note = json.loads(message["Body"])
        assert note["Emulated"] is True
        # What on-call reads: the page names its first command (tiered_jobs/cdk/alarms.py).
        assert " First run: tiered-jobs --stage local " in note["AlarmDescription"], note
        found.append((note["AlarmName"], note["NewStateValue"]))
    return found


def test_dlq_alarm_then_replay_brings_it_back_to_ok(session, inbox):
    tier = session.deployment.tiers["critical"]
    alarm = Alarms.name("local", "critical", Alarms.DLQ_DEPTH)
    account = f"acc-{uuid.uuid4().hex[:8]}"
    # A letter SQS's redrive would leave after a crash: the body only, no DeadLetter.* reasons.
    body = build("payments.update_balance", {"account_id": account, "amount": 7}, f"{account}-crashed").to_json()
    session.clients("sqs").send_message(QueueUrl=tier.dlq_url, MessageBody=body)
    seen: list[tuple[str, str]] = []
    wait_until(
        lambda: seen.extend(notified(session, inbox)) or (alarm, "ALARM") in seen,
        PATIENCE_SECONDS,
        "ALARM notification",
        seen=lambda: seen,
    )
    state = session.clients("cloudwatch").describe_alarms(AlarmNames=[alarm])["MetricAlarms"][0]
    assert state["StateValue"] == "ALARM" and "[local emulation]" in state["StateReason"]

    inspected = session.invoke(session.deployment.replay, {"action": "inspect", "tier": "critical"})
    assert [(g["job_type"], g["count"]) for g in inspected.response["groups"]] == [("payments.update_balance", 1)]
    assert depth(session, tier.dlq_url) == 1  # inspect moves nothing

    replayed = session.invoke(session.deployment.replay, {"action": "replay", "tier": "critical"})
    assert replayed.error is None and replayed.response["moved"] == 1
    wait_until(lambda: balance(session, account) == 7, PATIENCE_SECONDS, "replayed payment applied")
    wait_until(
        lambda: seen.extend(notified(session, inbox)) or (alarm, "OK") in seen,
        PATIENCE_SECONDS,
        "OK notification",
        seen=lambda: seen,
    )


def test_a_configuration_change_reaches_new_execution_environments(session, publisher):
    tier = session.deployment.tiers["critical"]
    good = dict(tier.consumer.environment)
    session.update_function_configuration(
        tier.consumer.name, {**good, Env.resource_var(PAYMENTS_TABLE): "missing-table"}
    )
    try:
        publisher.publish("payments.update_balance", {"account_id": "acc-x", "amount": 1}, f"cfg-{uuid.uuid4().hex}")
        wait_until(
            lambda: depth(session, tier.dlq_url) == 1, PATIENCE_SECONDS, "payment failed on the bad configuration"
        )
    finally:
        session.update_function_configuration(tier.consumer.name, good)
    replayed = session.invoke(session.deployment.replay, {"action": "replay", "tier": "critical"})
    assert replayed.response["moved"] == 1
    wait_until(
        lambda: depth(session, tier.queue_url) == 0 and depth(session, tier.dlq_url) == 0,
        PATIENCE_SECONDS,
        "payment applied after the fix",
    )


def test_smoke_passes_against_local_mode(session):
    """``tiered-jobs smoke``, a pipeline's post-deploy check, on the deployed stack: a probe through each tier,
    run by the deployed consumers (the runtime's own job type: the example app registers none like it)."""
    from typer.testing import CliRunner

    from tiered_jobs.cli import app

    started = time.monotonic()
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app,
        [
            "--stage",
            session.deployment.stage,
            "--endpoint-url",
            session.endpoint.url,
            "smoke",
            "--timeout",
            str(PATIENCE_SECONDS),
        ],
    )
    took = time.monotonic() - started

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == list(session.deployment.tiers)
    for tier, line in zip(session.deployment.tiers, lines, strict=True):
        assert f"{tier}: completed" in line and f"completed by the {tier} consumer" in line, line
    print(f"smoke against local mode: {took:.1f} s for {len(lines)} tiers")


def test_shutdown_leaves_no_thread_process_or_port(session, baseline):
    port = session.endpoint.port
    session.stop()
    wait_until(
        lambda: not (set(threading.enumerate()) - baseline["threads"]),
        PATIENCE_SECONDS,
        "threads gone",
        seen=lambda: sorted(t.name for t in set(threading.enumerate()) - baseline["threads"]),
    )
    assert child_pids() <= baseline["children"]
    assert port_is_free(port)
