"""``tiered-jobs teardown``: what a deleted stage left behind, listed, then deleted after confirmation.

``npx cdk destroy`` deletes the stack, but a stage that is not ``"disposable"`` retains its
queues, DLQs, tables, log groups, schedule group (with the role its pending one-time jobs run with),
discard archive bucket and the alarm topic's KMS key (so no job and no letter is lost by a mistaken
destroy). This command finds them once the stack is gone:

- queues named ``tiered-jobs-<stage>-…``, queues, tables and log groups named ``<stack>-…``
  (CloudFormation's generated names; the stack is ``TieredJobs-<stage>`` for this repository's app,
  or the stack a ``TieredJobs`` construct was in, given with ``--stack-name``), each only if
  tagged ``tiered-jobs:stage = <stage>`` (the construct tags them), so stage ``dev`` never touches
  stage ``dev-eu``, and the other resources of the stack the construct was in (CloudFormation tags
  them ``aws:cloudformation:stack-name`` too) are never taken;
- the schedule group ``tiered-jobs-<stage>`` (with the one-time jobs still pending in it), if it
  carries that tag;
- the one-time jobs' IAM roles under the path ``/tiered-jobs/<region>/<stage>/`` (this region's;
  retained with the group because the pending jobs run with them; a deploy after a destroy makes a
  new one beside the old), under the same tag rule;
- S3 buckets of this region named ``<stack, lower-cased>-…`` (CloudFormation's generated bucket
  names are lower-cased), under the same tag rule: the replay function's discard archive;
- the customer managed KMS key described ``Encrypts the tiered-jobs <stage> alarm topic`` (moto's
  CloudFormation cannot tag a key, so its description finds it; a key tagged for another stage is
  not taken), or tagged for the stage; a key this identity may not describe (``AccessDenied``:
  another team's key policy) is skipped;
- SSM parameters under ``/tiered-jobs/<stage>/`` (deleted with the stack, unless that failed).

Queues, tables, log groups and the schedule group (its schedules with it) are deleted, then the roles
(their inline policies first, and any policy attached by hand detached); a bucket is
emptied first (every object version and delete marker: it is versioned), then deleted. A KMS key
cannot be deleted at once, so its deletion is scheduled (``--key-pending-days``, 7-30) and can be
cancelled until then.

Nothing is listed while a stack that owns any of it still exists: the stack named, and every stack
the found resources' ``aws:cloudformation:stack-name`` tags name (``owners``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..contract.names import (
    STAGE_TAG,
    Schedules,
    Ssm,
    alarm_key_description,
    queue_name,
    stack_name,
)

#: The tag CloudFormation puts on every resource it creates (and leaves on retained ones).
CFN_STACK_TAG = "aws:cloudformation:stack-name"
#: KMS's documented range for a key's waiting period.
KEY_PENDING_DAYS = (7, 30)
#: The error codes of a call this identity may not make (KMS says ``AccessDeniedException``).
ACCESS_DENIED = ("AccessDeniedException", "AccessDenied")
SSM_DELETE_BATCH = 10  # DeleteParameters accepts at most 10 names
S3_DELETE_BATCH = 1000  # DeleteObjects accepts at most 1000 keys


@dataclass(frozen=True)
class Leftover:
    """A resource a stage's stack left behind (retained or outside it), and how to delete it."""

    kind: str  # queue | table | log group | schedule group | role | bucket | kms key | ssm parameter
    name: str
    detail: str = ""
    #: What the delete call needs (a queue URL, a key id...): the name when empty.
    handle: str = ""
    #: The stack that created it (its ``aws:cloudformation:stack-name`` tag), when tagged.
    owner: str = ""


def _ours(tags: dict[str, str], stage: str) -> bool:
    """Only the stage tag makes a resource the stage's: CloudFormation's stack tag is on every resource of the
    stack the construct was in (a library user's own tables and queues too), so it never decides."""
    return tags.get(STAGE_TAG) == stage


def _denied(exc: Exception) -> bool:
    """KMS answers ``AccessDeniedException`` on a key whose policy does not admit this identity."""
    from botocore.exceptions import ClientError

    return isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") in ACCESS_DENIED


def _pages(client: Any, operation: str, key: str, **params: Any) -> Iterator[Any]:
    for page in client.get_paginator(operation).paginate(**params):
        yield from page.get(key, [])


def stack_status(cloudformation: Any, stack: str) -> str | None:
    """Stack ``stack``'s status, or None when there is no such stack (or only a deleted one)."""
    from botocore.exceptions import ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as exc:
        if "does not exist" in exc.response.get("Error", {}).get("Message", ""):
            return None
        raise
    status = stacks[0]["StackStatus"] if stacks else None
    return None if status == "DELETE_COMPLETE" else status


def find_leftovers(client: Callable[[str], Any], stage: str, stack: str | None = None) -> list[Leftover]:
    """Everything of ``stage`` that outlived its stack (``client(service)`` gives a boto3 client).

    ``stack``: the name of the stack that held the stage (default ``TieredJobs-<stage>``, this
    repository's app); CloudFormation names the resources it generates after it.
    """
    stack = stack or stack_name(stage)
    found: list[Leftover] = []
    sqs = client("sqs")
    # Tier queues are named "tiered-jobs-<stage>-..."; others (the schedules DLQ) get CloudFormation's names.
    urls = {
        url
        for prefix in (queue_name(stage, ""), f"{stack}-")
        for url in _pages(sqs, "list_queues", "QueueUrls", QueueNamePrefix=prefix)
    }
    for url in sorted(urls):
        tags = sqs.list_queue_tags(QueueUrl=url).get("Tags", {})
        if _ours(tags, stage):
            depth = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
            messages = int(depth["Attributes"].get("ApproximateNumberOfMessages", 0))
            found.append(
                Leftover("queue", url.rsplit("/", 1)[-1], f"{messages} messages", url, tags.get(CFN_STACK_TAG, ""))
            )
    dynamodb = client("dynamodb")
    for table in _pages(dynamodb, "list_tables", "TableNames"):
        if table.startswith(f"{stack}-"):
            description = dynamodb.describe_table(TableName=table)["Table"]
            tags = {
                t["Key"]: t["Value"]
                for t in dynamodb.list_tags_of_resource(ResourceArn=description["TableArn"]).get("Tags", [])
            }
            if _ours(tags, stage):
                found.append(
                    Leftover(
                        "table", table, f"~{description.get('ItemCount', 0)} items", owner=tags.get(CFN_STACK_TAG, "")
                    )
                )
    logs = client("logs")
    for group in _pages(logs, "describe_log_groups", "logGroups", logGroupNamePrefix=f"{stack}-"):
        tags = logs.list_tags_log_group(logGroupName=group["logGroupName"]).get("tags", {})
        if _ours(tags, stage):
            found.append(
                Leftover(
                    "log group",
                    group["logGroupName"],
                    f"{group.get('storedBytes', 0)} bytes",
                    owner=tags.get(CFN_STACK_TAG, ""),
                )
            )
    found.extend(_schedule_group(client("scheduler"), stage))
    found.extend(_one_time_roles(client("iam"), stage, sqs.meta.region_name or "us-east-1"))
    found.extend(_buckets(client("s3"), stage, stack))
    found.extend(_alarm_keys(client("kms"), stage))
    ssm = client("ssm")
    for parameter in _pages(ssm, "get_parameters_by_path", "Parameters", Path=f"{Ssm.prefix(stage)}/", Recursive=True):
        found.append(Leftover("ssm parameter", parameter["Name"]))
    return found


def _schedule_group(scheduler: Any, stage: str) -> list[Leftover]:
    """The stage's schedule group, if it outlived the stack (its name is the stage's; its tags make it ours)."""
    from botocore.exceptions import ClientError

    name = Schedules.group_name(stage)
    try:
        arn = scheduler.get_schedule_group(Name=name)["Arn"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return []
        raise
    tags = {t["Key"]: t["Value"] for t in scheduler.list_tags_for_resource(ResourceArn=arn).get("Tags", [])}
    if not _ours(tags, stage):
        return []
    pending = sum(1 for _ in _pages(scheduler, "list_schedules", "Schedules", GroupName=name))
    return [Leftover("schedule group", name, f"{pending} schedules", owner=tags.get(CFN_STACK_TAG, ""))]


def _alarm_keys(kms: Any, stage: str) -> list[Leftover]:
    """The stage's alarm-topic key: by its description (untagged in local mode), or by the stage tag."""
    from botocore.exceptions import ClientError

    found = []
    for key in _pages(kms, "list_keys", "Keys"):
        try:
            metadata = kms.describe_key(KeyId=key["KeyId"])["KeyMetadata"]
        except ClientError as exc:
            if _denied(exc):
                continue  # another team's key: not ours to look at, let alone delete
            raise
        if metadata.get("KeyManager") != "CUSTOMER" or metadata.get("KeyState") in (
            "PendingDeletion",
            "PendingReplicaDeletion",
        ):
            continue
        try:
            tags = {t["TagKey"]: t["TagValue"] for t in _pages(kms, "list_resource_tags", "Tags", KeyId=key["KeyId"])}
        except ClientError as exc:
            if not _denied(exc):
                raise
            tags = {}
        described = metadata.get("Description") == alarm_key_description(stage)
        if (described and tags.get(STAGE_TAG, stage) == stage) or _ours(tags, stage):
            found.append(
                Leftover("kms key", key["KeyId"], metadata.get("Description", ""), owner=tags.get(CFN_STACK_TAG, ""))
            )
    return found


def _one_time_roles(iam: Any, stage: str, region: str) -> list[Leftover]:
    """The roles the stage's one-time jobs ran with (IAM is global: the description names the region).

    ``ListRoles`` returns each role's description but no tags, so the description picks the
    candidates (one ``ListRoleTags`` each) among every role of the account."""
    description = Schedules.one_time_role_description(stage, region)
    found = []
    for role in _pages(iam, "list_roles", "Roles"):
        if role.get("Description") != description:
            continue
        tags = {t["Key"]: t["Value"] for t in _pages(iam, "list_role_tags", "Tags", RoleName=role["RoleName"])}
        if _ours(tags, stage):
            found.append(
                Leftover("role", role["RoleName"], role.get("Description", ""), owner=tags.get(CFN_STACK_TAG, ""))
            )
    return found


def _delete_role(iam: Any, name: str) -> None:
    """IAM deletes only a role without policies: its inline ones deleted, any attached (by hand) detached first."""
    for policy in list(_pages(iam, "list_role_policies", "PolicyNames", RoleName=name)):
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    for attached in list(_pages(iam, "list_attached_role_policies", "AttachedPolicies", RoleName=name)):
        iam.detach_role_policy(RoleName=name, PolicyArn=attached["PolicyArn"])
    iam.delete_role(RoleName=name)


def _buckets(s3: Any, stage: str, stack: str) -> list[Leftover]:
    """The stage's buckets in this region (the discard archive), with how many object versions they hold."""
    from botocore.exceptions import ClientError

    found = []
    region = s3.meta.region_name or "us-east-1"
    for bucket in _pages(s3, "list_buckets", "Buckets", Prefix=f"{stack.lower()}-", BucketRegion=region):
        name = bucket["Name"]
        try:
            tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=name).get("TagSet", [])}
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "NoSuchTagSet":
                raise
            tags = {}
        if _ours(tags, stage):
            versions = sum(
                len(page.get("Versions", [])) + len(page.get("DeleteMarkers", []))
                for page in s3.get_paginator("list_object_versions").paginate(Bucket=name)
            )
            found.append(Leftover("bucket", name, f"{versions} object versions", owner=tags.get(CFN_STACK_TAG, "")))
    return found


def _empty_and_delete_bucket(s3: Any, name: str) -> int:
    """Delete every object version and delete marker of a (versioned) bucket, then the bucket; returns how many."""
    from tiered_jobs.operations.errors import OperatorError

    deleted = 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=name):
        objects = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in (*page.get("Versions", []), *page.get("DeleteMarkers", []))
        ]
        for start in range(0, len(objects), S3_DELETE_BATCH):
            answer = s3.delete_objects(
                Bucket=name, Delete={"Objects": objects[start : start + S3_DELETE_BATCH], "Quiet": True}
            )
            if answer.get("Errors"):
                error = answer["Errors"][0]
                raise OperatorError(
                    f"bucket {name}: could not delete {len(answer['Errors'])} object version(s), "
                    f"e.g. {error.get('Key')}: {error.get('Code')} {error.get('Message')}"
                )
            deleted += len(objects[start : start + S3_DELETE_BATCH])
    s3.delete_bucket(Bucket=name)
    return deleted


def delete_leftovers(client: Callable[[str], Any], leftovers: list[Leftover], key_pending_days: int) -> list[str]:
    """Delete each leftover; returns one line per action taken."""
    done: list[str] = []
    parameters = [item.name for item in leftovers if item.kind == "ssm parameter"]
    for item in leftovers:
        if item.kind == "queue":
            client("sqs").delete_queue(QueueUrl=item.handle)
            done.append(f"deleted queue {item.name}")
        elif item.kind == "table":
            client("dynamodb").delete_table(TableName=item.name)
            done.append(f"deleted table {item.name}")
        elif item.kind == "log group":
            client("logs").delete_log_group(logGroupName=item.name)
            done.append(f"deleted log group {item.name}")
        elif item.kind == "schedule group":
            client("scheduler").delete_schedule_group(Name=item.name)
            done.append(f"deleted schedule group {item.name} and its schedules")
        elif item.kind == "role":
            _delete_role(client("iam"), item.name)
            done.append(f"deleted role {item.name}")
        elif item.kind == "bucket":
            versions = _empty_and_delete_bucket(client("s3"), item.name)
            done.append(f"deleted bucket {item.name} and its {versions} object versions")
        elif item.kind == "kms key":
            answer = client("kms").schedule_key_deletion(KeyId=item.name, PendingWindowInDays=key_pending_days)
            done.append(
                f"scheduled KMS key {item.name} for deletion on {answer.get('DeletionDate')} "
                f"(aws kms cancel-key-deletion --key-id {item.name} undoes it)"
            )
    for start in range(0, len(parameters), SSM_DELETE_BATCH):
        chunk = parameters[start : start + SSM_DELETE_BATCH]
        client("ssm").delete_parameters(Names=chunk)
        done.extend(f"deleted SSM parameter {name}" for name in chunk)
    return done
