"""Node publishes through ``@tiered-jobs/publisher`` to local mode, and the Python consumer runs each job once.

The package is built into a folder of this module's own (``npm test`` may rebuild ``dist/`` meanwhile),
under the package's ``node_modules`` so its pinned dependencies resolve. The stage is found as a service finds it, from
its SSM parameters, with the SDK's default clients pointed at the embedded AWS (``AWS_ENDPOINT_URL``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from emulator.session import LocalSession
from tests.emulator.local_support import TEST_TIER_SETTINGS, balance, depth, wait_until
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher

PACKAGE = Path(__file__).resolve().parents[2] / "publishers" / "typescript"
HELPER = Path(__file__).with_name("node_publish.mjs")
NODE = shutil.which("node")
#: A W3C traceparent: both publishers send it as the X-Ray header of the same ids.
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(NODE is None or not (PACKAGE / "node_modules").is_dir(), reason="Node.js or make setup missing"),
]


@pytest.fixture(scope="module")
def built():
    # Under node_modules: ignored by git, and the pinned packages resolve from there.
    out = PACKAGE / "node_modules" / f".e2e-build-{uuid.uuid4().hex[:8]}"
    tsc = PACKAGE / "node_modules" / "typescript" / "bin" / "tsc"
    subprocess.run([str(NODE), str(tsc), "-p", "tsconfig.json", "--outDir", str(out)], cwd=PACKAGE, check=True)
    yield out / "index.js"
    shutil.rmtree(out)


@pytest.fixture(scope="module")
def session():
    local = LocalSession(tier_settings=TEST_TIER_SETTINGS).start()
    yield local
    local.stop()


def node_publish(session, built, request: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    assert NODE is not None and session.endpoint is not None
    environment = {**os.environ, **session.endpoint.client_env(), **(env or {})}
    run = subprocess.run(
        [NODE, str(HELPER), str(built), json.dumps(request)],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert run.stdout, run.stderr
    return json.loads(run.stdout)


def test_jobs_published_from_node_run_once_in_the_python_consumer(session, built):
    tier = session.deployment.tiers["critical"]
    mapping = session.runtime.by_function(tier.consumer.name)
    deleted_before = mapping.stats.snapshot()["deleted"]
    account = f"acc-{uuid.uuid4().hex[:8]}"
    jobs = [
        {
            "type": "payments.update_balance",
            "payload": {"account_id": account, "amount": 10 * (i + 1)},
            "idempotencyKey": f"{account}-{i}",
            "tenant": "acme",
            "expiresIn": 600,
            "traceHeader": TRACEPARENT,
        }
        for i in range(3)
    ]
    results = node_publish(session, built, {"stage": session.deployment.stage, "jobs": jobs + jobs})
    assert isinstance(results, list), results
    assert [result["tier"] for result in results] == ["critical"] * 6, results
    assert all(result["messageId"] for result in results)
    wait_until(
        lambda: depth(session, tier.queue_url) == 0 and mapping.stats.snapshot()["deleted"] - deleted_before >= 6,
        what="the six messages run and deleted",
        seen=lambda: {"balance": balance(session, account), "depth": depth(session, tier.queue_url)},
    )
    assert balance(session, account) == 10 + 20 + 30  # each payment once, though each was sent twice


def test_a_payload_its_schema_refuses_is_refused_in_node_before_anything_is_sent(session, built):
    schemas = PACKAGE.parents[1] / "functions" / "jobs" / "schemas"
    job = {"type": "payments.update_balance", "payload": {"account_id": "acc 1", "amount": 0}, "idempotencyKey": "k"}
    refused = node_publish(
        session, built, {"stage": session.deployment.stage, "jobs": [job]}, {"TIERED_JOBS_SCHEMA_DIRS": str(schemas)}
    )
    assert refused["error"] == "InvalidJobError"
    assert sorted((p["keyword"], p["path"]) for p in refused["problems"]) == [
        ("not", "amount"),
        ("pattern", "account_id"),
    ]


def test_node_sends_what_python_sends_for_the_same_job(session, built):
    """Through SQS itself: the same body (but its time), tenant, deadline and AWSTraceHeader."""
    sqs = session.clients("sqs")
    urls = {
        name: sqs.create_queue(QueueName=f"probe-{name}-{uuid.uuid4().hex[:6]}")["QueueUrl"] for name in ("node", "py")
    }
    node = node_publish(
        session,
        built,
        {
            "jobs": [
                {
                    "type": "payments.update_balance",
                    "payload": {"account_id": "acc_1", "amount": 5, "note": "café ✓"},
                    "idempotencyKey": "same-1",
                    "tenant": "acme",
                    "expiresAt": "2099-01-01T00:00:00.000Z",
                    "traceHeader": TRACEPARENT,
                }
            ]
        },
        {"TIERED_JOBS_QUEUE_URL_PROBE": urls["node"], "TIERED_JOBS_ROUTES": '{"*": "probe"}'},
    )
    assert node[0]["messageId"], node
    Publisher({"probe": urls["py"]}, Routes({"*": "probe"}), sqs=sqs, trace_context=None).publish(
        "payments.update_balance",
        {"account_id": "acc_1", "amount": 5, "note": "café ✓"},
        "same-1",
        tenant="acme",
        expires_at=datetime(2099, 1, 1, tzinfo=timezone.utc),
        trace_header=TRACEPARENT,
    )

    def received(url: str) -> dict[str, Any]:
        (message,) = sqs.receive_message(
            QueueUrl=url, MessageSystemAttributeNames=["All"], MaxNumberOfMessages=1, WaitTimeSeconds=1
        )["Messages"]
        body = json.loads(message["Body"])
        body.pop("published_at")
        return {
            "body": body,
            "attributes": {k: v for k, v in message["Attributes"].items() if k in ("AWSTraceHeader", "MessageGroupId")},
        }

    from_node = received(urls["node"])
    assert (
        from_node["attributes"]["AWSTraceHeader"]
        == "Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1"
    )
    assert (from_node["body"]["tenant"], from_node["body"]["expires_at"]) == ("acme", "2099-01-01T00:00:00.000Z")
    assert from_node == received(urls["py"])
