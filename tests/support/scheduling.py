"""How ``make test`` hands its tests to parallel workers (pytest-xdist).

Most tests are independent and small: each goes on its own to whichever worker is free, the longest
modules first (``tests/conftest.py`` orders them). A module whose tests share one costly fixture, a
local session or a moto server started once for the module, is different. Handed out test by test,
every worker that received one of its tests started that fixture again: up to four local sessions
where one does, each synthesizing, deploying and polling for the module's whole run. Such a module
also holds tests that read what its earlier tests did (the docs test's last check finds the letters
its pages left), which only holds when they run in order in one process.

So a module that has any test marked ``e2e`` or ``slow`` is one unit of work: one worker runs all its
tests, in order. The modules that synthesize (marked ``synth``) are one unit together: they share the
syntheses of ``tests/cdk/conftest.py`` (one per worker process) and the CDK's Node.js runtime, which
each worker that synthesized once started and loaded again (about 80 s of CPU spent twice over).
xdist's ``--dist loadgroup`` would say this with a marker, but xdist 3.8 groups by rewriting a test's
node id, which pytest 9 no longer reads; its scope scheduler reads node ids only, and this subclass
chooses the scope.

The controller collects no tests itself, so the workers say which modules belong to which unit: each
writes the map (the same on every worker) to a file the controller named before starting them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

#: The controller's folder for the list, inherited by the workers.
UNITS_ENV = "TIERED_JOBS_TEST_UNITS"
UNITS_FILE = "units.json"
#: A module with a test marked with one of these runs on one worker.
ONE_WORKER_MARKS = ("e2e", "slow")
#: The modules with a test marked with this run on one worker together, as this unit.
SYNTH_MARK = SYNTH_UNIT = "synth"


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def units(items: Iterable[pytest.Item]) -> dict[str, str]:
    """The modules that are not split, each with the unit it belongs to (itself, or the synth unit)."""
    found: dict[str, str] = {}
    for item in items:
        module = module_of(item.nodeid)
        if any(item.get_closest_marker(m) for m in ONE_WORKER_MARKS):
            found[module] = module
        elif item.get_closest_marker(SYNTH_MARK):
            found.setdefault(module, SYNTH_UNIT)
    return dict(sorted(found.items()))


def write_units(items: Iterable[pytest.Item]) -> None:
    """On a worker: write :func:`units` for the controller (atomically: the workers write at once)."""
    folder = os.environ.get(UNITS_ENV)
    if not folder:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    partial = Path(folder) / f".{UNITS_FILE}.{worker}"
    partial.write_text(json.dumps(units(items)), encoding="utf-8")
    partial.replace(Path(folder) / UNITS_FILE)


class OneWorkerModules(LoadScopeScheduling):
    """Every test its own unit but for the modules of :func:`units`; units go out in collection
    order (``--no-loadscope-reorder`` semantics) to whichever worker runs low."""

    def __init__(self, config: pytest.Config, log: object = None) -> None:
        super().__init__(config, log)  # type: ignore[arg-type]
        # Keep the collection's order (longest first); by default the scope scheduler puts the units
        # with the most tests first.
        config.option.loadscopereorder = False
        self._folder = os.environ.get(UNITS_ENV, "")
        self._units: dict[str, str] | None = None

    def _unit_of_module(self) -> dict[str, str]:
        if self._units is None:  # read once, when the first node ids are split: collection is complete
            path = Path(self._folder) / UNITS_FILE
            self._units = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        return self._units

    def _split_scope(self, nodeid: str) -> str:
        return self._unit_of_module().get(module_of(nodeid), nodeid)
