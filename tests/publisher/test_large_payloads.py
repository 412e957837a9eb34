"""The publisher with ``large_payloads``: a body over its tier's threshold goes to the stage's bucket and
the message is the pointer AWS's SQS extended clients send; without the setting it is refused as before."""

from __future__ import annotations

import dataclasses
import json

import boto3
import pytest

from tiered_jobs.contract.envelope import parse
from tiered_jobs.contract.large_payloads import Offload, Pointer, read_pointer
from tiered_jobs.contract.names import Env
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES
from tiered_jobs.publisher import InvalidJobError, Publisher, PublishError
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import registry
from tiered_jobs.stage import discovery

BUCKET = "stage-large-payloads"
ROUTES = Routes({"testjobs.*": "critical"})


@pytest.fixture
def s3(aws):
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def publisher(tier, s3, threshold: int | None = 200_000) -> Publisher:
    offloads = {"critical": Offload(BUCKET, threshold)} if threshold is not None else {}
    return Publisher({"critical": tier.queue_url}, ROUTES, sqs=tier.sqs, large_payloads=offloads, s3=s3)


def stored(s3) -> list[str]:
    return [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def test_a_body_over_the_threshold_is_stored_and_the_pointer_sent_then_its_job_runs(tier, s3, recorded):
    blob = "é" * 750_000  # 1 500 000 bytes of UTF-8, past SQS's 1 MiB: the size counts bytes, not characters
    publisher(tier, s3).publish("testjobs.ok", {"label": "report", "blob": blob}, "report-1")
    (message,) = tier.receive()
    pointer = read_pointer(message["Body"])
    (key,) = stored(s3)
    assert pointer == Pointer(BUCKET, key) and key.startswith("critical/")
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert (
        parse(body.decode("utf-8"), max_bytes=None).payload["blob"] == blob
    )  # the whole envelope, as the extended clients do
    assert message["MessageAttributes"]["ExtendedPayloadSize"] == {"DataType": "Number", "StringValue": str(len(body))}
    config = dataclasses.replace(tier.config(), large_payloads=Offload(BUCKET, 200_000))
    clients = {"sqs": tier.sqs, "dynamodb": tier.dynamodb, "s3": s3}
    tier.run_messages(Consumer(config, registry, client=clients.__getitem__), [message])
    assert [(key, payload["blob"] == blob) for key, payload in recorded] == [("report-1", True)]


def test_a_body_under_the_threshold_is_sent_inline(tier, s3):
    publisher(tier, s3).publish("testjobs.ok", {"label": "small"}, "small-1")
    (message,) = tier.receive()
    assert parse(message["Body"]).idempotency_key == "small-1" and "MessageAttributes" not in message
    assert stored(s3) == []


def test_past_sqs_limit_without_the_setting_it_is_refused_as_before_and_nothing_is_sent_or_stored(tier, s3):
    with pytest.raises(InvalidJobError, match="pass IDs, not objects, or set large_payloads on the tier"):
        publisher(tier, s3, threshold=None).publish(
            "testjobs.ok", {"label": "huge", "blob": "x" * MAX_JOB_MESSAGE_BYTES}, "huge-1"
        )
    assert tier.receive() == [] and stored(s3) == []


def test_a_job_due_through_a_one_time_schedule_is_not_offloaded(tier, s3):
    with pytest.raises(InvalidJobError, match="cannot go through a one-time schedule"):
        publisher(tier, s3).publish("testjobs.ok", {"label": "later", "blob": "x" * 300_000}, "later-1", delay=3600)
    assert stored(s3) == []


def test_a_bucket_that_refuses_the_body_sends_nothing(tier, s3):
    s3.delete_bucket(Bucket=BUCKET)
    with pytest.raises(PublishError) as caught:
        publisher(tier, s3).publish("testjobs.ok", {"label": "r", "blob": "x" * 300_000}, "refused-1")
    (result,) = caught.value.results
    assert result.error_code == "NoSuchBucket" and "nothing sent" in (result.error_message or "")
    assert tier.receive() == []


def test_discovery_reads_each_tiers_setting_from_the_environment():
    offload = Offload(BUCKET, 4096)
    deployment = discovery.from_env(
        {
            Env.tier_var(Env.QUEUE_URL, "bulk-eu"): "https://sqs/q",
            Env.tier_var(Env.QUEUE_URL, "critical"): "https://sqs/c",
            Env.tier_var(Env.LARGE_PAYLOADS, "bulk-eu"): offload.to_json(),
        }
    )
    assert deployment.large_payloads == {"bulk-eu": offload}
    with pytest.raises(discovery.DiscoveryError, match="large_payloads of tier 'critical'"):
        discovery.from_env(
            {Env.tier_var(Env.QUEUE_URL, "critical"): "q", Env.tier_var(Env.LARGE_PAYLOADS, "critical"): "{}"}
        )
    assert json.loads(offload.to_json()) == {"bucket": BUCKET, "threshold_bytes": 4096}
