"""The AWS names a stage, its tiers and resources make, checked against AWS's length limits.

Without this, a stage and tier whose consumer name is too long for Lambda pass the settings and
fail later inside CDK (a ``RuntimeError`` from jsii) or at deployment. Each name is built by the
same function of ``tiered_jobs.contract.names`` the construct names the resource with, and each
limit is the one AWS states in its API reference (botocore's service models carry it; the settings
tests read it from there): a name over its limit is a ``SettingsError`` naming the name, the limit
and what to shorten.

Names CloudFormation generates (roles, log groups, tables, buckets) are not ours to check, and
fit by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tiered_jobs.contract.names import (
    Alarms,
    Schedules,
    Ssm,
    consumer_function_name,
    dashboard_name,
    function_name,
    queue_name,
)

from .values import SettingsError

#: Lambda ``CreateFunction`` ``FunctionName``: a bare name is "limited to 64 characters".
LAMBDA_FUNCTION_NAME_MAX = 64
#: SQS ``CreateQueue`` ``QueueName``: "up to 80 characters".
SQS_QUEUE_NAME_MAX = 80
#: CloudWatch ``PutMetricAlarm`` ``AlarmName``: at most 255.
CLOUDWATCH_ALARM_NAME_MAX = 255
#: CloudWatch ``PutDashboard`` ``DashboardName``: "The maximum length is 255".
CLOUDWATCH_DASHBOARD_NAME_MAX = 255
#: EventBridge Scheduler ``CreateScheduleGroup`` ``Name``: at most 64.
SCHEDULE_GROUP_NAME_MAX = 64
#: SSM ``PutParameter`` ``Name``: "the maximum length for a parameter name that you specify is 1011
#: characters", counting the ARN before it (``arn:aws:ssm:<region>:<account>:parameter/``, 45 in
#: us-east-2, longer in other partitions): 64 are kept for that ARN.
SSM_PARAMETER_NAME_MAX = 1011 - 64

_TIER_SSM_KEYS = (
    Ssm.TIER_QUEUE_URL,
    Ssm.TIER_QUEUE_ARN,
    Ssm.TIER_DLQ_URL,
    Ssm.TIER_DLQ_ARN,
    Ssm.TIER_IDEMPOTENCY_TTL,
    Ssm.TIER_RATE_LIMITS,
)
_SCHEDULE_SSM_KEYS = (Schedules.SSM_GROUP_NAME, Schedules.SSM_ROLE_ARN, Schedules.SSM_DLQ_ARN)


@dataclass(frozen=True)
class DerivedName:
    """One name the stack gives an AWS resource, the limit AWS sets on it, and what makes it up."""

    what: str
    name: str
    limit: int
    #: The settings it is made of, for the message: ``"the stage"``, ``"the stage or the tier 'bulk'"``.
    made_of: str


def derived_names(stage: str, tiers: Iterable[str], resources: Iterable[str] = ()) -> Iterator[DerivedName]:
    """Every name the construct derives from ``stage``, the tier names and the resource names."""
    stage_only = "the stage"
    yield DerivedName(
        "replay function name (Lambda)", function_name(stage, "replay"), LAMBDA_FUNCTION_NAME_MAX, stage_only
    )
    yield DerivedName("dashboard name (CloudWatch)", dashboard_name(stage), CLOUDWATCH_DASHBOARD_NAME_MAX, stage_only)
    yield DerivedName(
        "schedule group name (EventBridge Scheduler)", Schedules.group_name(stage), SCHEDULE_GROUP_NAME_MAX, stage_only
    )
    yield DerivedName("alarm name (CloudWatch)", Schedules.dlq_alarm_name(stage), CLOUDWATCH_ALARM_NAME_MAX, stage_only)
    for parameter in (
        Ssm.tiers(stage),
        Ssm.routes(stage),
        Ssm.replay_function_name(stage),
        Ssm.idempotency_table_name(stage),
        Ssm.discard_archive_bucket(stage),
        Ssm.publisher_policy_arn(stage),
        *(Schedules.ssm(stage, key) for key in _SCHEDULE_SSM_KEYS),
    ):
        yield DerivedName("SSM parameter name", parameter, SSM_PARAMETER_NAME_MAX, stage_only)
    for tier in tiers:
        made_of = f"the stage or the tier {tier!r}"
        yield DerivedName(
            "consumer function name (Lambda)", consumer_function_name(stage, tier), LAMBDA_FUNCTION_NAME_MAX, made_of
        )
        for dlq in (False, True):
            yield DerivedName("queue name (SQS)", queue_name(stage, tier, dlq=dlq), SQS_QUEUE_NAME_MAX, made_of)
        for kind in Alarms.KINDS:
            yield DerivedName(
                "alarm name (CloudWatch)", Alarms.name(stage, tier, kind), CLOUDWATCH_ALARM_NAME_MAX, made_of
            )
        for key in _TIER_SSM_KEYS:
            yield DerivedName("SSM parameter name", Ssm.tier(stage, tier, key), SSM_PARAMETER_NAME_MAX, made_of)
    for resource in resources:
        yield DerivedName(
            "SSM parameter name",
            Ssm.resource(stage, resource),
            SSM_PARAMETER_NAME_MAX,
            f"the stage or the resource {resource!r}",
        )


def check_names(where: str, stage: str, tiers: Iterable[str], resources: Iterable[str] = ()) -> None:
    """Refuse the settings when a derived name is over AWS's limit, with what to shorten and by how much."""
    for derived in derived_names(stage, tiers, resources):
        over = len(derived.name) - derived.limit
        if over > 0:
            raise SettingsError(
                f"{where}: stage {stage!r}: the {derived.what} {derived.name!r} is {len(derived.name)} characters, "
                f"over AWS's limit of {derived.limit}; shorten {derived.made_of} by {over} character(s)"
            )
