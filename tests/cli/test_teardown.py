"""``tiered-jobs teardown``: a deleted stage's retained resources, found by name and tag, deleted on
confirmation; another stage's (``dev-eu`` next to ``dev``) and untagged look-alikes never touched."""

from __future__ import annotations

import json

import boto3

from tiered_jobs.contract.names import (
    STAGE_TAG,
    Schedules,
    Ssm,
    alarm_key_description,
    discard_archive_prefix,
    queue_name,
    stack_name,
)


def _leave_behind(stage: str, *, tag: dict[str, str] | None = None, stack: str | None = None) -> dict[str, str]:
    """What CloudFormation leaves of ``stage`` after `cdk destroy`: the retained resources with their tags.

    ``stack``: the stack the stage was in (this repository's ``TieredJobs-<stage>`` by default, or
    the stack a user's app put the construct in); CloudFormation's generated names start with it.
    """
    tags = tag if tag is not None else {STAGE_TAG: stage}
    stack = stack or stack_name(stage)
    sqs, dynamodb, logs, kms, ssm = (boto3.client(s) for s in ("sqs", "dynamodb", "logs", "kms", "ssm"))
    made = {}
    # The tier queues have their own names; the schedules DLQ has CloudFormation's.
    for name in (
        queue_name(stage, "critical"),
        queue_name(stage, "critical", dlq=True),
        f"{stack}-SchedulesDlqF1E2D3C4-QRS",
    ):
        made[name] = sqs.create_queue(QueueName=name, tags=tags)["QueueUrl"]
    sqs.send_message(QueueUrl=made[queue_name(stage, "critical", dlq=True)], MessageBody="{}")
    table = f"{stack}-IdempotencyTable48612DF4-ABC123"
    dynamodb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
    )
    group = f"{stack}-TiercriticalConsumerLogsFA20E025-XYZ"
    logs.create_log_group(logGroupName=group, tags=tags)
    key = kms.create_key(Description=alarm_key_description(stage))["KeyMetadata"]["KeyId"]  # the stack does not tag it
    ssm.put_parameter(Name=Ssm.routes(stage), Value=json.dumps({"a.*": "critical"}), Type="String")
    scheduler = boto3.client("scheduler")
    scheduler.create_schedule_group(
        Name=Schedules.group_name(stage), Tags=[{"Key": k, "Value": v} for k, v in tags.items()]
    )
    scheduler.create_schedule(
        Name="once-pending",
        GroupName=Schedules.group_name(stage),
        ScheduleExpression="at(2199-01-01T00:00:00)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": "arn:aws:sqs:us-east-1:123456789012:q", "RoleArn": "arn:aws:iam::123456789012:role/r"},
    )
    bucket = _archive_bucket(stage, tags, stack)
    role = _one_time_role(stage, tags, stack)
    return {
        "table": table,
        "group": group,
        "key": key,
        "schedule_group": Schedules.group_name(stage),
        "bucket": bucket,
        "role": role,
    }


def _one_time_role(stage: str, tags: dict[str, str], stack: str, region: str = "us-east-1") -> str:
    """The retained role of the one-time jobs: CloudFormation's name, the construct's description, the policy inline."""
    iam = boto3.client("iam")
    name = f"{stack}-SchedulesOneTimeRoleC2DF5688-{region.replace('-', '')}"[:64]
    iam.create_role(
        RoleName=name,
        Description=Schedules.one_time_role_description(stage, region),
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "scheduler.amazonaws.com"}}
                ],
            }
        ),
        Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
    )
    iam.put_role_policy(
        RoleName=name,
        PolicyName="SendToTierQueues",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}]}
        ),
    )
    return name


def _roles(stage: str, region: str = "us-east-1") -> list[str]:
    return [
        r["RoleName"]
        for r in boto3.client("iam").list_roles()["Roles"]
        if r.get("Description") == Schedules.one_time_role_description(stage, region)
    ]


def _bucket_name(stage: str, suffix: str = "1a2b3c4d5e6f", stack: str | None = None) -> str:
    """CloudFormation's generated bucket name: ``<stack name>-<logical id>-<suffix>``, lower-cased, the
    logical id cut to fit S3's 63 characters."""
    stack = stack or stack_name(stage)
    logical_id = "ReplayDiscardArchiveBucket56071EA0"[: 63 - len(stack) - len(suffix) - 2]
    return f"{stack}-{logical_id}-{suffix}".lower()


def _archive_bucket(stage: str, tags: dict[str, str], stack: str) -> str:
    """The discard archive as a deleted stack leaves it: versioned, with a letter overwritten and one deleted."""
    s3, name = boto3.client("s3"), _bucket_name(stage, stack=stack)
    s3.create_bucket(Bucket=name)
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    if any(key.startswith("aws:") for key in tags):  # S3 lets only AWS (CloudFormation) set these: moto's store
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        s3_backends[DEFAULT_ACCOUNT_ID]["aws"].put_bucket_tagging(name, tags)
    else:
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in tags.items()]})
    key = f"{discard_archive_prefix(stage, 'critical')}20261130T031853.000000Z-0a1b2c3d.jsonl"
    for body in (b'{"message_id": "a"}\n', b'{"message_id": "b"}\n'):  # two versions of one key
        s3.put_object(Bucket=name, Key=key, Body=body)
    s3.put_object(Bucket=name, Key=key.replace("0a1b2c3d", "9f8e7d6c"), Body=b"{}\n")
    s3.delete_object(Bucket=name, Key=key.replace("0a1b2c3d", "9f8e7d6c"))  # a delete marker over a version
    return name


def _buckets(stage: str, stack: str | None = None) -> list[str]:
    return [
        b["Name"]
        for b in boto3.client("s3").list_buckets()["Buckets"]
        if b["Name"].startswith(f"{(stack or stack_name(stage)).lower()}-")
    ]


def _remaining(stage: str, stack: str | None = None) -> dict[str, list]:
    stack = stack or stack_name(stage)
    sqs, dynamodb, logs, kms, ssm = (boto3.client(s) for s in ("sqs", "dynamodb", "logs", "kms", "ssm"))
    keys = [
        k["KeyId"]
        for k in kms.list_keys()["Keys"]
        if kms.describe_key(KeyId=k["KeyId"])["KeyMetadata"]["KeyState"] != "PendingDeletion"
    ]
    return {
        "queues": sqs.list_queues(QueueNamePrefix=queue_name(stage, "")).get("QueueUrls", []),
        "generated_queues": sqs.list_queues(QueueNamePrefix=f"{stack}-").get("QueueUrls", []),
        "tables": [t for t in dynamodb.list_tables()["TableNames"] if t.startswith(f"{stack}-")],
        "groups": [g["logGroupName"] for g in logs.describe_log_groups(logGroupNamePrefix=f"{stack}-")["logGroups"]],
        "keys": [
            k for k in keys if kms.describe_key(KeyId=k)["KeyMetadata"]["Description"] == alarm_key_description(stage)
        ],
        "all_keys": keys,
        "params": [
            p["Name"] for p in ssm.get_parameters_by_path(Path=f"{Ssm.prefix(stage)}/", Recursive=True)["Parameters"]
        ],
        "schedule_groups": [
            g["Name"]
            for g in boto3.client("scheduler").list_schedule_groups()["ScheduleGroups"]
            if g["Name"] == Schedules.group_name(stage)
        ],
        "buckets": _buckets(stage, stack),
        "roles": _roles(stage),
    }


def test_lists_then_deletes_only_after_confirmation(run):
    made = _leave_behind("dev")
    other = _leave_behind("dev-eu")  # its queues share the "tiered-jobs-dev-" prefix
    lookalike = boto3.client("sqs").create_queue(QueueName="tiered-jobs-dev-untagged")["QueueUrl"]

    refused = run("--stage", "dev", "teardown", input="n\n")
    assert refused.exit_code == 1, refused.output
    for name in (
        "tiered-jobs-dev-critical",
        "tiered-jobs-dev-critical-dlq",
        "TieredJobs-dev-SchedulesDlq",
        made["table"],
        made["group"],
        made["key"],
        Ssm.routes("dev"),
        "1 messages",
        made["schedule_group"],
        "1 schedules",
        made["bucket"],
        "4 object versions",
        made["role"],
    ):
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
    assert left["buckets"] == [other["bucket"]]  # dev-eu's shares the prefix: only its tag tells them apart
    assert left["roles"] == [] and _remaining("dev-eu")["roles"] == [other["role"]]
    assert f"deleted role {made['role']}" in done.output
    assert done.output.index("deleted schedule group") < done.output.index("deleted role")  # no fire into a gone role
    assert f"deleted bucket {made['bucket']} and its 4 object versions" in done.output
    versions = boto3.client("s3").list_object_versions(Bucket=other["bucket"])
    assert len(versions["Versions"]) == 3 and len(versions["DeleteMarkers"]) == 1  # dev-eu's archive untouched
    state = boto3.client("kms").describe_key(KeyId=made["key"])["KeyMetadata"]
    assert state["KeyState"] == "PendingDeletion"
    assert "cancel-key-deletion" in done.output
    assert len(_remaining("dev-eu")["queues"]) == 2


def test_cloudformations_stack_tag_alone_makes_nothing_the_stages(run):
    """Tagged only ``aws:cloudformation:stack-name = TieredJobs-prod``, nothing is taken: the stage tag decides."""
    made = _leave_behind("prod", tag={"aws:cloudformation:stack-name": stack_name("prod")})
    result = run("--stage", "prod", "teardown", "--yes", "--key-pending-days", "7")
    assert result.exit_code == 0, result.output
    left = _remaining("prod")
    assert left["keys"] == [] and left["params"] == []  # the key by its description, the parameters by their path
    assert len(left["queues"]) == 2 and left["generated_queues"] and left["tables"] == [made["table"]]
    assert left["groups"] == [made["group"]] and left["buckets"] == [made["bucket"]]
    assert left["schedule_groups"] == [made["schedule_group"]] and left["roles"] == [made["role"]]


def test_the_same_stage_in_another_region_keeps_its_role(run):
    """IAM is global: the role's path names its region, so tearing down ``dev`` here leaves ``dev`` of eu-west-1."""
    made = _leave_behind("dev")
    ireland = _one_time_role("dev", {STAGE_TAG: "dev"}, stack_name("dev"), region="eu-west-1")
    untagged = _one_time_role("dev", {}, "Lookalike")
    result = run("--stage", "dev", "teardown", "--yes")
    assert result.exit_code == 0, result.output
    assert _roles("dev") == [untagged] and _roles("dev", "eu-west-1") == [ireland]
    assert made["role"] in result.output and ireland not in result.output and untagged not in result.output


def _foreign(stack: str) -> dict[str, str]:
    """A library user's own retained resources in ``stack``: CloudFormation's generated names and its stack tag,
    no stage tag (the construct tags only what it makes)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    tags = {"aws:cloudformation:stack-name": stack}
    sqs, dynamodb, logs, kms, s3 = (boto3.client(s) for s in ("sqs", "dynamodb", "logs", "kms", "s3"))
    queue = sqs.create_queue(QueueName=f"{stack}-OrdersQueue1A2B3C4D-XYZ", tags=tags)["QueueUrl"]
    table = f"{stack}-OrdersTable5E6F7A8B-DEF"
    dynamodb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
    )
    group = f"{stack}-ApiLogs9C0D1E2F-GHI"
    logs.create_log_group(logGroupName=group, tags=tags)
    bucket = f"{stack.lower()}-uploadsbucket3a4b5c6d-jkl"
    s3.create_bucket(Bucket=bucket)
    s3_backends[DEFAULT_ACCOUNT_ID]["aws"].put_bucket_tagging(bucket, tags)  # aws: tags: only AWS sets them
    key = kms.create_key(
        Description=f"{stack} orders data", Tags=[{"TagKey": k, "TagValue": v} for k, v in tags.items()]
    )["KeyMetadata"]["KeyId"]
    return {"queue": queue, "table": table, "group": group, "bucket": bucket, "key": key}


def test_a_library_users_own_retained_resources_are_never_taken(run):
    """``--stack-name Billing``: Billing's own tables, queues, log groups, buckets and keys share the name prefix
    and CloudFormation's stack tag, but not the stage tag; only what Tiered Jobs left is listed and deleted."""
    cfn = {"aws:cloudformation:stack-name": "Billing"}
    ours = _leave_behind("dev", tag={STAGE_TAG: "dev", **cfn}, stack="Billing")
    theirs = _foreign("Billing")

    listed = run("--stage", "dev", "--stack-name", "Billing", "teardown", input="n\n")
    assert ours["table"] in listed.output and ours["bucket"] in listed.output
    for name in ("OrdersQueue", theirs["table"], theirs["group"], theirs["bucket"], theirs["key"]):
        assert name not in listed.output
    done = run("--stage", "dev", "--stack-name", "Billing", "teardown", "--yes")
    assert done.exit_code == 0, done.output
    left = _remaining("dev", "Billing")
    assert left["generated_queues"] == [theirs["queue"]] and left["tables"] == [theirs["table"]]
    assert left["groups"] == [theirs["group"]] and left["buckets"] == [theirs["bucket"]]
    assert left["all_keys"] == [theirs["key"]] and left["queues"] == [] and left["schedule_groups"] == []
    assert left["roles"] == []


def test_refuses_while_the_stack_exists(run):
    boto3.client("cloudformation").create_stack(
        StackName=stack_name("dev"),
        TemplateBody=json.dumps(
            {
                "Resources": {
                    "Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": queue_name("dev", "critical")}}
                }
            }
        ),
    )
    result = run("--stage", "dev", "teardown", "--yes")
    assert result.exit_code == 1
    assert "still exists" in result.output and "npx cdk destroy -c stage=dev" in result.output
    assert boto3.client("sqs").list_queues(QueueNamePrefix=queue_name("dev", "")).get("QueueUrls")


def test_a_library_users_stack_that_still_exists_is_never_torn_down(run):
    """The construct in a user's stack ``Billing``: its retained resources carry CloudFormation's tag naming
    ``Billing``, so teardown refuses while that stack exists, though no ``TieredJobs-dev`` stack ever did."""
    cfn = {"aws:cloudformation:stack-name": "Billing"}
    made = _leave_behind("dev", tag={STAGE_TAG: "dev", **cfn}, stack="Billing")
    boto3.client("cloudformation").create_stack(
        StackName="Billing", TemplateBody=json.dumps({"Resources": {"T": {"Type": "AWS::SNS::Topic"}}})
    )
    result = run("--stage", "dev", "teardown", "--yes")
    assert result.exit_code == 1
    assert "stack Billing still exists" in result.output and "npx cdk destroy Billing" in result.output
    assert len(_remaining("dev")["queues"]) == 2 and made["table"] in _remaining("dev", "Billing")["tables"]


def test_a_library_users_deleted_stack_is_found_by_its_name(run):
    """After ``cdk destroy Billing``, ``--stack-name Billing`` finds what CloudFormation named after it."""
    made = _leave_behind("dev", tag={STAGE_TAG: "dev", "aws:cloudformation:stack-name": "Billing"}, stack="Billing")
    assert made["table"].startswith("Billing-") and made["bucket"].startswith("billing-")
    result = run("--stage", "dev", "--stack-name", "Billing", "teardown", "--yes")
    assert result.exit_code == 0, result.output
    assert not any(_remaining("dev", "Billing").values())


def test_buckets_of_another_region_or_untagged_are_not_the_stages(run):
    """The same stage deployed in another region of the account, and a look-alike bucket without the tags."""
    boto3.client("s3").create_bucket(Bucket=_bucket_name("dev", "untagged"))
    eu = boto3.client("s3", region_name="eu-west-1")
    eu.create_bucket(
        Bucket=_bucket_name("dev", "ireland"), CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    eu.put_bucket_tagging(
        Bucket=_bucket_name("dev", "ireland"), Tagging={"TagSet": [{"Key": STAGE_TAG, "Value": "dev"}]}
    )
    result = run("--stage", "dev", "teardown", "--yes")
    assert result.exit_code == 0 and "Nothing of stage 'dev' is left" in result.output
    assert sorted(_buckets("dev")) == sorted([_bucket_name("dev", "untagged"), _bucket_name("dev", "ireland")])


def test_nothing_left_says_so(run):
    result = run("--stage", "qa", "teardown")
    assert result.exit_code == 0 and "Nothing of stage 'qa' is left" in result.output


#: S3 authorizes these calls under other action names (the IAM Service Authorization Reference).
S3_ACTIONS = {
    "ListBuckets": "s3:ListAllMyBuckets",
    "ListObjectVersions": "s3:ListBucketVersions",
    "DeleteObjects": "s3:DeleteObjectVersion",
}  # each key is deleted by version id


def test_the_documented_permissions_cover_every_call(run, monkeypatch):
    """Every API call a full teardown makes (recorded from botocore) is named in docs/deploy.md's list."""
    from pathlib import Path

    from botocore.client import BaseClient

    calls: set[str] = set()
    original = BaseClient._make_api_call

    def record(self, operation_name, api_params):
        prefix = self.meta.service_model.signing_name  # the IAM prefix: sqs, logs, scheduler, s3...
        calls.add(
            S3_ACTIONS.get(operation_name, f"s3:{operation_name}") if prefix == "s3" else f"{prefix}:{operation_name}"
        )
        return original(self, operation_name, api_params)

    _leave_behind("dev")
    monkeypatch.setattr(BaseClient, "_make_api_call", record)
    assert run("--stage", "dev", "teardown", "--yes").exit_code == 0
    monkeypatch.undo()
    deploy = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = deploy.split("Its credentials need", 1)[1].split("\n\n", 1)[0]
    assert {"s3:ListAllMyBuckets", "s3:DeleteObjectVersion", "s3:DeleteBucket", "kms:ScheduleKeyDeletion"} <= calls
    assert sorted(action for action in calls if f"`{action}`" not in section) == []
