"""The publisher policy allows exactly what the real publisher calls, on exactly those resources.

The stage's queues, schedule group and SSM parameters are created in moto from the synthesized
template (same names, same values), the real ``Publisher.from_stage`` discovers them, publishes to
every tier, publishes a job for later (a one-time schedule) and cancels it, and a botocore
``before-parameter-build`` hook records each API call with the resources it names. The IAM actions of
a call come from AWS's documented authorization (``SendMessageBatch`` is authorized by
``sqs:SendMessage``; ``CreateSchedule`` with a ``RoleArn`` also needs ``iam:PassRole`` on that role,
passed to Scheduler), never from moto, which checks no policy.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import boto3
import pytest

from tests.cdk.infra_support import logical_id
from tests.cdk.template_values import Concrete
from tiered_jobs.cdk.publishers import publisher_parameter_names
from tiered_jobs.cdk.schedules import SCHEDULER_PRINCIPAL
from tiered_jobs.contract.idempotency import record_id
from tiered_jobs.contract.names import Outputs, Schedules, Ssm
from tiered_jobs.publisher import Job, Publisher, PublishError

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

#: SQS batch APIs have no IAM action of their own (SQS developer guide, "batch actions").
BATCH_ACTIONS = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}


def _iam_action(service: str, operation: str) -> str:
    return f"{service}:{BATCH_ACTIONS.get(operation, operation)}"


#: A transaction is authorized by the actions of its parts (DynamoDB developer guide, "IAM with transactions").
TRANSACTION_PARTS = {
    "Put": "PutItem",
    "Delete": "DeleteItem",
    "Update": "UpdateItem",
    "ConditionCheck": "ConditionCheckItem",
}

#: The only condition the policy may set: ``iam:PassRole`` of the one-time role, to Scheduler only.
PASSED_TO_SCHEDULER = {"StringEquals": {"iam:PassedToService": SCHEDULER_PRINCIPAL}}


class CallRecorder:
    """``(IAM action, resource ARN, condition)`` of every call the clients make (botocore's ``before-parameter-build``
    event); the condition is the one a call satisfies, ``None`` when it needs none."""

    def __init__(self, region: str, account: str):
        self.region, self.account = region, account
        self.calls: set[tuple[str, str, str | None]] = set()
        self.operations: list[str] = []

    def attach(self, client: Any) -> Any:
        client.meta.events.register("before-parameter-build", self._record)
        return client

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        service = model.service_model.signing_name
        action = _iam_action(service, model.name)
        self.operations.append(f"{service}:{model.name}")
        if service == "dynamodb" and model.name == "TransactWriteItems":
            for item in params["TransactItems"]:
                ((part, request),) = item.items()
                self.calls.add((f"dynamodb:{TRANSACTION_PARTS[part]}", self._table(request["TableName"]), None))
            return
        for resource in self._resources(service, params):
            self.calls.add((action, resource, None))
        if service == "scheduler" and "RoleArn" in params.get("Target", {}):
            self.calls.add(("iam:PassRole", params["Target"]["RoleArn"], json.dumps(PASSED_TO_SCHEDULER)))

    def _resources(self, service: str, params: dict[str, Any]) -> list[str]:
        if service == "sqs":
            account, name = params["QueueUrl"].rstrip("/").split("/")[-2:]
            return [f"arn:aws:sqs:{self.region}:{account}:{name}"]
        if service == "ssm":
            names = params.get("Names") or [params.get("Name") or params["Path"]]
            return [f"arn:aws:ssm:{self.region}:{self.account}:parameter/{n.lstrip('/')}" for n in names]
        if service == "scheduler":
            group = params.get("GroupName", "default")
            return [f"arn:aws:scheduler:{self.region}:{self.account}:schedule/{group}/{params['Name']}"]
        if service == "dynamodb":
            return [self._table(params["TableName"])]
        raise AssertionError(f"the publisher called {service}: decide its resources and its place in the policy")

    def _table(self, name: str) -> str:
        return f"arn:aws:dynamodb:{self.region}:{self.account}:table/{name}"


def _idempotency_table(t: Concrete) -> str:
    """The logical id of the idempotency table (Powertools' key ``id``, as the construct makes it)."""
    (table,) = [
        key for key, props in t.resources("AWS::DynamoDB::Table") if props["KeySchema"][0]["AttributeName"] == "id"
    ]
    return table


def _policy(synth) -> dict[str, Any]:
    (policy,) = synth.resources("AWS::IAM::ManagedPolicy").values()
    return policy


def _allowed(t: Concrete, policy: dict[str, Any]) -> set[tuple[str, str, str | None]]:
    """``(action, resource pattern, condition)`` of every Allow; ``PASSED_TO_SCHEDULER`` is the only condition."""
    allowed = set()
    for statement in t.value(policy["Properties"]["PolicyDocument"])["Statement"]:
        assert statement["Effect"] == "Allow"
        condition = statement.get("Condition")
        assert condition in (None, PASSED_TO_SCHEDULER) and (condition is None or statement["Action"] == "iam:PassRole")
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        allowed |= {(a, r, condition and json.dumps(condition)) for a in actions for r in resources}
    return allowed


def _grants(entry: tuple[str, str, str | None], call: tuple[str, str, str | None]) -> bool:
    """IAM's matching: the same action, the resource against the pattern (``*`` wildcards), the same condition."""
    return entry[0] == call[0] and fnmatch.fnmatchcase(call[1], entry[1]) and entry[2] == call[2]


@pytest.fixture
def stage_in_moto(aws, default_synth) -> Concrete:
    """The stage's queues, schedule group and SSM parameters, created in moto with the template's names and values."""
    t = Concrete(default_synth.raw)
    sqs, ssm = boto3.client("sqs", region_name=t.region), boto3.client("ssm", region_name=t.region)
    for queue, _ in t.resources("AWS::SQS::Queue"):
        sqs.create_queue(QueueName=t.name(queue))
    for _, props in t.resources("AWS::Scheduler::ScheduleGroup"):
        boto3.client("scheduler", region_name=t.region).create_schedule_group(Name=props["Name"])
    for _, props in t.resources("AWS::SSM::Parameter"):
        ssm.put_parameter(Name=t.value(props["Name"]), Value=str(t.value(props["Value"])), Type="String")
    dynamodb = boto3.client("dynamodb", region_name=t.region)
    for table, props in t.resources("AWS::DynamoDB::Table"):
        dynamodb.create_table(
            TableName=t.name(table),
            KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"],
            BillingMode="PAY_PER_REQUEST",
        )
    return t


def test_publisher_policy_allows_exactly_the_publishers_calls(default_synth, stage_in_moto):
    t = stage_in_moto
    recorder = CallRecorder(t.region, t.account)
    sqs = recorder.attach(boto3.client("sqs", region_name=t.region))
    ssm = recorder.attach(boto3.client("ssm", region_name=t.region))
    scheduler = recorder.attach(boto3.client("scheduler", region_name=t.region))
    dynamodb = recorder.attach(boto3.client("dynamodb", region_name=t.region))

    publisher = Publisher.from_stage("dev", ssm=ssm, sqs=sqs, scheduler=scheduler, dynamodb=dynamodb)
    tiers = sorted(publisher.queues)
    assert tiers == ["bulk", "critical", "transactional"]
    # One job type per tier, through the stack's routes (types the publisher does not know are still sent).
    routes = {
        tier: glob for glob, tier in sorted(json.loads(default_synth.raw["Outputs"][Outputs.ROUTES]["Value"]).items())
    }
    jobs = [Job(routes[tier].replace("*", "policy_check"), {"n": 1}, f"policy-{tier}") for tier in tiers]
    results = publisher.publish_batch(jobs)
    assert {r.tier for r in results} == set(tiers) and all(r.ok for r in results)
    assert publisher.publish(jobs[0].job_type, {"n": 2}, "policy-single").ok
    # A job for tomorrow becomes a one-time schedule; cancelling it deletes the schedule.
    later = publisher.publish(
        jobs[0].job_type, {"n": 3}, "policy-later", at=datetime.now(timezone.utc) + timedelta(days=1)
    )
    assert later.schedule_name and not later.already_scheduled
    assert publisher.cancel(jobs[0].job_type, "policy-later") is True
    # Unique jobs: a lock alone, locks in a transaction; a job that could not be sent gives its lock back.
    assert publisher.publish(jobs[0].job_type, {}, "policy-unique", unique_for=60).message_id
    assert all(r.ok for r in publisher.publish_batch([replace(job, unique_for=60) for job in jobs]))
    # A debounced job: its run created, then moved.
    for n in range(2):
        assert publisher.publish(jobs[0].job_type, {"n": n}, "policy-debounce", debounce=60).debounced
    # A batch: its head written with its first member, sealed when the block ends; a chain: its head, its first link.
    with publisher.batch(on_complete=(jobs[1].job_type, {"n": 4})) as batch:
        batch.publish(jobs[0].job_type, {"n": 4}, "policy-member")
    assert batch.sealed is not None and batch.sealed.total == 1
    assert publisher.chain((jobs[0].job_type, {}, "policy-link-0"), (jobs[1].job_type, {}, "policy-link-1")).first.ok
    # A queued job's cancel writes its marker; a running one's asks it to stop (its record, by the test's own client).
    assert publisher.cancellation(jobs[0].job_type, "policy-single").outcome == "marked"
    running = {"id": {"S": record_id(jobs[1].job_type, "policy-running")}, "status": {"S": "INPROGRESS"}}
    running["expiration"] = {"N": str(int(datetime.now(timezone.utc).timestamp()) + 600)}
    boto3.client("dynamodb", region_name=t.region).put_item(TableName=t.name(_idempotency_table(t)), Item=running)
    assert publisher.cancellation(jobs[1].job_type, "policy-running").outcome == "running"
    # A caller waiting on a job reads its status (one GetItem of its record).
    assert publisher.get_status(jobs[1].job_type, "policy-running").state == "in_progress"
    # Its queue gone (deleted by a client of the test's own), a unique job is not sent and gives its lock back.
    boto3.client("sqs", region_name=t.region).delete_queue(QueueUrl=publisher.queues[tiers[0]])
    with pytest.raises(PublishError):
        publisher.publish(jobs[0].job_type, {}, "policy-unsent", unique_for=60)
    assert {
        "sqs:SendMessageBatch",
        "ssm:GetParameters",
        "scheduler:CreateSchedule",
        "scheduler:GetSchedule",
        "scheduler:DeleteSchedule",
        "scheduler:UpdateSchedule",
        "dynamodb:PutItem",
        "dynamodb:TransactWriteItems",
        "dynamodb:DeleteItem",
        "dynamodb:UpdateItem",
        "dynamodb:GetItem",
    } <= set(recorder.operations)

    allowed = _allowed(t, _policy(default_synth))
    assert [call for call in recorder.calls if not any(_grants(entry, call) for entry in allowed)] == []
    assert [entry for entry in allowed if not any(_grants(entry, call) for call in recorder.calls)] == []


def test_publisher_policy_names_the_tier_queues_and_never_a_dlq(default_synth):
    t = Concrete(default_synth.raw)
    allowed = _allowed(t, _policy(default_synth))
    sends = {resource for action, resource, _ in allowed if action == "sqs:SendMessage"}
    assert sends == {
        f"arn:aws:sqs:{t.region}:{t.account}:tiered-jobs-dev-{tier}" for tier in ("critical", "transactional", "bulk")
    }
    reads = {resource.split(":parameter")[1] for action, resource, _ in allowed if action == "ssm:GetParameters"}
    assert reads == set(publisher_parameter_names("dev", ["critical", "transactional", "bulk"]))
    assert {action for action, _, _ in allowed} == {
        "sqs:SendMessage",
        "ssm:GetParameters",
        "scheduler:CreateSchedule",
        "scheduler:UpdateSchedule",
        "scheduler:GetSchedule",
        "scheduler:DeleteSchedule",
        "iam:PassRole",
        "dynamodb:PutItem",
        "dynamodb:DeleteItem",
        "dynamodb:UpdateItem",
        "dynamodb:GetItem",
    }
    # The queues use SQS-managed encryption: no kms:GenerateDataKey needed (or granted).
    for queue in default_synth.resources("AWS::SQS::Queue").values():
        assert "KmsMasterKeyId" not in queue["Properties"] and queue["Properties"]["SqsManagedSseEnabled"] is True


def test_publisher_policy_reaches_only_one_time_schedules_and_passes_only_the_one_time_role(default_synth):
    """A publisher can neither change nor delete the periodic schedules, nor pass any other role."""
    t = Concrete(default_synth.raw)
    allowed = _allowed(t, _policy(default_synth))
    schedules = {resource for action, resource, _ in allowed if action.startswith("scheduler:")}
    assert schedules == {f"arn:aws:scheduler:{t.region}:{t.account}:schedule/{Schedules.group_name('dev')}/once-*"}
    (one_time_role,) = [key for key, _ in t.resources("AWS::IAM::Role") if key.startswith("SchedulesOneTimeRole")]
    assert {(resource, condition) for action, resource, condition in allowed if action == "iam:PassRole"} == {
        (t.arn(one_time_role), json.dumps(PASSED_TO_SCHEDULER))
    }


def test_publisher_policy_arn_is_an_output_and_a_parameter(default_synth):
    key = logical_id(default_synth, "AWS::IAM::ManagedPolicy")
    assert default_synth.raw["Outputs"][Outputs.PUBLISHER_POLICY_ARN]["Value"] == {"Ref": key}
    parameters = {
        p["Properties"]["Name"]: p["Properties"]["Value"]
        for p in default_synth.resources("AWS::SSM::Parameter").values()
    }
    assert parameters[Ssm.publisher_policy_arn("dev")] == {"Ref": key}
    assert Ssm.publisher_policy_arn("dev") == "/tiered-jobs/dev/publisher-policy-arn"
