"""Lambda entry point of every tier's consumer (``tiered_jobs.handlers.consumer.handler``).

Thin on purpose: build the consumer once per container from the environment, then hand it the
batch. The jobs register themselves when the modules named by ``TIERED_JOBS_JOB_MODULES``
(comma-separated, set by the stack) are imported, on the container's first import.
"""

from __future__ import annotations

import os
from importlib import import_module
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
                           "that define the jobs (e.g. 'functions.jobs')")
    for module in modules:
        imported = import_module(module)
        # The app's own payload schemas (``<job folder>/schemas/``) are checked like the package's.
        schemas = Path(imported.__file__ or "").parent / "schemas"
        if schemas.is_dir():
            payloads.add_schema_dir(schemas)


_import_jobs(os.environ.get(Env.JOB_MODULES))

logger = Logger(service=Metrics.SERVICE)
_consumer: Consumer | None = None


def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    global _consumer
    if _consumer is None:
        _consumer = Consumer(TierConfig.from_env(), registry, logger=logger)
    return _consumer.handle(event, context)
