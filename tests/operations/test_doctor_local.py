"""``tiered-jobs doctor`` against local mode: its own limits (the tiers' caps, no account pool, no quota) from the
mappings it reads, and no call for an account's settings or quotas, which its embedded AWS does not serve."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from botocore.stub import Stubber

from tests.operations.test_doctor import REGION, STAGE, TIERS, Aws, _by_name
from tiered_jobs.contract.names import LOCAL_MODE_STACK_TAG, Outputs
from tiered_jobs.operations import doctor
from tiered_jobs.stage.discovery import from_stack_outputs


@pytest.fixture
def aws() -> Iterator[Aws]:
    """test_doctor's stubbed clients: a call no answer was queued for fails the test."""
    stubbed = Aws()
    for stub in stubbed.stubs.values():
        stub.activate()
    yield stubbed
    for stub in stubbed.stubs.values():
        stub.assert_no_pending_responses()
        stub.deactivate()


def test_local_mode_answers_from_its_tiers_caps_and_asks_for_no_account_setting_or_quota(aws):
    aws.stage(TIERS)  # the mappings and reservations only: the stubs refuse any other call

    report = doctor.diagnose(STAGE, list(TIERS), aws.client, local_mode=True)

    checks = _by_name(report)
    (concurrency,) = checks["Lambda concurrency"]
    assert concurrency.status == doctor.OK
    assert "local mode: the tiers run at most 35 consumers at once (critical 20, standard 10, bulk 5)" in (
        concurrency.detail
    )
    (quotas,) = checks["Service quotas"]
    assert quotas.status == doctor.OK and "run doctor against the account you deploy to" in quotas.detail
    assert not any(check.status == doctor.UNREADABLE for check in report.checks)
    assert not report.failed


def _stack(tags: list[dict[str, str]]) -> dict[str, object]:
    outputs = {Outputs.ROUTES: json.dumps({"*": "critical"}), Outputs.tier("critical", Outputs.QUEUE_URL): "https://q"}
    return {
        "Stacks": [
            {
                "StackName": "TieredJobs-local",
                "CreationTime": "2026-12-07T00:00:00Z",
                "StackStatus": "CREATE_COMPLETE",
                "Outputs": [{"OutputKey": key, "OutputValue": value} for key, value in outputs.items()],
                "Tags": tags,
            }
        ]
    }


def test_the_stack_local_mode_deploys_is_told_by_its_tag():
    cloudformation = boto3.client(
        "cloudformation", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(cloudformation) as stub:
        stub.add_response("describe_stacks", _stack([{"Key": LOCAL_MODE_STACK_TAG, "Value": "true"}]))
        stub.add_response("describe_stacks", _stack([{"Key": "team", "Value": "payments"}]))

        local = from_stack_outputs("TieredJobs-local", cloudformation=cloudformation)
        deployed = from_stack_outputs("TieredJobs-local", cloudformation=cloudformation)

    assert local.local_mode is True and deployed.local_mode is False
