"""``doctor``'s check of the stage's own KMS key (``encryption``): enabled, and its policy admitting the services
that write with it as themselves.

The key is found where it is used, on a tier queue (``KmsMasterKeyId``), not in ``cdk.json``: a key changed by
hand counts as it is. A queue under SSE-SQS means the stage has no key of its own, and no check is made. A key
that is disabled or pending deletion fails the stage at once (nothing can be sent or received), so it fails the
check; a policy without CloudWatch (alarm notifications are then dropped) or CloudWatch Logs (the functions'
log groups reject writes) fails it too, with the statement to add (``docs/deploy.md``, "Your own key").

Its AWS calls: one ``GetQueueAttributes``, one ``DescribeKey``, one ``GetKeyPolicy``.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .doctor import FAIL, OK, UNREADABLE, Check, Clients, _fix_if_denied, _reason

CHECK_NAME = "Stage key"
#: What each service must be allowed on the key: (principal, actions); ``{region}`` is the key's region.
REQUIRED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cloudwatch.amazonaws.com", ("kms:Decrypt", "kms:GenerateDataKey")),
    ("logs.{region}.amazonaws.com", ("kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")),
)
DOCS = "docs/deploy.md, 'Your own key'"


def key_checks(queue_url: str, client: Clients) -> list[Check]:
    """``[]`` when the queue has no customer key (SSE-SQS); else one check of the key's state and policy."""
    from botocore.exceptions import ClientError

    try:
        attributes = client("sqs").get_queue_attributes(QueueUrl=queue_url, AttributeNames=["KmsMasterKeyId"])
    except ClientError as exc:
        reason = _reason(exc)
        return [Check(CHECK_NAME, UNREADABLE, reason, _fix_if_denied(reason, "grant sqs:GetQueueAttributes"))]
    key_id = attributes.get("Attributes", {}).get("KmsMasterKeyId")
    if not key_id or key_id.startswith("alias/aws/"):
        return []
    kms = client("kms")
    try:
        metadata = kms.describe_key(KeyId=key_id)["KeyMetadata"]
        policy = json.loads(kms.get_key_policy(KeyId=key_id, PolicyName="default")["Policy"])
    except ClientError as exc:
        reason = _reason(exc)
        return [
            Check(
                CHECK_NAME,
                UNREADABLE,
                f"{key_id}: {reason}",
                _fix_if_denied(reason, "grant kms:DescribeKey and kms:GetKeyPolicy on the stage key"),
            )
        ]
    arn = metadata["Arn"]
    if not metadata.get("Enabled") or metadata.get("KeyState") != "Enabled":
        return [
            Check(
                CHECK_NAME,
                FAIL,
                f"{arn} is {metadata.get('KeyState')}: no job can be sent or received, no letter read",
                "enable the key (aws kms enable-key, or cancel-key-deletion then enable-key) before anything else",
            )
        ]
    region = arn.split(":")[3]
    missing = [
        f"{principal.format(region=region)} ({', '.join(actions)})"
        for principal, actions in REQUIRED
        if not _allows(policy.get("Statement", []), principal.format(region=region), actions)
    ]
    if missing:
        return [
            Check(
                CHECK_NAME,
                FAIL,
                f"{arn}: its policy does not allow {'; '.join(missing)}",
                f"add the statements of {DOCS} to the key policy (alarms and log groups cannot use the key)",
            )
        ]
    return [Check(CHECK_NAME, OK, f"{arn}: enabled, its policy admits CloudWatch and CloudWatch Logs")]


def _allows(statements: Any, principal: str, actions: Sequence[str]) -> bool:
    """Some Allow statement names ``principal`` and covers every one of ``actions`` (wildcards as KMS reads them)."""
    statements = statements if isinstance(statements, list) else [statements]
    granted: set[str] = set()
    for statement in statements:
        if not isinstance(statement, Mapping) or statement.get("Effect") != "Allow":
            continue
        if principal not in _list(
            statement.get("Principal", {}).get("Service") if isinstance(statement.get("Principal"), Mapping) else None
        ):
            continue
        granted.update(
            action for action in actions if any(fnmatch.fnmatchcase(action, p) for p in _list(statement.get("Action")))
        )
    return granted == set(actions)


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
