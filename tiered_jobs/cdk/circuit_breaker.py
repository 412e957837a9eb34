"""A tier's circuit breaker: two alarms whose Lambda actions invoke the replay function.

With partial batch responses Lambda does not slow its polling when records fail, so during a
downstream outage every job would spend its attempts at full speed and the DLQ would flood. The
breaker is made of AWS parts only, never a polling loop of ours: CloudWatch evaluates the alarms,
and its Lambda alarm action invokes the replay function, which already may update its stage's
mappings (``tiered_jobs.replay.breaker`` decides what each change of state does).

* ``circuit-breaker``: the share of the tier's attempts that failed transiently
  (``JobsRetried`` / ``JobsProcessed``) over ``circuit_breaker_minutes``, 0 below
  ``circuit_breaker_min_jobs`` attempts. ALARM opens the breaker and pages (the alarm topic);
  OK (a window without datapoints, since nothing is received) starts the probe, and does not
  page: it proves only that nothing ran, so it is no news for the on-call.
* ``circuit-probe``: ``JobsSucceeded`` > 0 over a minute. Its ALARM while the breaker is
  half-open closes it. It never pages itself: in a healthy tier it sits in ALARM, it is only a signal.

The page when it closes is the replay function's (``sns:Publish`` on the alarm topic, granted only
to a stack with a breaker): only it knows that a probe, not a healthy tier, made the probe alarm fire.
So there are two pages per outage, one when it opens and one when it closes.

An alarm acts only on a change of state, and each change is one asynchronous invocation, which
Lambda tries three times. Two parts keep a lost or failed one from stranding a breaker (a mapping
disabled while its alarm sits in OK without data, until SQS's retention deletes the jobs):

* **the reconciler**: an EventBridge rule invokes the replay function every five minutes with
  ``{"action": "reconcile", "tiers": [...]}`` (``tiered_jobs.replay.reconcile``), which reads the
  alarms (``cloudwatch:DescribeAlarms`` on these alarms only) and does what a lost event would have;
* **an on-failure destination**: an asynchronous event whose three tries failed goes to the alarm
  topic (Lambda's destination record: the event, the error), with the role's existing right to
  publish there, so the on-call sees a breaker that could not act.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import ArnFormat, CfnResource, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from tiered_jobs.contract.names import Alarms, Env, Metrics

from .alarms import AlarmSpec, first_command, page_on
from .tier import Tier

#: What SNS asks of a publisher to a topic encrypted with a customer-managed key.
PAGE_KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")
#: How often the reconciler looks for a stranded breaker (``tiered_jobs.replay.reconcile.GRACE`` is as long).
RECONCILE_SCHEDULE = "rate(5 minutes)"
#: The service that invokes the function for the reconcile rule.
EVENTS_PRINCIPAL = "events.amazonaws.com"
#: Lambda's own retries of an asynchronous event (its default, stated): three tries, then the destination.
ASYNC_RETRY_ATTEMPTS = 2


def breaker_spec(tier: Tier) -> AlarmSpec:
    """The opening alarm's metric math, from the tier's settings (``circuit_breaker_percent`` must be set)."""
    settings = tier.settings
    assert settings.circuit_breaker_percent is not None
    window = Duration.minutes(settings.circuit_breaker_minutes)
    attempts = tier.metrics.job(Metrics.PROCESSED, period=window)
    retried = tier.metrics.job(Metrics.RETRIED, period=window)
    share = cloudwatch.MathExpression(
        # FILL: a window with attempts but no retry is 0 %, not "no data".
        expression=f"IF(attempts >= {settings.circuit_breaker_min_jobs}, 100 * FILL(retried, 0) / attempts, 0)",
        using_metrics={"attempts": attempts, "retried": retried},
        label=f"{tier.name} transient failure share (%)",
        period=window,
    )
    return AlarmSpec(
        share,
        settings.circuit_breaker_percent,
        f"Circuit breaker of the {tier.name} tier: more than {settings.circuit_breaker_percent:g} % of its "
        f"attempts failed and will be retried over {settings.circuit_breaker_minutes} minute(s), with at least "
        f"{settings.circuit_breaker_min_jobs} attempts. ALARM: the tier is paused (by 'circuit breaker'), its jobs "
        f"wait in the queue with their attempts. OK (no page): a probe runs at concurrency 2, and the tier's "
        f"concurrency comes back when its jobs succeed, with a second page. Check the downstream the tier's jobs "
        f"call.",
        first_command(tier.metrics.stage, "status"),
    )


class CircuitBreakers(Construct):
    """The breaker alarms of every tier that has ``circuit_breaker_percent``, acting through ``function``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stage: str,
        tiers: Sequence[Tier],
        function: lambda_.Function,
        topic: sns.ITopic,
        topic_key: kms.IKey,
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms: dict[str, dict[str, cloudwatch.Alarm]] = {}
        action = cw_actions.LambdaAction(function)
        guarded = [tier for tier in tiers if tier.settings.circuit_breaker_percent is not None]
        if guarded:
            # The closing page: the function publishes to the alarm topic and uses its key for that, nothing
            # else. Named actions rather than ``grant_publish``, whose ``kms:GenerateDataKey*`` is wider than
            # what SNS asks of a publisher (GenerateDataKey, Decrypt).
            function.add_environment(Env.BREAKER_PAGE_TOPIC, topic.topic_arn)
            function.add_to_role_policy(iam.PolicyStatement(actions=["sns:Publish"], resources=[topic.topic_arn]))
            function.add_to_role_policy(
                iam.PolicyStatement(actions=list(PAGE_KEY_ACTIONS), resources=[topic_key.key_arn])
            )
            self._reconciler(stage, [tier.name for tier in guarded], function)
            # An alarm's event (or a reconcile) whose three tries failed: to the alarm topic, with the rights
            # above (Lambda checks them when the destination is set: the reference to the function makes
            # this wait for the function, which waits for its role's policy).
            self.async_failures = lambda_.CfnEventInvokeConfig(
                self,
                "AsyncFailures",
                function_name=function.function_name,
                qualifier="$LATEST",
                maximum_retry_attempts=ASYNC_RETRY_ATTEMPTS,
                destination_config=lambda_.CfnEventInvokeConfig.DestinationConfigProperty(
                    on_failure=lambda_.CfnEventInvokeConfig.OnFailureProperty(destination=topic.topic_arn)
                ),
            )
        for tier in guarded:
            breaker = page_on(  # opens: the first page; its OK (half-open) is no news, and does not page
                self,
                f"{tier.name}-breaker",
                breaker_spec(tier),
                alarm_name=Alarms.name(stage, tier.name, Alarms.CIRCUIT_BREAKER),
                topic=topic,
                page_ok=False,
            )
            breaker.add_alarm_action(action)
            breaker.add_ok_action(action)
            probe = tier.metrics.job(Metrics.SUCCEEDED, period=Duration.minutes(1)).create_alarm(
                self,
                f"{tier.name}-probe",
                alarm_name=Alarms.name(stage, tier.name, Alarms.CIRCUIT_PROBE),
                alarm_description=(
                    f"Closes the {tier.name} tier's half-open circuit breaker when the probe's jobs succeed "
                    f"(ALARM: jobs succeeded in the last minute). A signal, never a page. "
                    f"First run: {first_command(stage, 'status')}"
                ),
                threshold=0,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            probe.add_alarm_action(action)
            # Going half-open sets the probe alarm to OK, so that the probe's first succeeded minute
            # is a change of state (an alarm acts only on a change). Its ARN is written from its name:
            # a reference would make the alarm, the function and its policy depend on each other.
            probe_arn = Stack.of(self).format_arn(
                service="cloudwatch",
                resource="alarm",
                resource_name=Alarms.name(stage, tier.name, Alarms.CIRCUIT_PROBE),
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            function.add_to_role_policy(
                iam.PolicyStatement(actions=["cloudwatch:SetAlarmState"], resources=[probe_arn])
            )
            self.alarms[tier.name] = {Alarms.CIRCUIT_BREAKER: breaker, Alarms.CIRCUIT_PROBE: probe}

    def _reconciler(self, stage: str, tiers: list[str], function: lambda_.Function) -> None:
        """The rule that sends the reconcile event every five minutes, its right to invoke the function,
        and the function's right to read these alarms' states."""
        # The rule as its CloudFormation resource: one resource, which keeps aws_events (and the type
        # check's time to follow it) out of the construct.
        rule = CfnResource(
            self,
            "Reconcile",
            type="AWS::Events::Rule",
            properties={
                "Description": f"Moves on a stranded circuit breaker of the tiered-jobs {stage} stage "
                "(its alarm events lost or late)",
                "ScheduleExpression": RECONCILE_SCHEDULE,
                "State": "ENABLED",
                "Targets": [
                    {
                        "Id": "replay",
                        "Arn": function.function_arn,
                        "Input": json.dumps({"action": "reconcile", "tiers": tiers}),
                    }
                ],
            },
        )
        function.add_permission(
            "ReconcileInvoke",
            principal=iam.ServicePrincipal(EVENTS_PRINCIPAL),
            action="lambda:InvokeFunction",
            source_arn=rule.get_att("Arn").to_string(),
            source_account=Stack.of(self).account,
        )
        alarms = [
            Stack.of(self).format_arn(
                service="cloudwatch",
                resource="alarm",
                resource_name=Alarms.name(stage, tier, kind),
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for tier in tiers
            for kind in (Alarms.CIRCUIT_BREAKER, Alarms.CIRCUIT_PROBE)
        ]
        function.add_to_role_policy(iam.PolicyStatement(actions=["cloudwatch:DescribeAlarms"], resources=alarms))
