"""Fixtures: the miniature stack of the publisher tests, CLI runners with a wide terminal (``cli`` on the
miniature stage, ``run`` with the arguments as given), the stage's scheduled-jobs parts."""

from __future__ import annotations

import boto3
import pytest
from typer.testing import CliRunner

from tiered_jobs.contract.names import Schedules, Ssm
from tiered_jobs.contract.schedules import periodic_input

#: The miniature stage's schedule group (``schedules`` and the job lookup read it, ``publish --at`` writes it).
GROUP = Schedules.group_name("test")


@pytest.fixture
def cli():
    """``cli("status")`` runs ``tiered-jobs --stage test status`` in-process and returns the result."""
    from tiered_jobs.cli import app

    runner = CliRunner(env={"COLUMNS": "250"})

    def invoke(*args: str, stage: str = "test"):
        return runner.invoke(app, ["--stage", stage, *args])

    return invoke


@pytest.fixture
def run(aws):
    """``run("--stage", "dev", "teardown")`` runs the CLI in-process with its arguments as given (no stage
    added: the teardown tests name theirs) on the embedded AWS, and returns the result."""
    from tiered_jobs.cli import app

    runner = CliRunner(env={"COLUMNS": "250"})
    return lambda *args, input=None: runner.invoke(app, list(args), input=input)


@pytest.fixture
def scheduling(deployment):
    """What the real stack adds for scheduled jobs: the group, its SSM parameters, a periodic schedule."""
    ssm, sqs, scheduler = boto3.client("ssm"), boto3.client("sqs"), boto3.client("scheduler")
    scheduler.create_schedule_group(Name=GROUP)
    dlq = sqs.create_queue(QueueName="schedules-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    arns = {}
    for tier, url in deployment.queue_urls.items():
        arns[tier] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        ssm.put_parameter(Name=Ssm.tier("test", tier, Ssm.TIER_QUEUE_ARN), Value=arns[tier], Type="String")
    for key, value in (
        (Schedules.SSM_GROUP_NAME, GROUP),
        (Schedules.SSM_DLQ_ARN, dlq_arn),
        (Schedules.SSM_ROLE_ARN, "arn:aws:iam::123456789012:role/one-time"),
    ):
        ssm.put_parameter(Name=Schedules.ssm("test", key), Value=value, Type="String")
    scheduler.create_schedule(
        Name="nightly-report",
        GroupName=GROUP,
        ScheduleExpression="cron(0 3 * * ? *)",
        ScheduleExpressionTimezone="Europe/Paris",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={
            "Arn": arns["bulk"],
            "RoleArn": "arn:aws:iam::123456789012:role/periodic",
            "Input": periodic_input("nightly-report", "analytics.record_event", {"event": "nightly"}),
        },
    )
    return scheduler


def create_fired_one_time_schedule(scheduler, name: str, due) -> None:
    """A one-time schedule whose time has come: Scheduler deletes it only some time after its fire,
    so it lingers, done, in the group (as ``publish --at`` would have named it)."""
    scheduler.create_schedule(
        Name=name,
        GroupName=GROUP,
        ScheduleExpression=f"at({due.strftime('%Y-%m-%dT%H:%M:%S')})",
        ScheduleExpressionTimezone="UTC",
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target={
            "Arn": "arn:aws:sqs:us-east-1:123456789012:q",
            "RoleArn": "arn:aws:iam::123456789012:role/one-time",
            "Input": "{}",
        },
    )
