"""Safe consumer deploys: a tier's consumer behind an alias that CodeDeploy shifts, rolling back on alarms.

Opt-in per tier (``deployment`` in ``cdk.json``, ``TierSettings.deployment``). With anything but
``all_at_once``, the consumer publishes a version per change (``Function.current_version``) behind
the alias :data:`ALIAS`, the tier's event source mapping invokes the alias, and a CodeDeploy
deployment group moves the alias from the old version to the new one by CodeDeploy's own canary or
linear configuration. When one of the tier's alarms that a bad release trips (:data:`ROLLBACK_ALARMS`:
jobs failing for good, the consumer crashing, letters piling up in the DLQ) fires during the shift,
CodeDeploy points the alias back at the old version and fails the stack update. Everything here is
CDK's and CodeDeploy's own machinery, never a deploy loop of ours: a loop would need a process that
outlives ``cdk deploy`` and its own rollback logic, which CodeDeploy already has.

``all_at_once`` (the default) builds none of it: no alias, no version, no CodeDeploy, and a
template unchanged for tiers that do not opt in.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from tiered_jobs.contract.names import Alarms

from .nag import acknowledge
from .settings import TierSettings
from .settings.tiers import ALL_AT_ONCE

#: The alias the tier's event source mapping invokes; CodeDeploy moves it between versions.
ALIAS = "live"
#: The tier's alarms that roll a shift back: a release that fails jobs for good (``failure-rate``),
#: crashes or times out its consumer (``errors``) or fills the DLQ (``dlq-depth``, the new letters).
#: Backlog, duration and throttling alarms are left out: they measure load, not the new code.
ROLLBACK_ALARMS: tuple[str, ...] = (Alarms.FAILURE_RATE, Alarms.ERRORS, Alarms.DLQ_DEPTH)
#: The AWS managed policy CDK gives CodeDeploy's role for Lambda deployments.
CODEDEPLOY_LAMBDA_POLICY = "service-role/AWSCodeDeployRoleForLambdaLimited"


def uses_codedeploy(tier: TierSettings) -> bool:
    return tier.deployment != ALL_AT_ONCE


def deployment_config(tier: TierSettings) -> codedeploy.ILambdaDeploymentConfig:
    """CodeDeploy's configuration of the tier's setting (its CDK constant, by name)."""
    config: codedeploy.ILambdaDeploymentConfig = getattr(codedeploy.LambdaDeploymentConfig, tier.deployment.upper())
    return config


class ConsumerDeployment(Construct):
    """The alias a canary tier's mapping invokes, and the deployment group that shifts it.

    Built in two steps because the alarms watch the consumer's metrics, which exist only once the
    function does: the alias first (the mapping needs it), then :meth:`roll_back_on` with the alarms.
    """

    def __init__(self, scope: Construct, construct_id: str, *, consumer: lambda_.Function, tier: TierSettings) -> None:
        super().__init__(scope, construct_id)
        self.alias = lambda_.Alias(self, "Alias", alias_name=ALIAS, version=consumer.current_version)
        self.group = codedeploy.LambdaDeploymentGroup(
            self,
            "Group",
            alias=self.alias,
            deployment_config=deployment_config(tier),
            # A failed shift and an alarm during it both move the alias back; a stopped deployment
            # (an operator's "stop") leaves it where it stands, as CodeDeploy does by default.
            auto_rollback=codedeploy.AutoRollbackConfig(failed_deployment=True, stopped_deployment=False),
            # The alarms' state must be readable: a deployment that cannot read them stops rather
            # than shifting blind.
            ignore_poll_alarms_failure=False,
        )
        acknowledge(
            self.group,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/" + CODEDEPLOY_LAMBDA_POLICY + "]",
            "CodeDeploy's service role for Lambda, the AWS managed policy CDK attaches to every Lambda deployment "
            "group: it reads alarms and reads and moves aliases (what a traffic shift does), reads only CodeDeploy's "
            "own S3 objects and invokes only hooks named CodeDeployHook_*; it grants no data access.",
        )

    def roll_back_on(self, alarms: Mapping[str, cloudwatch.IAlarm]) -> None:
        """Roll a shift back when any of the tier's :data:`ROLLBACK_ALARMS` fires (CodeDeploy's
        ``DEPLOYMENT_STOP_ON_ALARM``, which CDK turns on with the first alarm)."""
        for kind in ROLLBACK_ALARMS:
            self.group.add_alarm(alarms[kind])
