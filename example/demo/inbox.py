"""The on-call inbox: an SQS queue subscribed to the alarm topic, standing for the pager. The bad
deploy's step reads from it the states the critical DLQ alarm announced (ALARM, then OK)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from emulator.session import LocalSession
from tiered_jobs.contract.names import Alarms


@dataclass
class Inbox:
    session: LocalSession
    url: str = ""
    #: The critical DLQ alarm's states announced so far, oldest first.
    states_seen: list[str] = field(default_factory=list)

    def subscribe(self) -> None:
        deployment = self.session.deployment
        assert deployment is not None, "the session is started"
        sqs, sns = self.session.clients("sqs"), self.session.clients("sns")
        self.url = sqs.create_queue(QueueName="oncall-inbox")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(
            TopicArn=deployment.alarm_topic_arn, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"}
        )

    def states(self) -> list[str]:
        """States announced for the critical DLQ alarm so far (the inbox is drained as it is read)."""
        deployment = self.session.deployment
        assert deployment is not None, "the session is started"
        sqs = self.session.clients("sqs")
        for message in sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get("Messages", []):
            sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])
            notification = json.loads(message["Body"])
            if notification["AlarmName"] == Alarms.name(deployment.stage, "critical", Alarms.DLQ_DEPTH):
                self.states_seen.append(notification["NewStateValue"])
        return self.states_seen
