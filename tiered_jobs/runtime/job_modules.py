"""Importing an app's job modules the way its consumer does: each job folder's ``schemas/`` first.

The one way a job module becomes live, used by the consumer's handler and by anything that runs the
real consumer outside Lambda (the local runtime, bench, tests). Importing a job module registers its
job types (``@job``); its payload schemas live beside it in ``<job folder>/schemas/``, and are added
to the search path *before* the import, so a module that checks a payload while it loads sees them.
A caller that imported the module by hand and skipped its schemas would run payloads no schema
checked: the bug this function exists to make impossible.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path

from tiered_jobs.contract import payloads
from tiered_jobs.contract.names import Env


def parse_modules(value: str | None) -> list[str]:
    """The module names of ``TIERED_JOBS_JOB_MODULES`` (comma-separated); refused when there are none."""
    modules = [name.strip() for name in (value or "").split(",") if name.strip()]
    if not modules:
        raise RuntimeError(
            f"{Env.JOB_MODULES} is not set: the stack sets it to the comma-separated modules "
            "that define the jobs (e.g. 'myapp.jobs')"
        )
    return modules


def load_job_modules(modules: Iterable[str]) -> None:
    """Add each module's ``schemas/`` folder (when it has one), then import the module."""
    for module in modules:
        folder = folder_of(module)
        if folder is not None and (folder / "schemas").is_dir():
            payloads.add_schema_dir(folder / "schemas")
        import_module(module)


def folder_of(module: str) -> Path | None:
    """The folder of ``module`` without importing it (its parent packages are imported); None if not found."""
    spec = find_spec(module)
    if spec is None:
        return None
    if spec.submodule_search_locations:  # a package: its folder
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None
