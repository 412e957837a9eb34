"""``tiered-jobs teardown``: a deleted stage's retained resources, found by name and tag, deleted on
confirmation; another stage's (``dev-eu`` next to ``dev``) and untagged look-alikes never touched."""

from __future__ import annotations

import json

import boto3
import pytest
from typer.testing import CliRunner

from tiered_jobs.contract.names import STAGE_TAG, Schedules, Ssm, alarm_key_description, queue_name, stack_name


def _leave_behind(stage: str, *, tag: dict[str, str] | None = None) -> dict[str, str]:
    """What CloudFormation leaves of ``stage`` after `cdk destroy`: the retained resources with their tags."""
    tags = tag if tag is not None else {STAGE_TAG: stage}
    sqs, dynamodb, logs, kms, ssm = (boto3.client(s) for s in ("sqs", "dynamodb", "logs", "kms", "ssm"))
    made = {}
    # The tier queues have their own names; the schedules DLQ has CloudFormation's.
    for name in (queue_name(stage, "critical"), queue_name(stage, "critical", dlq=True),
                 f"{stack_name(stage)}-SchedulesDlqF1E2D3C4-QRS"):
        made[name] = sqs.create_queue(QueueName=name, tags=tags)["QueueUrl"]
    sqs.send_message(QueueUrl=made[queue_name(stage, "critical", dlq=True)], MessageBody="{}")
    table = f"{stack_name(stage)}-IdempotencyTable48612DF4-ABC123"
    dynamodb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                          AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                          KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                          Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
    group = f"{stack_name(stage)}-TiercriticalConsumerLogsFA20E025-XYZ"
    logs.create_log_group(logGroupName=group, tags=tags)
    key = kms.create_key(Description=alarm_key_description(stage))["KeyMetadata"]["KeyId"]  # the stack does not tag it
    ssm.put_parameter(Name=Ssm.routes(stage), Value=json.dumps({"a.*": "critical"}), Type="String")
    scheduler = boto3.client("scheduler")
    scheduler.create_schedule_group(Name=Schedules.group_name(stage), Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
    scheduler.create_schedule(Name="once-pending", GroupName=Schedules.group_name(stage), ScheduleExpression="at(2199-01-01T00:00:00)",
                              FlexibleTimeWindow={"Mode": "OFF"}, Target={"Arn": "arn:aws:sqs:us-east-1:123456789012:q",
                                                                           "RoleArn": "arn:aws:iam::123456789012:role/r"})
    return {"table": table, "group": group, "key": key, "schedule_group": Schedules.group_name(stage)}


@pytest.fixture
def run(aws):
    from tiered_jobs.cli import app

    runner = CliRunner(env={"COLUMNS": "250"})
    return lambda *args, input=None: runner.invoke(app, list(args), input=input)


def _remaining(stage: str) -> dict[str, list]:
    sqs, dynamodb, logs, kms, ssm = (boto3.client(s) for s in ("sqs", "dynamodb", "logs", "kms", "ssm"))
    keys = [k["KeyId"] for k in kms.list_keys()["Keys"]
            if kms.describe_key(KeyId=k["KeyId"])["KeyMetadata"]["KeyState"] != "PendingDeletion"]
    return {
        "queues": sqs.list_queues(QueueNamePrefix=queue_name(stage, "")).get("QueueUrls", []),
        "generated_queues": sqs.list_queues(QueueNamePrefix=f"{stack_name(stage)}-").get("QueueUrls", []),
        "tables": [t for t in dynamodb.list_tables()["TableNames"] if t.startswith(f"{stack_name(stage)}-")],
        "groups": [g["logGroupName"] for g in logs.describe_log_groups(logGroupNamePrefix=f"{stack_name(stage)}-")["logGroups"]],
        "keys": [k for k in keys if kms.describe_key(KeyId=k)["KeyMetadata"]["Description"] == alarm_key_description(stage)],
        "all_keys": keys,
        "params": [p["Name"] for p in ssm.get_parameters_by_path(Path=f"{Ssm.prefix(stage)}/", Recursive=True)["Parameters"]],
        "schedule_groups": [g["Name"] for g in boto3.client("scheduler").list_schedule_groups()["ScheduleGroups"]
                            if g["Name"] == Schedules.group_name(stage)],
    }


def test_lists_then_deletes_only_after_confirmation(run):
    made = _leave_behind("dev")
    other = _leave_behind("dev-eu")  # its queues share the "tiered-jobs-dev-" prefix
    lookalike = boto3.client("sqs").create_queue(QueueName="tiered-jobs-dev-untagged")["QueueUrl"]

    refused = run("--stage", "dev", "teardown", input="n\n")
    assert refused.exit_code == 1, refused.output
    for name in ("tiered-jobs-dev-critical", "tiered-jobs-dev-critical-dlq", "TieredJobs-dev-SchedulesDlq", made["table"], made["group"],
                 made["key"], Ssm.routes("dev"), "1 messages", made["schedule_group"], "1 schedules"):
        assert name in refused.output
    assert "dev-eu" not in refused.output and "untagged" not in refused.output
    assert "Nothing deleted." in refused.output
    assert all(_remaining("dev").values())

    done = run("--stage", "dev", "teardown", input="y\n")
    assert done.exit_code == 0, done.output
    left = _remaining("dev")  # by prefix: dev-eu's resources and the look-alike share it
    assert sorted(left["queues"]) == sorted([lookalike, *_remaining("dev-eu")["queues"]])
    assert left["tables"] == [other["table"]] and left["groups"] == [other["group"]]
    assert left["all_keys"] == [other["key"]] and left["params"] == [] and left["schedule_groups"] == []
    assert left["generated_queues"] == _remaining("dev-eu")["generated_queues"] != []  # dev-eu's shares the prefix
    assert _remaining("dev-eu")["schedule_groups"] == [other["schedule_group"]]
    state = boto3.client("kms").describe_key(KeyId=made["key"])["KeyMetadata"]
    assert state["KeyState"] == "PendingDeletion"
    assert "cancel-key-deletion" in done.output
    assert len(_remaining("dev-eu")["queues"]) == 2


def test_yes_skips_the_question_and_cloudformation_tags_count_too(run):
    _leave_behind("prod", tag={"aws:cloudformation:stack-name": stack_name("prod")})  # deployed before the stage tag
    result = run("--stage", "prod", "teardown", "--yes", "--key-pending-days", "7")
    assert result.exit_code == 0, result.output
    assert not any(_remaining("prod").values())  # "all_keys" included: nothing but prod's existed


def test_refuses_while_the_stack_exists(run):
    boto3.client("cloudformation").create_stack(
        StackName=stack_name("dev"),
        TemplateBody=json.dumps({"Resources": {"Q": {"Type": "AWS::SQS::Queue",
                                                     "Properties": {"QueueName": queue_name("dev", "critical")}}}}))
    result = run("--stage", "dev", "teardown", "--yes")
    assert result.exit_code == 1
    assert "still exists" in result.output and "npx cdk destroy -c stage=dev" in result.output
    assert boto3.client("sqs").list_queues(QueueNamePrefix=queue_name("dev", "")).get("QueueUrls")


def test_nothing_left_says_so(run):
    result = run("--stage", "qa", "teardown")
    assert result.exit_code == 0 and "Nothing of stage 'qa' is left" in result.output
