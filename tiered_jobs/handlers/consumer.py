"""Lambda entry point of every tier's consumer (``tiered_jobs.handlers.consumer.handler``).

Thin on purpose: build the consumer once per container from the environment, then hand it the
batch. The jobs register themselves when the modules named by ``TIERED_JOBS_JOB_MODULES``
(comma-separated, set by the stack) are imported, on the container's first import.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from tiered_jobs.contract.names import Env, Metrics
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.job_modules import load_job_modules, parse_modules
from tiered_jobs.runtime.registry import registry

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse


load_job_modules(parse_modules(os.environ.get(Env.JOB_MODULES)))

logger = Logger(service=Metrics.SERVICE)
_consumer: Consumer | None = None


def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    global _consumer
    if _consumer is None:
        _consumer = Consumer(TierConfig.from_env(), registry, logger=logger)
    return _consumer.handle(event, context)
