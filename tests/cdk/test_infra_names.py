"""The names the stack derives from the stage, its tiers and resources fit AWS's limits, or the settings say so.

Each limit is read from botocore's service model, where AWS states it (a shape's ``max``, or the
member's documentation when the shape also admits an ARN), not copied: the settings' constants must
agree with AWS, and the synthesized template's names must fit.
"""

from __future__ import annotations

import re
from typing import Any

import botocore.session
import pytest

from tests.cdk.infra_support import Synth, synthesize_once
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.cdk.settings import names as limits
from tiered_jobs.contract.names import RESOURCE_NAME_MAX_CHARS, consumer_function_name

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

_SESSION = botocore.session.get_session()


def _member(service: str, operation: str, member: str) -> Any:
    return _SESSION.get_service_model(service).operation_model(operation).input_shape.members[member]


def _documented(service: str, operation: str, member: str, sentence: str) -> int:
    """The number in ``sentence`` (a regular expression with one group) of the member's documentation."""
    text = re.sub(r"<[^>]+>", "", _member(service, operation, member).documentation)
    found = re.search(sentence, text)
    assert found, f"{service} {operation} {member}: AWS's documentation no longer says {sentence!r}"
    return int(found.group(1))


def _max(service: str, operation: str, member: str) -> int:
    return int(_member(service, operation, member).metadata["max"])


#: The limit of each kind of name, as AWS states it.
AWS_LIMITS = {
    "Lambda function name": _documented(
        "lambda", "CreateFunction", "FunctionName", r"only the function name, it is limited to (\d+) characters"
    ),
    "SQS queue name": _documented("sqs", "CreateQueue", "QueueName", r"A queue name can have up to (\d+) characters"),
    "CloudWatch alarm name": _max("cloudwatch", "PutMetricAlarm", "AlarmName"),
    "CloudWatch dashboard name": _documented(
        "cloudwatch", "PutDashboard", "DashboardName", r"The maximum length is (\d+)"
    ),
    "schedule group name": _max("scheduler", "CreateScheduleGroup", "Name"),
    "schedule name": _max("scheduler", "CreateSchedule", "Name"),
    "SSM parameter name": _documented(
        "ssm", "PutParameter", "Name", r"maximum length for a parameter name that you specify is (\d+) characters"
    ),
    "IAM role name": _max("iam", "CreateRole", "RoleName"),
    "log group name": _max("logs", "CreateLogGroup", "logGroupName"),
}


def test_the_settings_limits_are_aws_s():
    assert limits.LAMBDA_FUNCTION_NAME_MAX == AWS_LIMITS["Lambda function name"] == 64
    assert limits.SQS_QUEUE_NAME_MAX == AWS_LIMITS["SQS queue name"]
    assert limits.CLOUDWATCH_ALARM_NAME_MAX == AWS_LIMITS["CloudWatch alarm name"]
    assert limits.CLOUDWATCH_DASHBOARD_NAME_MAX == AWS_LIMITS["CloudWatch dashboard name"]
    assert limits.SCHEDULE_GROUP_NAME_MAX == AWS_LIMITS["schedule group name"]
    # The ARN before the name counts toward SSM's limit: the settings keep room for the longest one.
    assert limits.SSM_PARAMETER_NAME_MAX <= AWS_LIMITS["SSM parameter name"] - len(
        "arn:aws-us-gov:ssm:us-gov-west-1:111122223333:parameter/"
    )


def _routed(stage: str, tier: str, **raw: Any) -> dict[str, Any]:
    return {"stage": stage, "tiers": {tier: {}}, "routes": {"*": tier}, **raw}


@pytest.mark.parametrize(("stage", "tier"), [("s" * 20, "t" * 30), ("staging-eu-central-1", "transactional-invoicing")])
def test_a_consumer_name_over_lambda_s_limit_fails_in_the_settings_with_the_fix(stage, tier):
    name = consumer_function_name(stage, tier)
    over = len(name) - AWS_LIMITS["Lambda function name"]
    assert over > 0
    with pytest.raises(SettingsError) as refused:
        AppSettings.from_context(_routed(stage, tier))
    assert str(refused.value) == (
        f"context 'tiered_jobs': stage {stage!r}: the consumer function name (Lambda) {name!r} is {len(name)} "
        f"characters, over AWS's limit of 64; shorten the stage or the tier {tier!r} by {over} character(s)"
    )


def test_the_same_check_applies_to_a_cli_stage_override():
    with pytest.raises(SettingsError, match="consumer function name"):
        AppSettings.from_context(_routed("dev", "t" * 30), stage="s" * 20)


def test_at_the_limit_the_settings_accept_it():
    stage, tier = "s" * 20, "t" * (64 - len(consumer_function_name("s" * 20, "")))
    assert len(consumer_function_name(stage, tier)) == 64
    assert AppSettings.from_context(_routed(stage, tier)).tier_names == (tier,)


#: The longest names the settings accept: a 20-character stage, the longest tier that fits, a
#: 40-character resource and a 64-character periodic schedule.
LONGEST_STAGE = "s" * 20
LONGEST_TIER = "t" * (64 - len(consumer_function_name(LONGEST_STAGE, "")))
LONGEST_RESOURCE = "r" * RESOURCE_NAME_MAX_CHARS


@pytest.fixture(scope="module")
def longest_synth(tmp_path_factory) -> Synth:
    return synthesize_once(
        tmp_path_factory,
        "longest-names",
        stage=LONGEST_STAGE,
        tiers={LONGEST_TIER: {}},
        routes={"*": LONGEST_TIER},
        resources={LONGEST_RESOURCE: {"kind": "table", "partition_key": "id", "job_types": ["*"]}},
        schedules={"p" * 64: {"expression": "rate(1 day)", "job_type": "demo.hello", "payload": {}}},
    )


#: Where each kind of name sits in a template.
NAMED = {
    "AWS::Lambda::Function": ("FunctionName", "Lambda function name"),
    "AWS::SQS::Queue": ("QueueName", "SQS queue name"),
    "AWS::CloudWatch::Alarm": ("AlarmName", "CloudWatch alarm name"),
    "AWS::CloudWatch::Dashboard": ("DashboardName", "CloudWatch dashboard name"),
    "AWS::Scheduler::ScheduleGroup": ("Name", "schedule group name"),
    "AWS::Scheduler::Schedule": ("Name", "schedule name"),
    "AWS::SSM::Parameter": ("Name", "SSM parameter name"),
    "AWS::IAM::Role": ("RoleName", "IAM role name"),
    "AWS::Logs::LogGroup": ("LogGroupName", "log group name"),
}


def test_every_name_of_the_longest_accepted_settings_fits_aws_s_limit(longest_synth):
    seen: dict[str, int] = {}
    for resource in longest_synth.raw["Resources"].values():
        if resource["Type"] not in NAMED:
            continue
        key, kind = NAMED[resource["Type"]]
        name = resource["Properties"].get(key)
        if not isinstance(name, str):
            continue  # a generated name (CloudFormation's) or one made of tokens: not derived from settings
        limit = AWS_LIMITS[kind] - (64 if kind == "SSM parameter name" else 0)  # room for the ARN prefix
        assert len(name) <= limit, (kind, name, len(name), limit)
        seen[kind] = max(seen.get(kind, 0), len(name))
    # The names that grow with the stage and tier were all there, the consumer's at Lambda's limit.
    assert seen["Lambda function name"] == 64
    assert {
        "SQS queue name",
        "CloudWatch alarm name",
        "CloudWatch dashboard name",
        "schedule group name",
        "schedule name",
        "SSM parameter name",
    } <= set(seen)
