"""``stepped.update_balance``: the example's payment, as a job longer than one invocation.

It takes :data:`STEPS` steps (``ctx.checkpoint``), each in its own invocation, and applies the
payment on its last one: its effect must be applied exactly once whatever the run's faults do to
its steps (a duplicate of an earlier step runs nothing, a failed step is retried from its checkpoint,
a letter replayed continues there), and each step must see the state the one before it left.
"""

from __future__ import annotations

from typing import Any

from functions.jobs.payments import update_balance as apply_payment
from tiered_jobs.runtime import JobContext, PermanentError, job

from . import STEPPED_TYPE

STEPS = 3


@job(STEPPED_TYPE, max_steps=STEPS)
def update_balance(payload: dict[str, Any], ctx: JobContext) -> Any:
    if (ctx.state or {}).get("step", 0) != ctx.step:  # a step must resume from the one before it
        raise PermanentError(f"step {ctx.step} got the state of step {(ctx.state or {}).get('step')}")
    if ctx.step < STEPS - 1:
        return ctx.checkpoint({"step": ctx.step + 1})
    # The same transaction as payments.update_balance, with this type's marker (``applied#stepped...``).
    return apply_payment(payload, ctx)
