"""``tiered-jobs teardown``: what a deleted stage left behind, listed, then deleted after confirmation.

``npx cdk destroy`` deletes the stack, but a stage that is not ``"disposable"`` retains its
queues, DLQs, tables, log groups and the alarm topic's KMS key (so no job and no letter is lost
by a mistaken destroy). This command finds them once the stack is gone:

- queues named ``tiered-jobs-<stage>-…``, tables and log groups named ``TieredJobs-<stage>-…``
  (CloudFormation's generated names), each only if tagged ``tiered-jobs:stage = <stage>`` (the
  stack tags them) or ``aws:cloudformation:stack-name = TieredJobs-<stage>`` (CloudFormation
  does), so stage ``dev`` never touches stage ``dev-eu``;
- the customer managed KMS key described ``Encrypts the tiered-jobs <stage> alarm topic`` (or
  carrying one of those tags);
- SSM parameters under ``/tiered-jobs/<stage>/`` (deleted with the stack, unless that failed).

Queues and tables are deleted, log groups too; a KMS key cannot be deleted at once, so its
deletion is scheduled (``--key-pending-days``, 7-30) and can be cancelled until then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .contract.names import STAGE_TAG, Ssm, alarm_key_description, queue_name, stack_name

#: The tag CloudFormation puts on every resource it creates (and leaves on retained ones).
CFN_STACK_TAG = "aws:cloudformation:stack-name"
#: KMS's documented range for a key's waiting period.
KEY_PENDING_DAYS = (7, 30)
SSM_DELETE_BATCH = 10  # DeleteParameters accepts at most 10 names


@dataclass(frozen=True)
class Leftover:
    kind: str  # queue | table | log group | kms key | ssm parameter
    name: str
    detail: str = ""
    #: What the delete call needs (a queue URL, a key id...): the name when empty.
    handle: str = ""


def _ours(tags: dict[str, str], stage: str) -> bool:
    return tags.get(STAGE_TAG) == stage or tags.get(CFN_STACK_TAG) == stack_name(stage)


def _pages(client: Any, operation: str, key: str, **params: Any) -> Iterator[Any]:
    for page in client.get_paginator(operation).paginate(**params):
        yield from page.get(key, [])


def stack_status(cloudformation: Any, stage: str) -> str | None:
    """The stage's stack status, or None when there is no stack (or only a deleted one)."""
    from botocore.exceptions import ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name(stage))["Stacks"]
    except ClientError as exc:
        if "does not exist" in exc.response.get("Error", {}).get("Message", ""):
            return None
        raise
    status = stacks[0]["StackStatus"] if stacks else None
    return None if status == "DELETE_COMPLETE" else status


def find_leftovers(client: Callable[[str], Any], stage: str) -> list[Leftover]:
    """Everything of ``stage`` that outlived its stack (``client(service)`` gives a boto3 client)."""
    found: list[Leftover] = []
    sqs = client("sqs")
    prefix = queue_name(stage, "")  # "tiered-jobs-<stage>-"
    for url in _pages(sqs, "list_queues", "QueueUrls", QueueNamePrefix=prefix):
        if _ours(sqs.list_queue_tags(QueueUrl=url).get("Tags", {}), stage):
            depth = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
            messages = int(depth["Attributes"].get("ApproximateNumberOfMessages", 0))
            found.append(Leftover("queue", url.rsplit("/", 1)[-1], f"{messages} messages", url))
    dynamodb = client("dynamodb")
    for table in _pages(dynamodb, "list_tables", "TableNames"):
        if table.startswith(f"{stack_name(stage)}-"):
            description = dynamodb.describe_table(TableName=table)["Table"]
            tags = {t["Key"]: t["Value"] for t in
                    dynamodb.list_tags_of_resource(ResourceArn=description["TableArn"]).get("Tags", [])}
            if _ours(tags, stage):
                found.append(Leftover("table", table, f"~{description.get('ItemCount', 0)} items"))
    logs = client("logs")
    for group in _pages(logs, "describe_log_groups", "logGroups", logGroupNamePrefix=f"{stack_name(stage)}-"):
        if _ours(logs.list_tags_log_group(logGroupName=group["logGroupName"]).get("tags", {}), stage):
            found.append(Leftover("log group", group["logGroupName"], f"{group.get('storedBytes', 0)} bytes"))
    kms = client("kms")
    for key in _pages(kms, "list_keys", "Keys"):
        metadata = kms.describe_key(KeyId=key["KeyId"])["KeyMetadata"]
        if metadata.get("KeyManager") != "CUSTOMER" or metadata.get("KeyState") in ("PendingDeletion", "PendingReplicaDeletion"):
            continue
        tags = {t["TagKey"]: t["TagValue"] for t in kms.list_resource_tags(KeyId=key["KeyId"]).get("Tags", [])}
        if metadata.get("Description") == alarm_key_description(stage) or _ours(tags, stage):
            found.append(Leftover("kms key", key["KeyId"], metadata.get("Description", "")))
    ssm = client("ssm")
    for parameter in _pages(ssm, "get_parameters_by_path", "Parameters", Path=f"{Ssm.prefix(stage)}/", Recursive=True):
        found.append(Leftover("ssm parameter", parameter["Name"]))
    return found


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
        elif item.kind == "kms key":
            answer = client("kms").schedule_key_deletion(KeyId=item.name, PendingWindowInDays=key_pending_days)
            done.append(f"scheduled KMS key {item.name} for deletion on {answer.get('DeletionDate')} "
                        f"(aws kms cancel-key-deletion --key-id {item.name} undoes it)")
    for start in range(0, len(parameters), SSM_DELETE_BATCH):
        chunk = parameters[start:start + SSM_DELETE_BATCH]
        client("ssm").delete_parameters(Names=chunk)
        done.extend(f"deleted SSM parameter {name}" for name in chunk)
    return done
