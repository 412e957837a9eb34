"""Jobs at a time (one-time ``at()`` schedules) and the listing of a stage's scheduled jobs.

The publisher uses :class:`OneTimeJobs` when a job's time is further away than SQS can delay a
message (15 minutes); ``tiered-jobs schedules`` uses :func:`list_scheduled`, and the job lookup
:func:`one_time_job`. Where things are
comes from :func:`from_ssm`, :func:`from_stack_outputs` or :func:`from_env`, like the queues.

A one-time schedule is named from the job type and idempotency key
(:func:`~tiered_jobs.contract.schedules.one_time_schedule_name`): publishing the same job again
finds it there ("already scheduled", nothing sent twice), and ``cancel`` deletes it while its time
has not come. It runs with the stage's one-time role, sends the envelope to the tier queue (with the
job's tenant as ``MessageGroupId``), retries and dead-letters like the periodic schedules, and
deletes itself after it ran (``ActionAfterCompletion=DELETE``, which Scheduler does some time after
the fire, not at once).

Its time is a whole minute: Scheduler invokes with one-minute granularity, so an ``at()`` with
seconds may fire anywhere in its minute, before the time asked for. :func:`on_a_whole_minute`
rounds up, so a job never runs early.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from tiered_jobs.stage.discovery import DiscoveryError

from ..contract import cron
from ..contract.names import Env, Outputs, Ssm
from ..contract.names import Schedules as Names
from ..contract.schedules import (
    ONE_TIME_PREFIX,
    RETRY_MAX_ATTEMPTS,
    RETRY_MAX_EVENT_AGE_SECONDS,
    one_time_schedule_name,
)

#: The latest year Scheduler's expressions accept (its cron year field: 1970-2199).
LATEST_YEAR = cron.YEARS[1]
#: ``Description`` of a schedule: at most 512 characters.
_MAX_DESCRIPTION = 512
#: How a debounced job's schedule's description starts (the job lookup tells its run by it).
DEBOUNCED_DESCRIPTION_PREFIX = "debounced: "


@dataclass(frozen=True)
class SchedulingTarget:
    """Where a stage's one-time jobs are created and what they run with."""

    group_name: str
    role_arn: str
    dlq_arn: str
    #: ``{tier: queue ARN}``: a schedule's target is the queue's ARN (not its URL).
    queue_arns: Mapping[str, str]
    #: The stage's own KMS key (``encryption``): a schedule keeps its payload under it; ``None``: an AWS-owned key.
    kms_key_arn: str | None = None

    def queue_arn(self, tier: str) -> str:
        try:
            return self.queue_arns[tier]
        except KeyError:
            raise DiscoveryError(
                f"no queue ARN known for tier {tier!r} (known: {', '.join(sorted(self.queue_arns))})"
            ) from None

    def tier_of(self, queue_arn: str) -> str | None:
        return next((tier for tier, arn in self.queue_arns.items() if arn == queue_arn), None)


def from_ssm(stage: str, *, ssm: Any = None) -> SchedulingTarget:
    """From the SSM parameters of ``stage`` (``ssm:GetParameters`` on ``/tiered-jobs/<stage>/*``)."""
    from tiered_jobs.stage.discovery import get_parameters

    if ssm is None:
        import boto3

        ssm = boto3.client("ssm")
    names = {key: Names.ssm(stage, key) for key in (Names.SSM_GROUP_NAME, Names.SSM_ROLE_ARN, Names.SSM_DLQ_ARN)}
    # Asked in the same call; absent on a stage without its own key.
    key_name = Names.ssm(stage, Names.SSM_KMS_KEY_ARN)
    head = get_parameters(ssm, [*names.values(), key_name, Ssm.tiers(stage)])
    missing = [name for name in names.values() if name not in head]
    if missing or Ssm.tiers(stage) not in head:
        raise DiscoveryError(
            f"SSM parameter(s) {', '.join(missing or [Ssm.tiers(stage)])} not found: is stage {stage!r} deployed "
            "with scheduled jobs (a stack version that has them) in this account and region?"
        )
    tiers = [name.strip() for name in head[Ssm.tiers(stage)].split(",") if name.strip()]
    arns = get_parameters(ssm, [Ssm.tier(stage, tier, Ssm.TIER_QUEUE_ARN) for tier in tiers])
    return SchedulingTarget(
        group_name=head[names[Names.SSM_GROUP_NAME]],
        role_arn=head[names[Names.SSM_ROLE_ARN]],
        dlq_arn=head[names[Names.SSM_DLQ_ARN]],
        queue_arns={
            tier: arns[Ssm.tier(stage, tier, Ssm.TIER_QUEUE_ARN)]
            for tier in tiers
            if Ssm.tier(stage, tier, Ssm.TIER_QUEUE_ARN) in arns
        },
        kms_key_arn=head.get(key_name),
    )


def from_outputs(outputs: Mapping[str, str], tiers: list[str], where: str) -> SchedulingTarget:
    """From a stack's outputs (``tiers``: the tier names, as discovery found them)."""
    missing = [
        key for key in (Names.OUTPUT_GROUP_NAME, Names.OUTPUT_ROLE_ARN, Names.OUTPUT_DLQ_ARN) if key not in outputs
    ]
    if missing:
        raise DiscoveryError(f"{where} has no output(s) {', '.join(missing)}: deploy a version with scheduled jobs")
    return SchedulingTarget(
        group_name=outputs[Names.OUTPUT_GROUP_NAME],
        role_arn=outputs[Names.OUTPUT_ROLE_ARN],
        dlq_arn=outputs[Names.OUTPUT_DLQ_ARN],
        queue_arns={
            tier: outputs[Outputs.tier(tier, Outputs.QUEUE_ARN)]
            for tier in tiers
            if Outputs.tier(tier, Outputs.QUEUE_ARN) in outputs
        },
        kms_key_arn=outputs.get(Names.OUTPUT_KMS_KEY_ARN),
    )


def from_stack_outputs(stack_name: str, tiers: list[str], *, cloudformation: Any = None) -> SchedulingTarget:
    if cloudformation is None:
        import boto3

        cloudformation = boto3.client("cloudformation")
    stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    outputs = {item["OutputKey"]: item["OutputValue"] for item in stack.get("Outputs", [])}
    return from_outputs(outputs, tiers, f"stack {stack_name}")


def locate(stage: str, stack_name: str, tiers: list[str], *, cloudformation: Any, ssm: Any) -> SchedulingTarget:
    """The CLI's look-up: the stack's outputs, else the stage's SSM parameters."""
    from botocore.exceptions import ClientError

    try:
        return from_stack_outputs(stack_name, tiers, cloudformation=cloudformation)
    except (DiscoveryError, ClientError) as by_stack:
        try:
            return from_ssm(stage, ssm=ssm)
        except DiscoveryError:
            raise by_stack from None


def from_env(environ: Mapping[str, str] | None = None) -> SchedulingTarget:
    """``TIERED_JOBS_SCHEDULE_GROUP``, ``..._SCHEDULER_ROLE_ARN``, ``..._SCHEDULES_DLQ_ARN``, optionally
    ``..._SCHEDULES_KMS_KEY_ARN``,
    ``..._QUEUE_ARN_<TIER>``."""
    environ = os.environ if environ is None else environ
    missing = [name for name in (Names.ENV_GROUP_NAME, Names.ENV_ROLE_ARN, Names.ENV_DLQ_ARN) if not environ.get(name)]
    if missing:
        raise DiscoveryError(f"scheduling is not configured: set {', '.join(missing)} (see the stack's outputs)")
    prefix = Env.tier_var(Names.QUEUE_ARN_VAR, "")
    return SchedulingTarget(
        group_name=environ[Names.ENV_GROUP_NAME],
        role_arn=environ[Names.ENV_ROLE_ARN],
        dlq_arn=environ[Names.ENV_DLQ_ARN],
        queue_arns={
            name[len(prefix) :].lower().replace("_", "-"): value
            for name, value in environ.items()
            if name.startswith(prefix) and len(name) > len(prefix) and value
        },
        kms_key_arn=environ.get(Names.ENV_KMS_KEY_ARN) or None,
    )


# -- one-time jobs ------------------------------------------------------------------------------


def fire_time_problem(at: Any, now: datetime) -> str | None:
    """Why ``at`` cannot be a job's time (``None`` when it can)."""
    if not isinstance(at, datetime):
        return f"at must be a datetime with a time zone, got {type(at).__name__}"
    if at.tzinfo is None or at.utcoffset() is None:
        return (
            f"at {at.isoformat()} is a naive datetime: give it a time zone "
            "(e.g. datetime(..., tzinfo=timezone.utc) or ZoneInfo('Europe/Paris'))"
        )
    if at <= now:
        return f"at {at.isoformat()} is not in the future (now {now.isoformat(timespec='seconds')})"
    if at.astimezone(timezone.utc).year > LATEST_YEAR:
        return f"at {at.isoformat()} is beyond EventBridge Scheduler's range (up to the year {LATEST_YEAR})"
    return None


def on_a_whole_minute(at: datetime) -> datetime:
    """``at`` rounded up to the next whole minute (unchanged when it is on one), in ``at``'s own time zone.

    Scheduler's granularity is one minute, and ``FlexibleTimeWindow`` ``OFF`` still fires anywhere
    within the minute of the ``at()`` time: from a whole minute on, the fire is never before ``at``.
    """
    utc = at.astimezone(timezone.utc)
    if utc.second or utc.microsecond:
        utc = utc.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return utc.astimezone(at.tzinfo)


@dataclass(frozen=True)
class Scheduled:
    """The outcome of scheduling one job."""

    schedule_name: str
    fire_at: datetime
    #: A schedule with this name existed already: the job was scheduled by an earlier publish.
    already_scheduled: bool


@dataclass(frozen=True)
class Cancellation:
    """What ``cancel`` found: ``cancelled`` (it was pending; deleted, it will not run), ``not found`` (never
    scheduled, or it ran and Scheduler deleted its schedule) or ``already sent`` (its time has come: it fired or
    is firing, and its schedule lingers until Scheduler deletes it; nothing was cancelled)."""

    outcome: Literal["cancelled", "not found", "already sent"]
    #: The schedule's time, when one was found.
    fire_at: datetime | None = None

    @property
    def cancelled(self) -> bool:
        return self.outcome == "cancelled"


class OneTimeJobs:
    """Creates and cancels the one-time schedules of a stage (``scheduler`` is a boto3 client)."""

    def __init__(
        self,
        target: SchedulingTarget,
        scheduler: Any,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ):
        self.target = target
        self.scheduler = scheduler
        self._clock = clock

    def create(
        self, *, job_type: str, idempotency_key: str, tier: str, fire_at: datetime, body: str, tenant: str | None = None
    ) -> Scheduled:
        """``fire_at`` is rounded up to a whole minute (:func:`on_a_whole_minute`); the result reports that time.

        ``tenant``: the job's tenant, sent as the message's ``MessageGroupId`` (SQS fair queues), as the
        publisher's direct sends do; the envelope in ``body`` carries it either way.
        """
        from botocore.exceptions import ClientError

        fire_at = on_a_whole_minute(fire_at)
        request = self._request(job_type, idempotency_key, tier, fire_at, body, tenant)
        try:
            self.scheduler.create_schedule(**request)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConflictException":
                return Scheduled(request["Name"], fire_at, already_scheduled=True)
            raise
        return Scheduled(request["Name"], fire_at, already_scheduled=False)

    def debounce(
        self, *, job_type: str, idempotency_key: str, tier: str, fire_at: datetime, body: str, tenant: str | None = None
    ) -> Scheduled:
        """The debounced job's run at ``fire_at`` with ``body``: its schedule created, or, when a publish of the
        burst made it already, moved there with this body ("last wins"; ``already_scheduled`` then).

        ``CreateSchedule`` first (a burst's first publish is one call), ``UpdateSchedule`` on a conflict
        (each later one is two): Scheduler has no upsert. The update gives every field again, as
        ``UpdateSchedule`` replaces the whole schedule. A schedule deleted between the two calls (its run
        fired and Scheduler removed it) is created again, once.
        """
        from botocore.exceptions import ClientError

        fire_at = on_a_whole_minute(fire_at)
        request = self._request(job_type, idempotency_key, tier, fire_at, body, tenant, debounced=True)
        for _ in range(2):
            try:
                self.scheduler.create_schedule(**request)
                return Scheduled(request["Name"], fire_at, already_scheduled=False)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConflictException":
                    raise
            try:
                self.scheduler.update_schedule(**request, State="ENABLED")
                return Scheduled(request["Name"], fire_at, already_scheduled=True)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                    raise
        raise RuntimeError(f"schedule {request['Name']} was created and deleted twice while being debounced")

    def _request(
        self,
        job_type: str,
        idempotency_key: str,
        tier: str,
        fire_at: datetime,
        body: str,
        tenant: str | None,
        *,
        debounced: bool = False,
    ) -> dict[str, Any]:
        """The ``CreateSchedule`` (and ``UpdateSchedule``) arguments of a job's one-time schedule."""
        name = one_time_schedule_name(job_type, idempotency_key)
        target: dict[str, Any] = {
            "Arn": self.target.queue_arn(tier),
            "RoleArn": self.target.role_arn,
            "Input": body,
            "DeadLetterConfig": {"Arn": self.target.dlq_arn},
            "RetryPolicy": {
                "MaximumEventAgeInSeconds": RETRY_MAX_EVENT_AGE_SECONDS,
                "MaximumRetryAttempts": RETRY_MAX_ATTEMPTS,
            },
        }
        if tenant is not None:
            target["SqsParameters"] = {"MessageGroupId": tenant}
        description = f"{DEBOUNCED_DESCRIPTION_PREFIX if debounced else ''}{job_type} key {idempotency_key}"
        # The payload (up to 256 KB of a job's data) is kept under the stage's own key when it has one.
        key = {"KmsKeyArn": self.target.kms_key_arn} if self.target.kms_key_arn else {}
        return {
            **key,
            "Name": name,
            "GroupName": self.target.group_name,
            "ScheduleExpression": cron.At.of(fire_at),
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "ActionAfterCompletion": "DELETE",
            "Description": description[:_MAX_DESCRIPTION],
            "Target": target,
        }

    def cancel(self, job_type: str, idempotency_key: str) -> bool:
        """Delete the pending job; ``False`` when nothing was cancelled (see :meth:`cancellation`)."""
        return self.cancellation(job_type, idempotency_key).cancelled

    def cancellation(self, job_type: str, idempotency_key: str) -> Cancellation:
        """Cancel the job if it is still pending, and say what was found.

        The schedule's time is read first (``GetSchedule``): once its minute has begun, Scheduler may
        have sent the job (``ActionAfterCompletion=DELETE`` removes the schedule only some time after),
        so the answer is ``already sent`` and the schedule is left alone. A cancel in the last moment
        before the minute can still race the fire; Scheduler offers no conditional delete.
        """
        from botocore.exceptions import ClientError

        name = one_time_schedule_name(job_type, idempotency_key)
        try:
            schedule = self.scheduler.get_schedule(Name=name, GroupName=self.target.group_name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return Cancellation("not found")
            raise
        fire_at = _at_time(schedule)
        if fire_at is not None and self._clock() >= fire_at.replace(second=0, microsecond=0):
            return Cancellation("already sent", fire_at)
        try:
            self.scheduler.delete_schedule(Name=name, GroupName=self.target.group_name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return Cancellation("not found", fire_at)
            raise
        return Cancellation("cancelled", fire_at)


def _at_time(schedule: Mapping[str, Any]) -> datetime | None:
    """The UTC time of a one-time schedule's ``at()`` (``None``: not an ``at()`` expression)."""
    try:
        expression = cron.parse(schedule.get("ScheduleExpression", ""))
        if not isinstance(expression, cron.At):
            return None
        when = expression.fire_time(cron.zone(schedule.get("ScheduleExpressionTimezone") or "UTC"))
    except cron.ScheduleExpressionError:
        return None
    return when.astimezone(timezone.utc) if when is not None else None


# -- listing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduledJob:
    """One schedule of the stage's group, as ``tiered-jobs schedules`` shows it."""

    name: str
    kind: str  # "periodic" | "one-time"
    expression: str
    timezone: str
    state: str
    job_type: str | None
    #: The idempotency key (one-time) or its pattern (periodic: ``schedule:<name>:<scheduled time>``).
    idempotency_key: str | None
    tier: str | None
    next_fire: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "next_fire": self.next_fire.isoformat() if self.next_fire else None}


def describe(schedule: Mapping[str, Any], target: SchedulingTarget | None, now: datetime) -> ScheduledJob:
    """A ``GetSchedule`` answer, with its next fire time computed (``None``: disabled or no more fires)."""
    expression_text = schedule["ScheduleExpression"]
    zone_name = schedule.get("ScheduleExpressionTimezone") or "UTC"
    body: dict[str, Any] = {}
    try:
        body = json.loads(schedule.get("Target", {}).get("Input") or "{}")
    except ValueError:
        pass
    next_fire = None
    try:
        expression = cron.parse(expression_text)
        start = schedule.get("StartDate") or schedule.get("CreationDate")
        next_fire = cron.next_fire(expression, cron.zone(zone_name), now, start=as_utc_datetime(start))
        end = as_utc_datetime(schedule.get("EndDate"))
        if next_fire is not None and end is not None and next_fire > end:
            next_fire = None
    except cron.ScheduleExpressionError:
        pass
    if schedule.get("State", "ENABLED") != "ENABLED":
        next_fire = None
    arn = schedule.get("Target", {}).get("Arn", "")
    return ScheduledJob(
        name=schedule["Name"],
        kind="one-time" if schedule["Name"].startswith(ONE_TIME_PREFIX) else "periodic",
        expression=expression_text,
        timezone=zone_name,
        state=schedule.get("State", "ENABLED"),
        job_type=body.get("type") if isinstance(body, dict) else None,
        idempotency_key=body.get("idempotency_key") if isinstance(body, dict) else None,
        tier=(target.tier_of(arn) if target else None) or (arn.rsplit(":", 1)[-1] if arn else None),
        next_fire=next_fire,
    )


def one_time_job(
    scheduler: Any, group_name: str, job_type: str, idempotency_key: str, now: datetime | None = None
) -> ScheduledJob | None:
    """The job's one-time schedule in the stage's group, found by its name (one ``GetSchedule``, no
    listing: the name comes from the type and key); ``None`` when there is none (never scheduled,
    cancelled, or fired and deleted by Scheduler). One that fired but lingers has no ``next_fire``."""
    from botocore.exceptions import ClientError

    try:
        detail = scheduler.get_schedule(Name=one_time_schedule_name(job_type, idempotency_key), GroupName=group_name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":  # the schedule or its group
            return None
        raise
    return describe(detail, None, now or datetime.now(timezone.utc))


def list_scheduled(scheduler: Any, target: SchedulingTarget, now: datetime | None = None) -> list[ScheduledJob]:
    """Every schedule of the stage's group (periodic first, then one-time), soonest first in each."""
    now = now or datetime.now(timezone.utc)
    jobs = []
    for page in scheduler.get_paginator("list_schedules").paginate(GroupName=target.group_name):
        for summary in page.get("Schedules", []):
            detail = scheduler.get_schedule(Name=summary["Name"], GroupName=target.group_name)
            jobs.append(describe(detail, target, now))
    far = datetime.max.replace(tzinfo=timezone.utc)
    return sorted(jobs, key=lambda job: (job.kind != "periodic", job.next_fire or far, job.name))


def as_utc_datetime(value: Any) -> datetime | None:
    """boto3 gives datetimes; moto's JSON may give epoch seconds."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return datetime.fromtimestamp(float(value), timezone.utc)
