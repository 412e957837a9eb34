"""The idempotency record of a job: how its key is derived and what its DynamoDB item holds.

The consumer stores one record per job (Powertools' idempotency utility, DynamoDB persistence)
under ``tiered-jobs#<md5 of json.dumps([type, idempotency_key], sort_keys=True)>``: the job type
plus the envelope's business key, never the SQS message id (which changes on redrive and replay).
The runtime configures Powertools with these names; the operator tools (``tiered-jobs job``, the
console) derive the same id to read the record. ``tests/runtime/test_idempotency_key.py`` proves
that both agree with what Powertools actually writes.

Standard library only: this module ships in the Lambda asset and in the installable package.
"""

from __future__ import annotations

import hashlib
import json

from .names import PROJECT

#: Records are stored under ``<KEY_PREFIX>#<hash>`` (stable across function renames).
KEY_PREFIX = PROJECT
#: The parts of the envelope that make the key, as a JMESPath over the envelope.
EVENT_KEY_JMESPATH = "[type, idempotency_key]"
#: The part of the envelope whose hash is stored: the same key with another payload is refused.
PAYLOAD_VALIDATION_JMESPATH = "payload"
#: Hash function of the key (Powertools' ``IdempotencyConfig.hash_function``).
HASH_FUNCTION = "md5"


class RecordAttributes:
    """Attribute names of a record in the idempotency table (Powertools' DynamoDB layer)."""

    KEY = "id"
    #: Epoch seconds after which the record no longer protects the job (DynamoDB TTL deletes it later).
    EXPIRATION = "expiration"
    #: Epoch milliseconds after which an ``INPROGRESS`` record may be taken over (its Lambda ran out of time).
    IN_PROGRESS_EXPIRATION = "in_progress_expiration"
    STATUS = "status"
    #: The job's result as JSON (``COMPLETED`` records).
    DATA = "data"
    VALIDATION = "validation"


class RecordStatus:
    """Values of the ``status`` attribute."""

    IN_PROGRESS = "INPROGRESS"
    COMPLETED = "COMPLETED"


def record_id(job_type: str, idempotency_key: str) -> str:
    """The idempotency table's ``id`` of the job ``job_type`` with business key ``idempotency_key``.

    What Powertools computes from ``EVENT_KEY_JMESPATH`` on the envelope: the selected list
    serialised with ``json.dumps(..., sort_keys=True)`` and hashed with ``HASH_FUNCTION``.
    """
    data = json.dumps([job_type, idempotency_key], sort_keys=True).encode()
    return f"{KEY_PREFIX}#{hashlib.new(HASH_FUNCTION, data).hexdigest()}"
