"""The stage manifest: what a publisher in another account needs to publish to a stage, in one JSON document.

A role of another account reads neither the stage's SSM parameters (standard parameters are not shared across
accounts) nor its stack's outputs, so the stack writes this document as an output and an SSM parameter, and
the stage's owners hand it to the other account (``docs/deploy.md``, "Publishers in other accounts"). It holds
the tier queues' URLs, the routes, the stage key's ARN (``null`` under SSE-SQS) and its own format version; a
reader refuses a version it does not know rather than guess.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .names import Ssm

#: The manifest's format; a reader refuses any other.
MANIFEST_VERSION = 1
#: The stack output holding it.
OUTPUT_KEY = "StageManifest"
_KEYS = ("schema_version", "stage", "queues", "routes", "kms_key_arn")


def parameter_name(stage: str) -> str:
    """The SSM parameter holding it, beside the stage's others."""
    return f"{Ssm.prefix(stage)}/manifest"


@dataclass(frozen=True)
class StageManifest:
    """One stage as a publisher in another account sees it."""

    stage: str
    #: Tier name -> its main queue's URL (never a DLQ: a publisher sends to tiers only).
    queues: Mapping[str, str]
    #: Job-type glob -> tier.
    routes: Mapping[str, str]
    kms_key_arn: str | None = None
    schema_version: int = field(default=MANIFEST_VERSION)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "stage": self.stage,
            "queues": dict(self.queues),
            "routes": dict(self.routes),
            "kms_key_arn": self.kms_key_arn,
        }

    @classmethod
    def from_json(cls, text: str, source: str) -> StageManifest:
        """Parse and check ``text``; ``source`` names it in messages. Raises ``ValueError`` with the fix."""
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{source}: not JSON ({exc}); pass the stack's {OUTPUT_KEY} output as it is") from None
        if not isinstance(raw, Mapping):
            raise ValueError(f"{source}: a stage manifest is a JSON object with {', '.join(_KEYS)}")
        version = raw.get("schema_version")
        if version != MANIFEST_VERSION:
            raise ValueError(
                f"{source}: schema_version {version!r} is not {MANIFEST_VERSION}, the one this tiered-jobs reads; "
                f"upgrade tiered-jobs (a newer manifest) or redeploy the stage (an older one)"
            )
        missing = [key for key in _KEYS if key not in raw]
        if missing:
            raise ValueError(f"{source}: the manifest lacks {', '.join(missing)}")
        queues, routes = raw["queues"], raw["routes"]
        for name, value in (("queues", queues), ("routes", routes)):
            if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
                raise ValueError(f"{source}: {name} must be an object of strings")
        unknown = sorted({tier for tier in routes.values() if tier not in queues})
        if unknown:
            raise ValueError(f"{source}: routes name tiers without a queue: {', '.join(unknown)}")
        return cls(
            stage=str(raw["stage"]),
            queues=dict(queues),
            routes=dict(routes),
            kms_key_arn=raw["kms_key_arn"],
            schema_version=version,
        )
