"""``fragile.update_balance``: the example's payment, in a module that fails to import while
:data:`~bench.invariant.jobs.BREAKAGE` says so (a deploy whose dependency is missing), then loads.

The failure is raised while the module loads, as a missing package's would be: the consumer keeps it
and fails this prefix's records with :class:`~tiered_jobs.runtime.job_modules.JobModuleError`
(transient), tries the import again after its interval, and runs them once it loads.
"""

from __future__ import annotations

from typing import Any

from functions.jobs.payments import update_balance as apply_payment
from tiered_jobs.runtime import JobContext, job

from . import BREAKAGE, FRAGILE_TYPE

if BREAKAGE.broken():
    raise ModuleNotFoundError("No module named 'ledger_sdk' (the composed run's broken deploy, fixed later)")


@job(FRAGILE_TYPE)
def update_balance(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    # The same transaction as payments.update_balance, with this type's marker (``applied#fragile...``).
    return apply_payment(payload, ctx)
