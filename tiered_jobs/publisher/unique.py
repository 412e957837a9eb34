"""Unique jobs: taking the locks of a publish's ``unique_for=`` jobs, and giving back those of jobs not sent.

One conditional write per job (:mod:`tiered_jobs.contract.unique` says what it writes and on what
condition), packed per call:

- a single job (``publish``): one ``PutItem``, one write unit;
- a batch: ``TransactWriteItems`` of up to 100 puts. BatchWriteItem would pack 25 but takes no
  condition, so it cannot refuse a job that is already queued. A transaction is all or nothing:
  when a lock exists, DynamoDB cancels it, and its ``CancellationReasons`` name, in order, each put
  whose condition failed (with the lock there, ``ReturnValuesOnConditionCheckFailure``) and those
  that would have been fine (``None``). The refused jobs are "already queued"; the others are written
  again in a transaction of their own. So 1 000 new jobs are 10 calls, and each group of 100 that
  holds a job already queued costs one call more (bench/publisher_calls.py measures both).
  A transactional write costs two write units per item against one for ``PutItem``: fewer calls
  (latency) for twice the units, only for batches.

A conflict with another transaction on the same lock, or throttling, is retried (full jitter, as
the publisher's re-sends; :mod:`tiered_jobs.contract.transactions` names the cancellations worth
it); what still fails is not sent, and the publish says so.

A lost answer is not a refusal: botocore sends a write whose answer was lost again, and its
condition then fails against the lock it wrote itself. A lock given back holding this publish's
own token is taken (in ``PutItem``'s refusal and in a transaction's per-item reasons); each
transaction also carries a ``ClientRequestToken``, so DynamoDB answers such a retry as the first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..contract import transactions, unique
from .models import Prepared, ResendPolicy

#: Items per ``TransactWriteItems`` (DynamoDB's limit since 2022; it was 25).
MAX_TRANSACTION_ITEMS = 100


@dataclass(frozen=True)
class LockOutcome:
    """What became of one job's lock: taken (send it), held by a pending job (``already_queued``), or failed."""

    taken: bool = False
    #: A pending job of the same type and key holds the lock until then (``None`` with ``taken``, or unknown).
    held_until: datetime | None = None
    error_code: str | None = None
    error_message: str | None = None
    error: Exception | None = None

    @property
    def already_queued(self) -> bool:
        return not self.taken and self.error_code is None


class UniqueLocks:
    """The stage's unique-jobs table, as the publisher uses it (``dynamodb`` is a boto3 client)."""

    def __init__(
        self,
        table: str,
        dynamodb: Any,
        *,
        clock: Callable[[], datetime],
        resend: ResendPolicy,
        sleep: Callable[[float], None],
        random: Callable[[], float],
    ):
        self.table = table
        self.dynamodb = dynamodb
        self._clock = clock
        self._resend = resend
        self._sleep = sleep
        self._random = random

    def acquire(self, items: list[Prepared]) -> dict[int, LockOutcome]:
        """Take the lock of each item (by ``index``); a second job of one type and key in the same batch
        is already queued by the first ("first wins", as across publishes)."""
        outcomes: dict[int, LockOutcome] = {}
        first: dict[str, Prepared] = {}
        repeats: list[tuple[Prepared, Prepared]] = []
        for item in items:
            key = unique.lock_key(item.job.job_type, item.job.idempotency_key)
            if key in first:
                repeats.append((item, first[key]))
            else:
                first[key] = item
        candidates = list(first.values())
        if len(candidates) == 1:
            outcomes.update(self._put(candidates[0]))
        else:
            for start in range(0, len(candidates), MAX_TRANSACTION_ITEMS):
                outcomes.update(self._transact(candidates[start : start + MAX_TRANSACTION_ITEMS]))
        for item, leader in repeats:
            lead = outcomes[leader.index]
            outcomes[item.index] = (
                lead if lead.error_code is not None else LockOutcome(held_until=lead.held_until or leader.unique_until)
            )
        return outcomes

    def release(self, items: list[Prepared]) -> None:
        """Give back the locks of jobs that were not sent, so that publishing them again is not refused.

        Best effort: a lock that cannot be deleted now ends with its window (the publish's error
        already says the job was not sent)."""
        from botocore.exceptions import BotoCoreError, ClientError

        for item in items:
            if item.unique_token is None:
                continue
            try:
                self.dynamodb.delete_item(
                    **unique.release_request(self.table, item.job.job_type, item.job.idempotency_key, item.unique_token)
                )
            except (BotoCoreError, ClientError):
                continue

    # -- writing ----------------------------------------------------------------------------

    def _put_request(self, item: Prepared) -> dict[str, Any]:
        assert item.unique_token is not None and item.unique_until is not None
        return {
            "TableName": self.table,
            "Item": unique.lock_item(
                item.job.job_type, item.job.idempotency_key, item.unique_token, item.unique_until, item.tier
            ),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            **unique.acquire_expression(self._clock()),
        }

    def _put(self, item: Prepared) -> dict[int, LockOutcome]:
        """One job: one conditional ``PutItem`` (botocore retries throttling)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.dynamodb.put_item(**self._put_request(item))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                held = exc.response.get("Item")
                if unique.holds_token(held, item.unique_token or ""):  # its own, after a lost answer
                    return {item.index: LockOutcome(taken=True)}
                return {item.index: LockOutcome(held_until=unique.held_until(held, self._clock()))}
            return {item.index: LockOutcome(error_code=code, error_message=str(exc), error=exc)}
        except BotoCoreError as exc:
            return {item.index: LockOutcome(error_code=type(exc).__name__, error_message=str(exc), error=exc)}
        return {item.index: LockOutcome(taken=True)}

    def _transact(self, group: list[Prepared]) -> dict[int, LockOutcome]:
        """Up to 100 jobs of distinct locks: transactions until each is taken, refused or out of attempts."""
        from botocore.exceptions import BotoCoreError, ClientError

        outcomes: dict[int, LockOutcome] = {}
        pending = group
        failures = 0
        while pending:
            if len(pending) == 1:  # nothing to pack: the cheaper single write
                outcomes.update(self._put(pending[0]))
                return outcomes
            try:
                self.dynamodb.transact_write_items(
                    # A transaction's Put takes PutItem's arguments; the lock there comes back in its reason.
                    TransactItems=[{"Put": self._put_request(item)} for item in pending],
                    # One token per attempt (botocore's retry of a lost answer sends it again, and DynamoDB
                    # answers that as the first for 10 minutes); never one per group, as a later attempt
                    # holds fewer items and DynamoDB refuses a token reused with other parameters.
                    ClientRequestToken=transactions.new_token(),
                )
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                reasons = exc.response.get("CancellationReasons") or []
                if code != "TransactionCanceledException" or len(reasons) != len(pending):
                    outcomes.update(_failed(pending, code, str(exc), exc))
                    return outcomes
                retry: list[Prepared] = []
                transient = False
                now = self._clock()
                for item, reason in zip(pending, reasons, strict=True):
                    reason_code = reason.get("Code") or "None"
                    if reason_code == "ConditionalCheckFailed" and unique.holds_token(
                        reason.get("Item"), item.unique_token or ""
                    ):
                        # Its own lock: this transaction was applied, its answer lost, and a service that
                        # does not keep the token's first answer applied the retry again.
                        outcomes[item.index] = LockOutcome(taken=True)
                    elif reason_code == "ConditionalCheckFailed":
                        outcomes[item.index] = LockOutcome(held_until=unique.held_until(reason.get("Item"), now))
                    elif reason_code == "None":
                        retry.append(item)  # fine on its own: cancelled with the others
                    elif reason_code in transactions.RETRYABLE_CANCELLATIONS:
                        retry.append(item)
                        transient = True
                    else:
                        outcomes[item.index] = LockOutcome(
                            error_code=reason_code, error_message=reason.get("Message", ""), error=exc
                        )
                if transient:
                    failures += 1
                    if failures >= self._resend.max_attempts:
                        outcomes.update(_failed(retry, "TransactionCanceledException", str(exc), exc))
                        return outcomes
                    self._sleep(self._resend.wait(failures, self._random()))
                pending = retry
                continue
            except BotoCoreError as exc:
                outcomes.update(_failed(pending, type(exc).__name__, str(exc), exc))
                return outcomes
            outcomes.update({item.index: LockOutcome(taken=True) for item in pending})
            return outcomes
        return outcomes


def _failed(items: list[Prepared], code: str, message: str, error: Exception) -> dict[int, LockOutcome]:
    return {item.index: LockOutcome(error_code=code, error_message=message, error=error) for item in items}
