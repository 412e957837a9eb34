"""The on-call inbox: an SQS queue subscribed to the alarm topic, standing for the pager. The bad
deploy's step reads from it the states the critical DLQ alarm announced (ALARM, then OK); the circuit
breaker's step, the pages about its tier (the alarm's when it opened, the replay function's when it
closed)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from emulator.session import LocalSession
from tiered_jobs.contract.names import Alarms


@dataclass
class Inbox:
    session: LocalSession
    url: str = ""
    #: Every page received so far, oldest first: an alarm's notification, or the circuit breaker's page.
    pages: list[dict[str, Any]] = field(default_factory=list)

    def subscribe(self) -> None:
        deployment = self.session.deployment
        assert deployment is not None, "the session is started"
        sqs, sns = self.session.clients("sqs"), self.session.clients("sns")
        self.url = sqs.create_queue(QueueName="oncall-inbox")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(
            TopicArn=deployment.alarm_topic_arn, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"}
        )

    def read(self) -> list[dict[str, Any]]:
        """Every page so far (the queue is drained into :attr:`pages` as it is read)."""
        sqs = self.session.clients("sqs")
        while messages := sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get("Messages", []):
            for message in messages:
                sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])
                self.pages.append(json.loads(message["Body"]))
        return self.pages

    def states(self) -> list[str]:
        """States announced for the critical DLQ alarm so far, oldest first."""
        deployment = self.session.deployment
        assert deployment is not None, "the session is started"
        name = Alarms.name(deployment.stage, "critical", Alarms.DLQ_DEPTH)
        return [page["NewStateValue"] for page in self.read() if page.get("AlarmName") == name]

    def about(self, tier: str) -> list[dict[str, Any]]:
        """The pages about ``tier`` so far: its alarms' notifications, and pages that name it (``Tier``)."""
        deployment = self.session.deployment
        assert deployment is not None, "the session is started"
        prefix = Alarms.name(deployment.stage, tier, "")
        return [p for p in self.read() if p.get("Tier") == tier or str(p.get("AlarmName", "")).startswith(prefix)]
