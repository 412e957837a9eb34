"""The probe's handler (``tiered_jobs.contract.probe``): run by every consumer before the app's registry.

It runs under idempotency like any job with an effect (so it proves the table is reachable and
writable) and returns the tier that ran it, stored in its record: nothing else is written, no
resource of the app is touched, and its metrics are counted under its own type.
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract.probe import PROBE_TYPE, RESULT_TIER

from .job_policy import TIER_DEFAULTS
from .registry import JobContext, JobDefinition


def run_probe(payload: dict[str, Any], ctx: JobContext) -> dict[str, str]:
    """Complete: the record says which tier's consumer ran it."""
    return {RESULT_TIER: ctx.tier}


#: The probe as the consumer runs it: no payload rule (it carries none), the tier's attempts, idempotent.
PROBE = JobDefinition(PROBE_TYPE, run_probe, validate=None, policy=TIER_DEFAULTS, idempotent=True)
