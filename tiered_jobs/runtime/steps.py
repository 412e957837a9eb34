"""Running one step of a job, and continuing it in a fresh invocation: ``return ctx.checkpoint(state)``.

How a checkpoint ends the invocation: the job **returns** the marker ``ctx.checkpoint(state)``
gives (a value, not an exception: a job's own ``except Exception`` cannot swallow it, and the
step's end is visible where the job returns). The consumer then, inside the step's idempotent run,
before its record says the step is done:

1. checks the bound (``@job(max_steps=...)``): a step past it is :class:`TooManySteps`, dead-lettered
   with reason ``too_many_steps``, and the record keeps the last checkpoint, so a replay after the
   bound is raised continues from there;
2. sends the job again as the next step (one ``SendMessage``: the same body and attributes, the
   step, the attempts it spent, delayed :data:`~tiered_jobs.contract.steps.CONTINUATION_DELAY_SECONDS`);
   a refused send fails the step transiently, and it is retried from its own start;
3. writes the next step and its state to the record (one ``UpdateItem``), then completes the
   record with the step marker as its result (the completion every job makes).

Sent before the record moves on, the next step's message always exists once the record says it
is due; the other order could lose the job in a crash between the two. A duplicate of an earlier
step finds the record ahead of it and runs nothing (:mod:`tiered_jobs.contract.steps`).

Step 0 is the published message, run under Powertools like any job; a later step claims its
record itself (:meth:`Steps.run`): a conditional ``UpdateItem`` from "step n due" to "step n
running", which also returns the state; its end completes the record, its failure gives the record
back to its checkpoint (so a retry, a letter and its replay continue from there, never from the
start), and a crash leaves it claimed until the step's lease (the invocation's time) ends.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tiered_jobs.contract import job_ends
from tiered_jobs.contract import steps as contract
from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id

from .errors import PermanentError, TransientError
from .idempotency import IdempotentRunner, Outcome
from .results import storable

__all__ = ["Checkpoint", "Steps", "TooManySteps", "check_bound", "check_max_steps"]


class Checkpoint:
    """What ``ctx.checkpoint(state)`` returns: the job ends this step and continues at ``step`` with ``state``
    (a plain class: a dataclass's generated methods cost a millisecond of every cold start each)."""

    __slots__ = ("step", "state", "state_json")

    def __init__(self, step: int, state: Any, state_json: str):
        self.step = step
        self.state = state
        #: The state as stored (checked when the job called ``checkpoint``, so a bad state fails there).
        self.state_json = state_json


class TooManySteps(PermanentError):
    """The job asked for a step past its ``max_steps``: dead-lettered with reason ``too_many_steps``."""

    dead_letter_reason = contract.REASON_TOO_MANY_STEPS


class StepNotReady(TransientError):
    """A later step's message found its record not (or no longer) at that step: retried with backoff."""


class StepsNeedIdempotency(PermanentError):
    """A job without idempotency has no record to keep a checkpoint in."""


def check_max_steps(job_type: str, max_steps: Any) -> int:
    """``@job(max_steps=...)``, checked when the job registers."""
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or not 1 <= max_steps <= contract.MAX_STEPS_LIMIT:
        raise ValueError(
            f"job type {job_type!r}: max_steps must be a whole number from 1 to {contract.MAX_STEPS_LIMIT}, "
            f"got {max_steps!r}"
        )
    return max_steps


def checkpoint(step: int, state: Any) -> Checkpoint:
    """``ctx.checkpoint(state)`` at ``step``: the state is checked now (JSON, bounded), the bound when the step ends."""
    return Checkpoint(step + 1, state, contract.encode_state(state))


def check_bound(ctx: Any, mark: Checkpoint) -> None:
    """Raise :class:`TooManySteps` when the step ``mark`` asks for is past the job's ``max_steps``
    (the one check, for the tier's records and ``tiered_jobs.testing``'s alike)."""
    if mark.step >= ctx.max_steps:  # steps count from 0: max_steps of them are 0 .. max_steps - 1
        raise TooManySteps(
            f"{ctx.job_type} asked for step {mark.step} (counted from 0), past its max_steps "
            f"({ctx.max_steps}): raise @job(max_steps=...) if it needs more (then replay the letter: it "
            "continues from its last checkpoint), or make each step do more"
        )


def plain_result(result: Any, job_type: str) -> Any:
    """A job without idempotency ran: it may not checkpoint."""
    if isinstance(result, Checkpoint):
        raise StepsNeedIdempotency(
            f"{job_type} returned ctx.checkpoint(...) but is registered with idempotent=False: its steps "
            "need the idempotency record to keep their state; drop idempotent=False"
        )
    return result


class Steps:
    """A tier's steps: the record's transitions and the continuation's send (see the module's docstring)."""

    def __init__(
        self,
        runner: IdempotentRunner,
        dynamodb: Any,
        send_next: Callable[[Any, int], str | None],
        *,
        logger: Any = None,
        clock: Callable[[], float] = time.time,
        token: Callable[[], str] | None = None,
    ):
        """``send_next(received, step)`` sends the job's next step, returning why SQS refused it (``None``: sent)."""
        self.runner, self.dynamodb, self.send_next = runner, dynamodb, send_next
        self.logger, self.clock, self.token = logger, clock, token or _token

    @property
    def table(self) -> str:
        return self.runner.table_name

    def run(
        self,
        received: Any,
        key: dict[str, Any],
        ctx: Any,
        handler: Callable[[dict[str, Any], Any], Any],
        flush: Callable[[], None] = lambda: None,
    ) -> Outcome:
        """Run this delivery's step of the job once: step 0 under Powertools, a later one on its claimed record."""
        step = contract.step_of(received.attributes)

        def execute(context: Any) -> Any:
            result = handler(key["payload"], context)
            flush()  # the last progress kept in the interval, before the record completes
            if isinstance(result, Checkpoint):
                return self._continue(received, key, context, result)
            return result

        if step == 0:
            return self.runner.run(key, lambda: execute(ctx))
        claimed = self._claim(key, step, ctx.lambda_remaining_ms())
        if isinstance(claimed, Outcome):
            return claimed
        token, state = claimed
        try:
            result = execute(replace(ctx, step=step, state=state))
        except BaseException:
            self._give_back(key, token)
            raise
        stored = storable(result)
        self._complete(key, token, stored)
        return Outcome(result=stored, duplicate=False)

    # -- the end of a step that checkpointed -------------------------------------------------

    def _continue(self, received: Any, key: dict[str, Any], ctx: Any, mark: Checkpoint) -> dict[str, int]:
        check_bound(ctx, mark)
        refused = self.send_next(received, mark.step)
        if refused is not None:
            raise TransientError(f"could not send step {mark.step} of the job: {refused}")
        self.dynamodb.update_item(
            TableName=self.table,
            Key=self._key(key),
            UpdateExpression="SET #step = :step, #state = :state, #data = :data",
            ConditionExpression="#status = :inprogress",
            ExpressionAttributeNames={
                "#step": contract.RECORD_STEP,
                "#state": contract.RECORD_STATE,
                "#data": RecordAttributes.DATA,
                "#status": RecordAttributes.STATUS,
            },
            ExpressionAttributeValues={
                ":step": {"N": str(mark.step)},
                ":state": {"S": mark.state_json},
                ":data": {"S": json.dumps(contract.marker(mark.step))},
                ":inprogress": {"S": RecordStatus.IN_PROGRESS},
            },
        )
        return contract.marker(mark.step)

    # -- a later step's record -----------------------------------------------------------------

    def _claim(self, key: dict[str, Any], step: int, remaining_ms: int) -> tuple[str, Any] | Outcome:
        """Take the record from "step due" to "step running" (or a crashed run of it whose lease ended)."""
        token, now = self.token(), self.clock()
        now_ms = int(now * 1000)
        names = {
            "#step": contract.RECORD_STEP,
            "#status": RecordAttributes.STATUS,
            "#owner": contract.RECORD_OWNER,
            "#lease": contract.RECORD_LEASE,
            "#expiry": RecordAttributes.EXPIRATION,
            # Powertools may take over an INPROGRESS record whose in_progress_expiration has passed (a
            # crashed attempt's): without it, a duplicate of an earlier step never takes a running step's.
            "#pt_lease": RecordAttributes.IN_PROGRESS_EXPIRATION,
        }
        try:
            item = self.dynamodb.update_item(
                TableName=self.table,
                Key=self._key(key),
                UpdateExpression="SET #status = :inprogress, #owner = :token, #lease = :lease, #expiry = :expiry "
                "REMOVE #pt_lease",
                ConditionExpression="#step = :step AND (#status = :completed OR "
                "(#status = :inprogress AND attribute_exists(#lease) AND #lease < :now_ms))",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={
                    ":inprogress": {"S": RecordStatus.IN_PROGRESS},
                    ":completed": {"S": RecordStatus.COMPLETED},
                    ":token": {"S": token},
                    ":lease": {"N": str(now_ms + max(0, remaining_ms))},
                    ":expiry": {"N": str(int(now) + self.runner.ttl_seconds)},
                    ":step": {"N": str(step)},
                    ":now_ms": {"N": str(now_ms)},
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )["Attributes"]
        except Exception as exc:
            if getattr(exc, "response", {}).get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            item = exc.response.get("Item")  # type: ignore[attr-defined]
            if item is None or item.get(contract.RECORD_OWNER, {}).get("S") != token:
                return self._not_claimed(key, step, item)
            # A lost answer: botocore sent the claim again and it met the record this claim had taken.
        return token, contract.decode_state(item.get(contract.RECORD_STATE, {}).get("S"))

    def _not_claimed(self, key: dict[str, Any], step: int, item: dict[str, Any] | None) -> Outcome:
        """Why the step's record could not be claimed: a duplicate of an earlier step, or not ready (retried)."""
        if item is None:  # moto and older endpoints may not return the item: read it
            item = self.dynamodb.get_item(TableName=self.table, Key=self._key(key), ConsistentRead=True).get("Item")
        if not item:
            raise StepNotReady(
                f"step {step}: the job's record holds no checkpoint (the step before it has not completed, or "
                "the idempotency window passed)"
            )
        status = item.get(RecordAttributes.STATUS, {}).get("S")
        stored = job_ends.stored_result(item.get(RecordAttributes.DATA, {}).get("S"))
        due = item.get(contract.RECORD_STEP, {}).get("N")
        if status == RecordStatus.COMPLETED and (
            due is None or int(due) > step or job_ends.marker_kind(stored) is not None
        ):
            return Outcome(result=stored, duplicate=True)  # finished, further on, or ended: nothing to run
        where = f"at step {due}" if due is not None else "without a step"
        raise StepNotReady(f"step {step}: the job's record is {status} {where}; this step runs once it is due")

    def _complete(self, key: dict[str, Any], token: str, stored: Any) -> None:
        """The step returned: its result (the job's, or the next step's marker) completes the record."""
        finished = contract.marker_step(stored) is None
        remove = ["#owner", "#lease"] + (["#step", "#state"] if finished else [])
        self._release(
            key,
            token,
            f"SET #status = :completed, #data = :data REMOVE {', '.join(remove)}",
            {":data": {"S": json.dumps(stored, sort_keys=True)}},
        )

    def _give_back(self, key: dict[str, Any], token: str) -> None:
        """The step failed: the record is back at its checkpoint (due again), for the retry or the replay."""
        try:
            self._release(key, token, "SET #status = :completed REMOVE #owner, #lease", {})
        except Exception as exc:  # noqa: BLE001 -- its lease ends with the invocation: the step is claimed again then
            if self.logger is not None:
                self.logger.warning("could not give the step back to its checkpoint", extra={"error": repr(exc)})

    def _release(self, key: dict[str, Any], token: str, update: str, values: dict[str, Any]) -> None:
        """Write the record this invocation claimed (raises as DynamoDB does: a completion that fails makes
        the step fail, as Powertools' does, so it runs again rather than leave its record claimed)."""
        names = {
            "#status": RecordAttributes.STATUS,
            "#owner": contract.RECORD_OWNER,
            "#lease": contract.RECORD_LEASE,
        }
        if "#data" in update:
            names["#data"] = RecordAttributes.DATA
        if "#step" in update:
            names |= {"#step": contract.RECORD_STEP, "#state": contract.RECORD_STATE}
        try:
            self.dynamodb.update_item(
                TableName=self.table,
                Key=self._key(key),
                UpdateExpression=update,
                ConditionExpression="#owner = :token",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={
                    ":token": {"S": token},
                    ":completed": {"S": RecordStatus.COMPLETED},
                    **values,
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except Exception as exc:
            response = getattr(exc, "response", {})
            if response.get("Error", {}).get("Code") != "ConditionalCheckFailedException" or not _released(
                response.get("Item"), values
            ):
                raise
            # A lost answer: botocore sent the write again, and the record is as this write left it.

    @staticmethod
    def _key(key: dict[str, Any]) -> dict[str, Any]:
        return {RecordAttributes.KEY: {"S": record_id(key["type"], key["idempotency_key"])}}


def _released(item: dict[str, Any] | None, values: dict[str, Any]) -> bool:
    """Is ``item`` the record as a release left it: no owner, completed, and its result the one written?"""
    if (
        not item
        or contract.RECORD_OWNER in item
        or item.get(RecordAttributes.STATUS, {}).get("S") != RecordStatus.COMPLETED
    ):
        return False
    return ":data" not in values or item.get(RecordAttributes.DATA, {}).get("S") == values[":data"]["S"]


def _token() -> str:
    import uuid  # on the first later step only: cold start does not pay for it

    return uuid.uuid4().hex
