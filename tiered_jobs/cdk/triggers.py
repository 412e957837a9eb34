"""AWS events as jobs: one EventBridge rule per trigger of ``cdk.json``, its target the routed tier's queue.

No forwarding function: the target's ``InputTransformer`` builds the envelope from the event
(``tiered_jobs.contract.triggers``), so a job from an event is an ordinary job of its tier, checked,
run once per key, retried and dead-lettered by the consumer like any other.

- Each target has a ``RetryPolicy`` (the trigger's settings) and a ``DeadLetterConfig``: an event
  EventBridge could not deliver (the queue refused it, or its retries ran out) goes to the triggers' DLQ,
  one queue for the stage, with the reason in its message attributes; an alarm pages when it holds one.
- The queue policy of each tier queue (and of the triggers' DLQ) lets ``events.amazonaws.com``
  ``sqs:SendMessage`` only for the rules of this stage that target it (``aws:SourceArn``, one statement
  per rule): no other rule, of this account or another, can write jobs into a tier.
- The queues use SQS-managed encryption (``tier.py``): EventBridge needs no KMS permission for them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from tiered_jobs.contract.names import SQS_MAX_MESSAGE_BYTES
from tiered_jobs.contract.triggers import input_paths, input_template

from .alarms import AlarmSpec, first_command, page_on
from .metrics import ONE_MINUTE
from .nag import acknowledge
from .settings import AppSettings
from .settings.triggers import TriggerSettings
from .tier import Tier

EVENTS_PRINCIPAL = "events.amazonaws.com"
#: Undeliverable events wait here for 14 days (SQS's longest retention).
DLQ_RETENTION = Duration.days(14)


def trigger_dlq_alarm_name(stage: str) -> str:
    """Alarm on the triggers' DLQ; ends in no tier alarm kind, so it never equals a tier's alarm name."""
    return f"tiered-jobs-{stage}-triggers-undelivered"


class Triggers(Construct):
    """The triggers' rules, their DLQ and its alarm, and the queue policy statements that admit exactly those rules."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: AppSettings,
        tiers: Sequence[Tier],
        alarm_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        stage = settings.stage
        queues = {tier.name: tier.queue for tier in tiers}
        self.dlq = sqs.Queue(
            self,
            "Dlq",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DLQ_RETENTION,
            max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
            removal_policy=settings.removal_policy,
        )
        acknowledge(self.dlq, "AwsSolutions-SQS3", "This queue is the dead-letter queue of the triggers' rules.")
        acknowledge(self.dlq, "Serverless-SQSRedrivePolicy", "A dead-letter queue has no dead-letter queue itself.")
        self.alarm = page_on(
            self,
            "Alarm-undelivered",
            AlarmSpec(
                self.dlq.metric_approximate_number_of_messages_visible(statistic="Maximum", period=ONE_MINUTE),
                0,
                f"Triggers of the {stage} stage: an AWS event that matched a trigger could not be delivered to its "
                "tier queue (fires when the triggers' DLQ holds one: EventBridge kept the event there, with why).",
                first_command(stage, "status"),
            ),
            alarm_name=trigger_dlq_alarm_name(stage),
            topic=alarm_topic,
        )
        #: Trigger name -> its rule.
        self.rules: dict[str, events.CfnRule] = {}
        for trigger in settings.triggers:
            rule = self._rule(trigger, queues[trigger.tier], stage)
            self.rules[trigger.name] = rule
            for queue in (queues[trigger.tier], self.dlq):
                queue.add_to_resource_policy(
                    iam.PolicyStatement(
                        sid=f"Trigger{_pascal(trigger.name)}",
                        principals=[iam.ServicePrincipal(EVENTS_PRINCIPAL)],
                        actions=["sqs:SendMessage"],
                        resources=[queue.queue_arn],
                        conditions={"ArnEquals": {"aws:SourceArn": rule.attr_arn}},
                    )
                )

    def _rule(self, trigger: TriggerSettings, queue: sqs.IQueue, stage: str) -> events.CfnRule:
        return events.CfnRule(
            self,
            f"Rule-{trigger.name}",
            description=f"{trigger.job_type} -> {trigger.tier} ({stage} trigger {trigger.name})",
            event_bus_name=trigger.bus,
            event_pattern=json.loads(json.dumps(trigger.pattern)),
            state="ENABLED",
            targets=[
                events.CfnRule.TargetProperty(
                    id=trigger.name,
                    arn=queue.queue_arn,
                    input_transformer=events.CfnRule.InputTransformerProperty(
                        input_paths_map=input_paths(trigger.key_path, trigger.payload_path),
                        input_template=input_template(trigger.job_type),
                    ),
                    dead_letter_config=events.CfnRule.DeadLetterConfigProperty(arn=self.dlq.queue_arn),
                    retry_policy=events.CfnRule.RetryPolicyProperty(
                        maximum_retry_attempts=trigger.retry_attempts,
                        maximum_event_age_in_seconds=trigger.max_event_age_seconds,
                    ),
                )
            ],
        )


def _pascal(name: str) -> str:
    """A statement id from a trigger's name (``Sid`` takes letters and digits only)."""
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", ".").replace("_", ".").split("."))
