"""``tiered-jobs smoke``: a probe per tier, run by the real consumer on moto, and each way it ends.

The event source mapping is played by the smoke check's own wait: each poll's sleep runs one batch
of each tier's consumer (or nothing, for a tier that is "paused"), so the outcomes come from the
runtime's actual handling of the probe, never from a stub of it.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import boto3
import pytest
from botocore.exceptions import ClientError

from emulator.esm import sqs_event
from tests.support.context import lambda_context
from tiered_jobs.contract.envelope import parse
from tiered_jobs.contract.idempotency import record_id
from tiered_jobs.contract.names import DeadLetter, stack_name
from tiered_jobs.contract.probe import PROBE_TYPE
from tiered_jobs.operations import smoke as smoke_module
from tiered_jobs.operations.lookup import COMPLETED
from tiered_jobs.runtime.backoff import RetryPolicy
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import JobRegistry
from tiered_jobs.stage.target import Target

REGION = "us-east-1"


class Mapping:
    """The tiers' event source mappings, one poll per call: receive, run the consumer, delete what succeeded."""

    def __init__(self, deployment, *, paused=(), client=None):
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.deployment = deployment
        self.paused = set(paused)
        clients = {"sqs": self.sqs, "dynamodb": boto3.client("dynamodb", region_name=REGION)}
        self.consumers = {
            tier: Consumer(
                TierConfig(
                    stage=deployment.stage,
                    tier=tier,
                    queue_url=url,
                    dlq_url=deployment.dlq_urls[tier],
                    idempotency_table=deployment.idempotency_table,
                    retry=RetryPolicy(max_attempts=1),
                ),
                JobRegistry(),  # an app with no job type at all: the probe is the runtime's own
                client=client or clients.__getitem__,
            )
            for tier, url in deployment.queue_urls.items()
        }
        self.polls = 0

    def poll(self, _seconds: float = 0) -> None:
        self.polls += 1
        for tier, consumer in self.consumers.items():
            if tier in self.paused:
                continue
            url = self.deployment.queue_urls[tier]
            messages = self.sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"]
            ).get("Messages", [])
            if not messages:
                continue
            arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            response = consumer.handle(sqs_event(messages, arn, REGION), lambda_context())
            failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
            for message in messages:
                if message["MessageId"] not in failed:
                    self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


class Clock:
    """Seconds advance by one per poll: a timeout is reached in as many polls, without waiting."""

    def __init__(self, mapping: Mapping):
        self.mapping, self.now = mapping, 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.mapping.poll()


@pytest.fixture
def cli():
    """``cli("smoke", ...)`` runs ``tiered-jobs --stage test smoke ...`` in-process."""
    from typer.testing import CliRunner

    from tiered_jobs.cli import app

    runner = CliRunner(env={"COLUMNS": "250"})
    return lambda *args: runner.invoke(app, ["--stage", "test", *args])


def _target(deployment) -> Target:
    return Target(deployment.stage, stack_name(deployment.stage), REGION, None)


def _smoke(deployment, mapping, **options):
    clock = Clock(mapping)
    return smoke_module.smoke(_target(deployment), clock=clock, sleep=clock.sleep, poll_seconds=1.0, **options)


def test_every_tier_runs_its_probe_which_leaves_only_its_completed_record(deployment):
    mapping = Mapping(deployment)

    report = _smoke(deployment, mapping, timeout=30)

    assert report.ok, report.to_dict()
    assert [r.tier for r in report.results] == list(deployment.queue_urls)
    assert {r.outcome for r in report.results} == {COMPLETED}
    assert all(f"the {r.tier} consumer" in r.detail for r in report.results)  # the record says which ran it
    assert len({r.key for r in report.results}) == len(report.results)  # a fresh job per tier
    items = boto3.client("dynamodb").scan(TableName=deployment.idempotency_table)["Items"]
    assert len(items) == len(report.results)  # its idempotency record is all it wrote
    assert {item["id"]["S"] for item in items} == {record_id(PROBE_TYPE, r.key) for r in report.results}
    assert mapping.polls == 1  # completed on the first poll: no wait beyond what the consumer took


def test_a_probe_the_consumer_dead_letters_fails_with_the_letters_reasons(deployment):
    """The consumer's idempotency table is unreachable (its grant was lost): the probe cannot record its
    run, and after its attempts the DLQ holds it with the consumer's reasons, which smoke reports."""
    real = {"sqs": boto3.client("sqs"), "dynamodb": boto3.client("dynamodb")}

    class Denied:
        def __getattr__(self, name):
            def call(**_kwargs):
                raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}, name)

            return call

    mapping = Mapping(deployment, client=lambda service: Denied() if service == "dynamodb" else real[service])

    report = _smoke(deployment, mapping, tiers=["critical"], timeout=30)

    (result,) = report.results
    assert not report.ok and result.outcome == smoke_module.DEAD_LETTERED
    assert result.detail.startswith(f"dead-lettered: Reason={DeadLetter.REASON_PERMANENT}; ErrorType=ClientError")
    assert "AccessDenied" in result.detail


def test_a_tier_that_receives_nothing_times_out_with_what_to_look_at(deployment):
    mapping = Mapping(deployment, paused={"bulk"})

    report = _smoke(deployment, mapping, timeout=5)

    outcomes = {r.tier: r for r in report.results}
    assert outcomes["bulk"].outcome == smoke_module.TIMED_OUT and not report.ok
    assert "within 5 s" in outcomes["bulk"].detail and "status" in outcomes["bulk"].detail
    assert outcomes["bulk"].key in outcomes["bulk"].detail  # the lookup to run names the probe
    assert {r.outcome for t, r in outcomes.items() if t != "bulk"} == {COMPLETED}
    # The probe is still in the paused tier's queue: a resumed tier runs it, once.
    (message,) = boto3.client("sqs").receive_message(QueueUrl=deployment.queue_urls["bulk"])["Messages"]
    assert parse(message["Body"]).type == PROBE_TYPE


def test_a_queue_that_refuses_the_probe_fails_at_once(deployment):
    boto3.client("sqs").delete_queue(QueueUrl=deployment.queue_urls["critical"])
    mapping = Mapping(deployment)
    mapping.consumers.pop("critical")

    report = _smoke(deployment, mapping, timeout=30)

    outcomes = {r.tier: r for r in report.results}
    assert outcomes["critical"].outcome == smoke_module.REFUSED and "NonExistentQueue" in outcomes["critical"].detail
    assert not report.ok and outcomes["bulk"].ok


def test_an_unknown_tier_or_timeout_is_a_mistake_in_the_command(deployment, cli):
    result = cli("smoke", "--tier", "nope", "--timeout", "1")
    assert result.exit_code == 2 and "nope" in result.stderr
    result = cli("smoke", "--timeout", "0")
    assert result.exit_code == 2 and "--timeout" in result.stderr


def test_the_command_exits_1_naming_the_tier_that_failed(deployment, cli):
    """The CLI's face: one line per tier, and exit 1 when a probe failed (nothing consumes here: it times out)."""
    result = cli("smoke", "--tier", "critical", "--timeout", "0.2", "--json")
    assert result.exit_code == 1
    (probe,) = json.loads(result.stdout)["probes"]
    assert probe["tier"] == "critical" and probe["outcome"] == smoke_module.TIMED_OUT
    assert "smoke failed on critical" in result.stderr


def test_probe_keys_sort_by_time_and_never_repeat():
    moment = datetime(2026, 12, 2, 11, 5, 7, tzinfo=timezone.utc)
    keys = {smoke_module.probe_key(moment) for _ in range(50)}
    assert len(keys) == 50 and all(k.startswith("smoke-20261202T110507Z-") for k in keys)


@pytest.mark.parametrize("reserved", [PROBE_TYPE, "tiered_jobs.anything"])
def test_an_app_cannot_register_the_librarys_types(reserved):
    with pytest.raises(ValueError, match="reserved"):
        JobRegistry().job(reserved)(lambda payload, ctx: None)
