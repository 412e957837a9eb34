"""The probe: the one job type the library defines itself, which ``tiered-jobs smoke`` sends to each tier.

A post-deploy check must prove what a real job proves: the tier's queue takes a message, its mapping
delivers it, its consumer imports, reads the envelope, reaches the idempotency table and answers the
batch. The package ships no example job type, and an app's own types have effects a check must not
cause; so the runtime runs this one itself, before asking the app's registry, and it does nothing but
complete: its idempotency record (which ``tiered-jobs job`` reads) is its only trace.

Every type under :data:`RESERVED_PREFIX` is the library's: ``@job`` refuses to register one, so an
app can neither shadow the probe nor collide with a later built-in.

Standard library only: the consumer imports it in Lambda.
"""

from __future__ import annotations

#: Job types under this prefix belong to the library (``tiered_jobs.probe``); an app may not register them.
RESERVED_PREFIX = "tiered_jobs."
#: The probe's job type.
PROBE_TYPE = f"{RESERVED_PREFIX}probe"
#: Its idempotency keys: ``smoke-<UTC moment>-<random>``, a fresh job per check (never a duplicate's answer).
KEY_PREFIX = "smoke-"
#: What the probe's handler stores as its result: the tier whose consumer ran it.
RESULT_TIER = "tier"


def is_reserved(job_type: str) -> bool:
    """Whether ``job_type`` belongs to the library (under :data:`RESERVED_PREFIX`)."""
    return job_type.startswith(RESERVED_PREFIX)
