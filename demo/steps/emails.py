"""2. E-mails on the transactional tier, three to invalid addresses: the publisher refuses those by
the payload schema; sent raw anyway, as a publisher skipping the schema would, they are
dead-lettered on their first attempt (``permanent``)."""

from __future__ import annotations

from typing import Any

from demo.context import Demo
from tiered_jobs.contract import envelope
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.publisher import InvalidJobError

#: The addresses the payload schema refuses (the rate-limit step counts their letters in the DLQ).
INVALID_ADDRESSES = ("not-an-address", "bob@", "@example.com")


def emails(demo: Demo) -> None:
    demo.console.rule("2. E-mails, three with invalid addresses (transactional)")
    jobs = [
        {
            "job_type": "notifications.send_email",
            "idempotency_key": f"mail-{i}",
            "payload": {"to": f"user{i}@example.com", "subject": "Your receipt"},
        }
        for i in range(8)
    ]
    bad: list[dict[str, Any]] = [
        {
            "job_type": "notifications.send_email",
            "idempotency_key": f"bad-mail-{i}",
            "payload": {"to": address, "subject": "Your receipt"},
        }
        for i, address in enumerate(INVALID_ADDRESSES)
    ]
    demo.publisher.publish_batch(jobs)
    try:
        demo.publisher.publish_batch(bad)
        refused = ""
    except InvalidJobError as error:
        refused = str(error)
    demo.expect(
        "e-mails",
        "the publisher refused the invalid addresses by the payload schema, sending nothing",
        refused.count("payload field 'to' must match") == len(bad),
        refused[:120],
    )
    # A publisher that skips the schema (raw SendMessage from another language) still gets them in:
    sqs = demo.session.clients("sqs")
    for job in bad:
        body = envelope.build(job["job_type"], job["payload"], job["idempotency_key"]).to_json()
        sqs.send_message(QueueUrl=demo.tier("transactional").queue_url, MessageBody=body)
    demo.wait_for(lambda: demo.drained("transactional") and demo.dlq_depth("transactional") >= 3, 20)
    letters = peek_dlq(demo, "transactional")
    reasons = sorted((m[DeadLetter.REASON], m[DeadLetter.ATTEMPTS], m[DeadLetter.ERROR_TYPE]) for m in letters)
    demo.expect(
        "e-mails",
        "the 3 invalid addresses were dead-lettered on their first attempt, reason permanent",
        reasons == [("permanent", "1", "PayloadValidationError")] * 3,
        f"{reasons}",
    )


def peek_dlq(demo: Demo, tier: str) -> list[dict[str, str]]:
    """The DLQ letters' DeadLetter.* attributes (received and released at once)."""
    sqs, url = demo.session.clients("sqs"), demo.tier(tier).dlq_url
    letters = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=0
    ).get("Messages", [])
    return [{k: v.get("StringValue") for k, v in m.get("MessageAttributes", {}).items()} for m in letters]
