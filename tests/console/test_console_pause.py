"""Pause and resume from the console: a confirm step first (the same discipline as a replay's dry run), the
paused tier shown with who paused it, and no change from a read-only console or without the CSRF token."""

from __future__ import annotations

import io
import re
import zipfile

import boto3
import pytest
import requests

from tests.support.lambda_tags import refusal
from tiered_jobs.contract.names import Ssm
from tiered_jobs.replay.pause import DISABLED_NOTE

REGION = "us-east-1"


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


@pytest.fixture
def mapping(deployment) -> str:
    """The critical tier's consumer and mapping in moto, its UUID published as the stack does; moto's own
    poller detached from the queue (it would run the function in Docker)."""
    from moto.sqs.models import sqs_backends

    role = boto3.client("iam").create_role(RoleName="consumer", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return {}\n")
    lam = boto3.client("lambda", region_name=REGION)
    function = lam.create_function(
        FunctionName="critical-consumer",
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": code.getvalue()},
    )["FunctionArn"]
    queue_arn = boto3.client("sqs").get_queue_attributes(
        QueueUrl=deployment.queue_urls["critical"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    uuid = lam.create_event_source_mapping(EventSourceArn=queue_arn, FunctionName=function)["UUID"]
    for queue in sqs_backends["123456789012"][REGION].queues.values():
        queue.lambda_event_source_mappings.clear()
    boto3.client("ssm").put_parameter(
        Name=Ssm.tier(deployment.stage, "critical", Ssm.TIER_MAPPING_UUID), Type="String", Value=uuid
    )
    return uuid


def _state(uuid: str) -> str:
    return boto3.client("lambda", region_name=REGION).get_event_source_mapping(UUID=uuid)["State"]


def test_pause_asks_first_then_pauses_and_shows_who_and_since_when_then_resumes(deployment, serve, mapping):
    console = serve()
    page = requests.get(console.url, timeout=30).text
    assert 'hx-get="/fragments/pauses"' in page
    csrf = _csrf(requests.get(console.url + "replay", timeout=30).text)
    assert "Pause critical" in requests.get(console.url + "fragments/pauses", timeout=30).text

    asked = requests.post(console.url + "tiers/pause/check", data={"csrf_token": csrf, "tier": "critical"}, timeout=30)
    assert "Pause critical?" in asked.text and 'id="confirm-pause"' in asked.text
    assert _state(mapping) == "Enabled"  # asking changes nothing

    done = requests.post(console.url + "tiers/pause/run", data={"csrf_token": csrf, "tier": "critical"}, timeout=30)
    assert "critical: paused" in done.text and _state(mapping) == "Disabled"
    # It answers once the mapping is Disabled, saying what Lambda received before that still runs.
    assert f"Still running: {DISABLED_NOTE}." in done.text and "not recorded" not in done.text
    shown = requests.get(console.url + "fragments/pauses", timeout=30).text
    assert re.search(r"critical: paused since \d{4}-\d\d-\d\d \d\d:\d\d UTC .* via console", shown), shown
    recorded = boto3.client("lambda", region_name=REGION).list_tags(
        Resource=boto3.client("lambda", region_name=REGION).get_event_source_mapping(UUID=mapping)[
            "EventSourceMappingArn"
        ]
    )["Tags"]
    assert recorded and all(refusal(key, value) is None for key, value in recorded.items())  # as Lambda checks them
    assert "retention" in shown and "Resume critical" in shown

    requests.post(console.url + "tiers/resume/run", data={"csrf_token": csrf, "tier": "critical"}, timeout=30)
    assert _state(mapping) == "Enabled"
    assert "paused since" not in requests.get(console.url + "fragments/pauses", timeout=30).text


def test_a_read_only_console_or_a_post_without_the_token_pauses_nothing(deployment, serve, mapping):
    read_only = serve(read_only=True)
    page = requests.get(read_only.url, timeout=30).text
    csrf = re.search(r'"x-csrf-token": "([^"]+)"', page).group(1)
    assert "Pause critical" not in requests.get(read_only.url + "fragments/pauses", timeout=30).text
    refused = requests.post(
        read_only.url + "tiers/pause/run", data={"csrf_token": csrf, "tier": "critical"}, timeout=30
    )
    writable = serve()
    no_token = requests.post(writable.url + "tiers/pause/run", data={"tier": "critical"}, timeout=30)

    assert refused.status_code == no_token.status_code == 403
    assert _state(mapping) == "Enabled"
