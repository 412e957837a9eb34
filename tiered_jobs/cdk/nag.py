"""cdk-nag v3: the rule packs of the app and one way to acknowledge a finding (with its reason); checkov's
findings are justified in the template itself (``skip_checkov``)."""

from __future__ import annotations

from typing import Any, cast

from aws_cdk import Acknowledgment, App, CfnResource, Validations
from cdk_nag import AwsSolutionsChecks, NagPack, ServerlessChecks
from constructs import IConstruct

#: The template metadata key checkov reads its skips from (``Metadata: {checkov: {skip: [{id, comment}]}}``).
CHECKOV_METADATA = "checkov"


def nag_packs(app: App) -> list[NagPack]:
    """AwsSolutions and Serverless: any unacknowledged finding fails synthesis."""
    return [AwsSolutionsChecks(app), ServerlessChecks(app)]


def add_nag_checks(app: App) -> None:
    Validations.of(app).add_plugins(*nag_packs(app))


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one finding on ``scope`` and its children only; ``reason`` says why it is safe here."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def skip_checkov(scope: IConstruct, check_id: str, comment: str) -> None:
    """Justify checkov's ``check_id`` on ``scope``'s resource (an L2's default child, or the L1 itself).

    checkov runs on the synthesized template, outside synthesis, so the justification travels in the
    resource's own metadata, where a reviewer of the template reads it beside the resource; a skip added
    twice for one check keeps the last comment."""
    resource = scope if isinstance(scope, CfnResource) else scope.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{scope.node.path}: checkov skips go on a CloudFormation resource, and this has none")
    if not comment.strip():
        raise ValueError(f"{scope.node.path}: a checkov skip of {check_id} needs a comment saying why it is safe")
    current = cast(dict[str, Any], resource.get_metadata(CHECKOV_METADATA) or {})
    skips = [skip for skip in current.get("skip", []) if skip["id"] != check_id]
    resource.add_metadata(CHECKOV_METADATA, {**current, "skip": [*skips, {"id": check_id, "comment": comment}]})
