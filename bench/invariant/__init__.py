"""The effectively-once proof with every feature on: lost, duplicated and unexpected outcomes counted under faults.

``plan`` says what a run turns on and injects, ``scenario`` runs it on an embedded AWS, ``taps`` and
``checker`` read the outcome from outside the consumer. ``python -m bench invariant`` runs 10 000
jobs; ``tests/reliability/test_invariant.py`` runs 1 000 in ``make test``.
"""

from .checker import EXERCISED, Outcome
from .plan import FaultPlan
from .scenario import run, run_shard, run_shards

__all__ = ["EXERCISED", "FaultPlan", "Outcome", "run", "run_shard", "run_shards"]
