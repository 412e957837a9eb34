"""The stage's own KMS key (``encryption`` in ``cdk.json``): one customer-managed key for every queue, table,
bucket, schedule, log group and the alarm topic the stage makes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .values import SettingsError, reject_unknown

#: The key named by its key ARN: IAM statements and key policies match key ARNs, never an alias's.
_KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]{1,2000}$")
_EXAMPLE = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
SETTINGS_KEY = "encryption"


@dataclass(frozen=True)
class EncryptionSettings:
    """Either the stack creates the stage's key (``create``) or it uses the team's own (``kms_key_arn``)."""

    #: An existing customer-managed key; its policy is the team's (``docs/deploy.md``, "Your own key").
    kms_key_arn: str | None = None
    #: ``True``: the stack creates the key, with rotation and exactly the service statements the stage needs.
    create: bool = False


def build_encryption(raw: Any, where: str) -> EncryptionSettings | None:
    """``None`` when absent: the stage keeps AWS-owned and AWS-managed keys, as before."""
    if raw is None:
        return None
    where = f"{where}: {SETTINGS_KEY}"
    usage = f'use {{"kms_key_arn": "{_EXAMPLE}"}} (your key) or {{"create": true}} (the stack makes one)'
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where} must be an object; {usage}")
    reject_unknown(raw, ("kms_key_arn", "create"), where)
    arn, create = raw.get("kms_key_arn"), raw.get("create", False)
    if not isinstance(create, bool):
        raise SettingsError(f"{where}: create {create!r} must be true or false; {usage}")
    if (arn is None) == (not create):
        raise SettingsError(f"{where}: give exactly one of kms_key_arn and create: true; {usage}")
    if arn is not None and (not isinstance(arn, str) or not _KMS_KEY_ARN.match(arn)):
        raise SettingsError(
            f"{where}: kms_key_arn {arn!r} is not a KMS key ARN (an alias's is not accepted: key policies and IAM "
            f"match the key's own ARN); e.g. {_EXAMPLE}"
        )
    return EncryptionSettings(kms_key_arn=arn, create=create)
