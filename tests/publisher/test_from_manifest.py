"""``Publisher.from_manifest``: a publisher in another account publishes from the stage manifest alone (a file,
its text or its object), with no look-up in the stage's account; a manifest it cannot trust is refused."""

from __future__ import annotations

import json

import pytest

from tiered_jobs.contract.manifest import MANIFEST_VERSION
from tiered_jobs.publisher import Publisher
from tiered_jobs.stage.discovery import DiscoveryError


def _manifest(deployment) -> dict:
    return {
        "schema_version": MANIFEST_VERSION,
        "stage": "test",
        "queues": dict(deployment.queue_urls),
        "routes": dict(deployment.routes),
        "kms_key_arn": None,
    }


@pytest.mark.parametrize("form", ["path", "text", "object"])
def test_a_job_published_from_the_manifest_reaches_its_tier_queue(deployment, sqs, tmp_path, form):
    manifest = _manifest(deployment)
    path = tmp_path / "stage-manifest.json"
    path.write_text(json.dumps(manifest))
    source = {"path": path, "text": json.dumps(manifest), "object": manifest}[form]
    publisher = Publisher.from_manifest(source, sqs=sqs)
    publisher.publish("testjobs.noop", {"n": 1}, idempotency_key="k-1")
    messages = sqs.receive_message(QueueUrl=deployment.queue_urls["critical"], MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"])["idempotency_key"] for m in messages] == ["k-1"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema_version": 2}, "schema_version 2 is not 1"),
        ({"routes": {"*": "nowhere"}}, "routes name tiers without a queue: nowhere"),
        ({"queues": None}, "queues must be an object of strings"),
    ],
)
def test_a_manifest_it_cannot_trust_is_refused_with_the_fix(deployment, change, message):
    with pytest.raises(DiscoveryError, match=message):
        Publisher.from_manifest({**_manifest(deployment), **change})


def test_a_missing_file_says_where_the_manifest_comes_from(tmp_path):
    with pytest.raises(DiscoveryError, match="save the stack's StageManifest output there"):
        Publisher.from_manifest(tmp_path / "none.json")
