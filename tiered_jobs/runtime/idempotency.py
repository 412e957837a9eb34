"""Powertools idempotency around a job run, keyed by ``type`` + ``idempotency_key``.

* The key comes from the envelope (``[type, idempotency_key]``), never from the SQS messageId,
  which changes on redrive and replay; ``key_prefix`` keeps it stable across function renames.
* ``payload`` is the validation key: the same key with another payload is refused.
* The local cache answers duplicates inside one container without a DynamoDB call.
* The stored result is :func:`tiered_jobs.runtime.results.storable`'s bounded, JSON-safe form.
* Built on first use (the persistence layer and its client are not created at import).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tiered_jobs.contract.idempotency import (
    EVENT_KEY_JMESPATH,
    HASH_FUNCTION,
    KEY_PREFIX,
    PAYLOAD_VALIDATION_JMESPATH,
    RecordAttributes,
)

from .errors import IdempotencyConflictError
from .results import storable

__all__ = ["EVENT_KEY_JMESPATH", "KEY_PREFIX", "PAYLOAD_VALIDATION_JMESPATH", "IdempotentRunner", "Outcome"]

#: Records are stored under ``tiered-jobs#<hash of [type, idempotency_key]>``
#: (``tiered_jobs.contract.idempotency.record_id``, which the operator tools use to read them).
LOCAL_CACHE_MAX_ITEMS = 1024


@dataclass(frozen=True)
class Outcome:
    result: Any
    #: True when the result came from the idempotency store: the job did not run this time.
    duplicate: bool


class IdempotentRunner:
    def __init__(self, table_name: str, ttl_seconds: int, dynamodb_client: Any):
        from aws_lambda_powertools.utilities.idempotency import (
            DynamoDBPersistenceLayer,
            IdempotencyConfig,
            idempotent_function,
        )

        self.config = IdempotencyConfig(
            event_key_jmespath=EVENT_KEY_JMESPATH,
            payload_validation_jmespath=PAYLOAD_VALIDATION_JMESPATH,
            raise_on_no_idempotency_key=True,
            expires_after_seconds=ttl_seconds,
            hash_function=HASH_FUNCTION,
            use_local_cache=True,
            local_cache_max_items=LOCAL_CACHE_MAX_ITEMS,
        )
        self.persistence = DynamoDBPersistenceLayer(
            table_name=table_name,
            boto3_client=dynamodb_client,
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
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyValidationError,
        )

        self._ran.value = False
        try:
            result = self._run_once(job=envelope, execute=execute)
        except IdempotencyValidationError as exc:
            raise IdempotencyConflictError(
                f"idempotency key {envelope.get('idempotency_key')!r} was already used for "
                f"{envelope.get('type')!r} with a different payload"
            ) from exc
        return Outcome(result=result, duplicate=not self._ran.value)
