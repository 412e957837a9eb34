"""cdk-nag v3: the rule packs of the app and one way to acknowledge a finding (with its reason)."""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, Validations
from cdk_nag import AwsSolutionsChecks, NagPack, ServerlessChecks
from constructs import IConstruct


def nag_packs(app: App) -> list[NagPack]:
    """AwsSolutions and Serverless: any unacknowledged finding fails synthesis."""
    return [AwsSolutionsChecks(app), ServerlessChecks(app)]


def add_nag_checks(app: App) -> None:
    Validations.of(app).add_plugins(*nag_packs(app))


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one finding on ``scope`` and its children only; ``reason`` says why it is safe here."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
