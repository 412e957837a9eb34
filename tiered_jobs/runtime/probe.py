"""The probe's handler (``tiered_jobs.contract.probe``): run by every consumer before the app's registry.

It runs under idempotency like any job with an effect (so it proves the table is reachable and
writable) and returns the tier that ran it, stored in its record: nothing else is written, no
resource of the app is touched, and its metrics are counted under its own type. The registry
holds it as the library's one job definition (``registry.PROBE``).
"""

from __future__ import annotations

from typing import Any, Protocol

from tiered_jobs.contract.probe import RESULT_TIER


class ProbeRun(Protocol):
    """What the probe reads of its run: the tier whose consumer runs it (a ``JobContext`` has it)."""

    @property
    def tier(self) -> str: ...


def run_probe(payload: dict[str, Any], ctx: ProbeRun) -> dict[str, str]:
    """Complete: the record says which tier's consumer ran it."""
    return {RESULT_TIER: ctx.tier}
