"""1b. The seed's first picture: one payment fans out into a notification, an e-mail, a stats update, a
billing entry and a fraud check, opened as one batch (``publisher.batch``); when all five have finished,
its ``on_complete`` callback (a report e-mail) is published, once.

The parts run on the critical and transactional tiers (the stats and the fraud check sent there with
``tier=``: the bulk tier's breaker is open at this point of the story), a few seconds in all.
"""

from __future__ import annotations

import time

from demo.context import ACCOUNT_IDS, Demo
from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id
from tiered_jobs.operations.batches import read_from
from tiered_jobs.publisher import Job, Publisher
from tiered_jobs.stage import discovery

PAYMENT = "pay-fanout"
BILLING_AMOUNT = 4200
REPORT = ("notifications.send_email", {"to": "ops@example.com", "subject": f"{PAYMENT}: every part is done"})


def payment_fans_out(demo: Demo) -> None:
    demo.console.rule("1b. A payment fans out; on_complete once every part is done")
    account = ACCOUNT_IDS[0]
    demo.expected_balances[account] = demo.expected_balances.get(account, 0) + BILLING_AMOUNT
    # Its batches table is read with the session's own DynamoDB client, as every other call of the story.
    publisher = Publisher.from_stage(
        demo.deployment.stage,
        ssm=demo.session.clients("ssm"),
        sqs=demo.session.clients("sqs"),
        dynamodb=demo.session.clients("dynamodb"),
    )
    batch_id = f"{PAYMENT}-{int(time.time())}"  # a story run again on the same stage opens a new batch
    parts = [
        Job("notifications.send_email", {"to": "alice@example.com", "subject": "Payment received"}, f"{PAYMENT}-push"),
        Job("notifications.send_email", {"to": "alice@example.com", "subject": "Your receipt"}, f"{PAYMENT}-email"),
        Job(
            "analytics.record_event",
            {"event": "payment", "properties": {"amount": 42}},
            f"{PAYMENT}-stats",
            tier="transactional",
        ),
        Job("payments.update_balance", {"account_id": account, "amount": BILLING_AMOUNT}, f"{PAYMENT}-billing"),
        Job(
            "analytics.record_event",
            {"event": "fraud_check", "properties": {"score": 3}},
            f"{PAYMENT}-fraud",
            tier="transactional",
        ),
    ]
    with publisher.batch(on_complete=REPORT, batch_id=batch_id) as fanout:
        fanout.publish_batch(parts)
    dynamodb, table = demo.session.clients("dynamodb"), publisher.batch_table
    assert table is not None
    demo.wait_for(lambda: "on_complete" in read_from(dynamodb, table, batch_id).head.fired, 20)
    head = read_from(dynamodb, table, batch_id).head
    demo.expect(
        "fan-out",
        "every part of the payment finished, each counted once",
        (head.total, head.done, head.succeeded, head.failed) == (5, 5, 5, 0),
        f"{head.done} of {head.total} finished, {head.succeeded} succeeded",
    )
    idempotency = discovery.from_ssm(demo.deployment.stage, ssm=demo.session.clients("ssm")).idempotency_table_name
    key = {RecordAttributes.KEY: {"S": record_id(REPORT[0], batch_id)}}

    def report_sent() -> bool:
        item = dynamodb.get_item(TableName=idempotency, Key=key, ConsistentRead=True).get("Item", {})
        return bool(item.get(RecordAttributes.STATUS, {}).get("S") == RecordStatus.COMPLETED)

    demo.expect(
        "fan-out",
        "its on_complete report was published once and ran, after the last part",
        head.fired == {"on_complete"} and demo.wait_for(report_sent, 15),
        f"callbacks sent: {', '.join(sorted(head.fired)) or 'none'}",
    )
