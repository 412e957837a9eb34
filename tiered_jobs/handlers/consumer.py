"""Lambda entry point of every tier's consumer (``tiered_jobs.handlers.consumer.handler``).

Thin on purpose: build the consumer once per container from the environment, then hand it the
batch. The jobs register themselves when the modules named by ``TIERED_JOBS_JOB_MODULES``
(comma-separated, set by the stack) are imported, on the container's first import.
"""

from __future__ import annotations

import os
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from tiered_jobs.contract import payloads
from tiered_jobs.contract.names import Env, Metrics
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import registry

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse


def _import_jobs(value: str | None) -> None:
    """Import each job module (registering its job types); without any, every job would be refused."""
    modules = [name.strip() for name in (value or "").split(",") if name.strip()]
    if not modules:
        raise RuntimeError(f"{Env.JOB_MODULES} is not set: the stack sets it to the comma-separated modules "
                           "that define the jobs (e.g. 'myapp.jobs')")
    for module in modules:
        # The app's own payload schemas (``<job folder>/schemas/``) are checked like the package's;
        # added before the import, so a job module that checks a payload while it loads sees them too.
        folder = _folder_of(module)
        if folder is not None and (folder / "schemas").is_dir():
            payloads.add_schema_dir(folder / "schemas")
        import_module(module)


def _folder_of(module: str) -> Path | None:
    """The folder of ``module`` without importing it (its parent packages are imported); None if not found."""
    spec = find_spec(module)
    if spec is None:
        return None
    if spec.submodule_search_locations:  # a package: its folder
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


_import_jobs(os.environ.get(Env.JOB_MODULES))

logger = Logger(service=Metrics.SERVICE)
_consumer: Consumer | None = None


def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    global _consumer
    if _consumer is None:
        _consumer = Consumer(TierConfig.from_env(), registry, logger=logger)
    return _consumer.handle(event, context)
