"""A job that ends without running (expired, cancelled): the discard archive's line for it.

The consumer never deletes a job it did not run without keeping it first: it writes the whole
message to the stage's discard archive (the bucket the replay's ``discard`` writes to, under the
tier's prefix), and deletes it only once the archive has it. The line has the fields of a
discarded letter's line (``tiered_jobs.replay.letters.Letter.to_record``), so one reader reads
both: ``reason`` says why (``expired``, ``cancelled``), ``error_message`` the sentence, and the
fields only a letter has are ``None``.

Only the standard library and the contract: nothing here is loaded until a job ends so.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from tiered_jobs.contract.times import iso_text

from .received import Received


def archive_record(received: Received, *, tier: str, reason: str, detail: str, at: datetime) -> dict[str, Any]:
    """The job's whole message as one JSON-safe object (``at``: when it was dropped)."""
    return {
        "tier": tier,
        "message_id": received.message_id,
        "recorded_at": iso_text(at),
        "job_type": received.job_type,
        "reason": reason,
        "error_type": None,
        "error_message": detail,
        "frame": None,
        "traceback": None,
        "first_failed_at": None,
        "dead_lettered_at": None,
        "sent_at": iso_text(received.sent_at),
        "body": received.body,
        "message_attributes": {
            name: {
                key: base64.b64encode(value).decode("ascii") if key == "BinaryValue" else value
                for key, value in attribute.items()
            }
            for name, attribute in received.api_attributes().items()
        },
        "attributes": {"ApproximateReceiveCount": str(received.receive_count), "Attempt": str(received.attempt)},
    }
