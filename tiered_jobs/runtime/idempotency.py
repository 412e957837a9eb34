"""Powertools idempotency around a job run, keyed by ``type`` + ``idempotency_key``.

* The key comes from the envelope (``[type, idempotency_key]``), never from the SQS messageId,
  which changes on redrive and replay; ``key_prefix`` keeps it stable across function renames.
* ``payload`` is the validation key: the same key with another payload is refused.
* The local cache answers duplicates inside one container without a DynamoDB call.
* The stored result is :func:`tiered_jobs.runtime.results.storable`'s bounded, JSON-safe form.
* Built on first use (the persistence layer and its client are not created at import).
* A job that ended without running (cancelled, expired: :mod:`tiered_jobs.contract.job_ends`)
  has an end marker as its stored result, found by the same conditional write every job makes;
  the marker holds no payload hash, so it is accepted whatever the payload of the job finding it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from tiered_jobs.contract import job_ends
from tiered_jobs.contract.idempotency import (
    EVENT_KEY_JMESPATH,
    HASH_FUNCTION,
    KEY_PREFIX,
    PAYLOAD_VALIDATION_JMESPATH,
    RecordAttributes,
    RecordStatus,
    record_id,
)

from .errors import IdempotencyConflictError
from .own_puts import OwnPuts
from .results import storable

__all__ = ["EVENT_KEY_JMESPATH", "KEY_PREFIX", "PAYLOAD_VALIDATION_JMESPATH", "IdempotentRunner", "Outcome"]

#: Records are stored under ``tiered-jobs#<hash of [type, idempotency_key]>``
#: (``tiered_jobs.contract.idempotency.record_id``, which the operator tools use to read them).
LOCAL_CACHE_MAX_ITEMS = 1024


class Outcome:
    """A job's run under idempotency (a plain class: a dataclass's generated methods cost a millisecond
    of every cold start each)."""

    __slots__ = ("result", "duplicate")

    def __init__(self, result: Any, duplicate: bool):
        self.result = result
        #: True when the result came from the idempotency store: the job did not run this time.
        self.duplicate = duplicate


class IdempotentRunner:
    """Runs a job through Powertools idempotency on the tier's DynamoDB table, keyed by its record id."""

    def __init__(self, table_name: str, ttl_seconds: int, dynamodb_client: Any):
        from aws_lambda_powertools.utilities.idempotency import (
            DynamoDBPersistenceLayer,
            IdempotencyConfig,
            idempotent_function,
        )
        from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyValidationError

        #: Kept here, not imported in :meth:`run`: an import statement there is paid by every job.
        self._validation_error = IdempotencyValidationError

        self.config = IdempotencyConfig(
            event_key_jmespath=EVENT_KEY_JMESPATH,
            payload_validation_jmespath=PAYLOAD_VALIDATION_JMESPATH,
            raise_on_no_idempotency_key=True,
            expires_after_seconds=ttl_seconds,
            hash_function=HASH_FUNCTION,
            use_local_cache=True,
            local_cache_max_items=LOCAL_CACHE_MAX_ITEMS,
        )
        self.table_name = table_name
        self.ttl_seconds = ttl_seconds
        self.dynamodb = dynamodb_client

        class _MarkerAwareLayer(DynamoDBPersistenceLayer):
            """Powertools' DynamoDB layer, which lets an end marker stand for any payload."""

            def _validate_payload(self, data_payload: Any, stored_data_record: Any) -> None:
                if stored_data_record.payload_hash is None and job_ends.marker_kind(_stored(stored_data_record)):
                    return  # an end marker: the canceller never knew the payload, and the job ends whatever it is
                super()._validate_payload(data_payload, stored_data_record)

        self.persistence = _MarkerAwareLayer(
            table_name=table_name,
            boto3_client=OwnPuts(dynamodb_client),
            key_attr=RecordAttributes.KEY,
            expiry_attr=RecordAttributes.EXPIRATION,
            in_progress_expiry_attr=RecordAttributes.IN_PROGRESS_EXPIRATION,
            status_attr=RecordAttributes.STATUS,
            data_attr=RecordAttributes.DATA,
            validation_key_attr=RecordAttributes.VALIDATION,
        )
        self._ran = threading.local()

        # Powertools' idempotent_function returns an unannotated wrapper; run_once keeps its own types.
        @idempotent_function(  # type: ignore[untyped-decorator]
            data_keyword_argument="job",
            config=self.config,
            persistence_store=self.persistence,
            key_prefix=KEY_PREFIX,
        )
        def run_once(job: dict[str, Any], execute: Callable[[], Any]) -> Any:
            self._ran.value = True
            # Powertools serializes what this returns after the side effect: it must always encode,
            # and fit in a DynamoDB item, or the job would run again (see results.py).
            return storable(execute())

        self._run_once = run_once

    def register_lambda_context(self, context: Any) -> None:
        """Lets an in-progress record expire when this invocation's time is up (crash safety)."""
        if context is not None and hasattr(context, "get_remaining_time_in_millis"):
            self.config.register_lambda_context(context)

    def run(self, envelope: dict[str, Any], execute: Callable[[], Any]) -> Outcome:
        self._ran.value = False
        try:
            result = self._run_once(job=envelope, execute=execute)
        except self._validation_error as exc:
            raise IdempotencyConflictError(
                f"idempotency key {envelope.get('idempotency_key')!r} was already used for "
                f"{envelope.get('type')!r} with a different payload"
            ) from exc
        return Outcome(result=result, duplicate=not self._ran.value)

    def mark_ended(self, job_type: str, idempotency_key: str, kind: str, *, at: str, detail: str = "") -> bool:
        """Write the job's end marker where it has no live record (one conditional ``PutItem``);
        ``False`` when a record was there (the job ran, runs, or ended already: it is left as it is)."""
        now = time.time()
        try:
            self.dynamodb.put_item(
                TableName=self.table_name,
                Item=job_ends.marker_item(
                    job_type, idempotency_key, kind, at=at, now=now, ttl_seconds=self.ttl_seconds, detail=detail
                ),
                ConditionExpression=job_ends.WRITE_CONDITION,
                ExpressionAttributeNames=job_ends.WRITE_NAMES,
                ExpressionAttributeValues=job_ends.write_values(now),
            )
        except Exception as exc:
            if getattr(exc, "response", {}).get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def cancel_requested(self, job_type: str, idempotency_key: str) -> bool:
        """Has someone cancelled this job since it started? One consistent ``GetItem`` of its record."""
        item = self.dynamodb.get_item(
            TableName=self.table_name,
            Key={RecordAttributes.KEY: {"S": record_id(job_type, idempotency_key)}},
            ConsistentRead=True,
        ).get("Item")
        if not item:
            return False
        if job_ends.CANCEL_REQUESTED in item:
            return True
        status = item.get(RecordAttributes.STATUS, {}).get("S")
        data = item.get(RecordAttributes.DATA, {}).get("S")
        return (
            status == RecordStatus.COMPLETED
            and job_ends.marker_kind(job_ends.stored_result(data)) == job_ends.CANCELLED
        )


def _stored(record: Any) -> Any:
    """A Powertools data record's stored result, decoded (``None`` when it has none)."""
    return job_ends.stored_result(getattr(record, "response_data", None))
