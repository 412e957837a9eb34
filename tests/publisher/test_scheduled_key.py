"""One-time schedules under the stage's own key (``encryption``): the publisher finds the key beside the schedule
group's names (SSM, the stack's outputs or the environment) and passes it as ``KmsKeyArn``; without one, none."""

from __future__ import annotations

from datetime import timedelta

import boto3
import pytest

from tests.publisher.conftest import GROUP, ROLE_ARN
from tiered_jobs.contract.names import Outputs, Schedules, Ssm
from tiered_jobs.publisher import Publisher
from tiered_jobs.stage import scheduling

KEY_ARN = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def _requests(scheduler) -> list[dict]:
    """Every CreateSchedule request ``scheduler`` sends, as botocore builds it."""
    requests: list[dict] = []
    scheduler.meta.events.register(
        "before-parameter-build.scheduler.CreateSchedule", lambda params, **_: requests.append(dict(params))
    )
    return requests


@pytest.mark.parametrize("key", [KEY_ARN, None])
def test_a_one_time_job_is_kept_under_the_stage_key_found_in_ssm(deployment, sqs, scheduler, target, key):
    ssm = boto3.client("ssm")
    values = {Schedules.SSM_GROUP_NAME: GROUP, Schedules.SSM_ROLE_ARN: ROLE_ARN, Schedules.SSM_DLQ_ARN: target.dlq_arn}
    if key is not None:
        values[Schedules.SSM_KMS_KEY_ARN] = key
    for name, value in values.items():
        ssm.put_parameter(Name=Schedules.ssm(deployment.stage, name), Value=value, Type="String")
    for tier, arn in target.queue_arns.items():
        ssm.put_parameter(Name=Ssm.tier(deployment.stage, tier, Ssm.TIER_QUEUE_ARN), Value=arn, Type="String")
    requests = _requests(scheduler)

    publisher = Publisher.from_stage(deployment.stage, ssm=ssm, sqs=sqs, scheduler=scheduler)
    assert publisher.publish("payments.capture", {}, "later", delay=timedelta(hours=2)).schedule_name

    (request,) = requests
    assert request.get("KmsKeyArn") == key


def test_the_outputs_and_the_environment_name_the_key_too():
    outputs = {
        Schedules.OUTPUT_GROUP_NAME: GROUP,
        Schedules.OUTPUT_ROLE_ARN: ROLE_ARN,
        Schedules.OUTPUT_DLQ_ARN: "arn:aws:sqs:us-east-1:123456789012:dlq",
        Outputs.tier("critical", Outputs.QUEUE_ARN): "arn:aws:sqs:us-east-1:123456789012:critical",
    }
    assert scheduling.from_outputs(outputs, ["critical"], "stack").kms_key_arn is None
    with_key = scheduling.from_outputs({**outputs, Schedules.OUTPUT_KMS_KEY_ARN: KEY_ARN}, ["critical"], "stack")
    assert with_key.kms_key_arn == KEY_ARN
    environ = {
        Schedules.ENV_GROUP_NAME: GROUP,
        Schedules.ENV_ROLE_ARN: ROLE_ARN,
        Schedules.ENV_DLQ_ARN: "arn:aws:sqs:us-east-1:123456789012:dlq",
    }
    assert scheduling.from_env(environ).kms_key_arn is None
    assert scheduling.from_env({**environ, Schedules.ENV_KMS_KEY_ARN: KEY_ARN}).kms_key_arn == KEY_ARN
