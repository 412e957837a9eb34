"""The composed run's own job package, registered beside the example's ``payments``: the job types where
a job's own retry policy, a job module that fails to import and the letter's traceback meet the invariant.

One module per job-type prefix, as an app's job folder has them (``tiered_jobs.runtime.job_modules``):

- ``capped.update_balance`` (:mod:`.capped`) declares its own policy, fewer attempts than its tier and
  its own backoff, and never succeeds: each of its jobs must end dead-lettered, with the reason and the
  attempts that policy says, and a traceback naming the job's line;
- ``fragile.update_balance`` (:mod:`.fragile`) is the payment, in a module that fails to import for the
  first seconds of a run (:data:`BREAKAGE`) and is then "fixed": its jobs retry, some are dead-lettered
  with the import's reason and replayed, and each is applied exactly once in the end;
- ``stepped.update_balance`` (:mod:`.stepped`) is the payment as a job longer than one invocation: three
  steps, each its own invocation (``ctx.checkpoint``), the payment applied on the last, exactly once.

Nothing here is imported by the package's ``__init__``: the consumer imports a prefix's module on the
first record of that prefix, which is what lets one module fail alone.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field

PACKAGE = __name__
FRAGILE_MODULE = f"{PACKAGE}.fragile"
CAPPED_TYPE = "capped.update_balance"
FRAGILE_TYPE = "fragile.update_balance"
STEPPED_TYPE = "stepped.update_balance"


@dataclass
class Breakage:
    """Until when :mod:`.fragile` fails to import (``time.monotonic()``), and how often it did."""

    until: float = 0.0
    failed_imports: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def broken(self) -> bool:
        """Whether an import now fails; counts the failures."""
        with self._lock:
            if time.monotonic() < self.until:
                self.failed_imports += 1
                return True
            return False


#: The switch :mod:`.fragile` reads while it loads (one per process: each shard runs in its own).
BREAKAGE = Breakage()


def break_fragile_for(seconds: float) -> None:
    """Make :mod:`.fragile` fail to import for ``seconds`` from now, as a deploy of broken code would.

    A module imported by an earlier run in this process (``run_shards(processes=1)``) is forgotten
    first, with the job types it registered, and the registry gets a fresh loader: the next record of
    the prefix imports it anew, as a new container would.
    """
    from tiered_jobs.runtime.job_modules import JobModules
    from tiered_jobs.runtime.registry import registry

    registry.forget({FRAGILE_TYPE} & set(registry.types()))
    sys.modules.pop(FRAGILE_MODULE, None)
    packages = list(registry.loader.packages) if isinstance(registry.loader, JobModules) else []
    fresh = JobModules(registry)  # installs itself as the registry's loader: nothing settled, nothing failed
    fresh.packages.extend(packages)  # the same job folders as before (a test process has its own)
    BREAKAGE.until = time.monotonic() + seconds
    BREAKAGE.failed_imports = 0
