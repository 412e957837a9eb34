"""Lambda entry point of every tier's consumer (``tiered_jobs.handlers.consumer.handler``).

Thin on purpose: build the consumer once per container from the environment, then hand it the
batch. The job packages named by ``TIERED_JOBS_JOB_MODULES`` (comma-separated, set by the stack) are
imported at cold start, and each job module (one per job-type prefix) on the first record of its
prefix (:mod:`tiered_jobs.runtime.job_modules`). A package or module that fails to import never fails
the container's start: its records fail with the reason, and other prefixes and tiers run.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from tiered_jobs.contract.names import Env
from tiered_jobs.runtime import aws
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.job_modules import JobModules, parse_modules
from tiered_jobs.runtime.logger import powertools_logger
from tiered_jobs.runtime.registry import registry

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse


_modules = JobModules.of(registry)
for _package in parse_modules(os.environ.get(Env.JOB_MODULES)):
    _modules.add(_package)  # a broken package fails its records (transient, with the reason), not the init

logger = powertools_logger()
_consumer: Consumer | None = None


def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    global _consumer
    if _consumer is None:
        config = TierConfig.from_env()
        _consumer = Consumer(config, registry, logger=logger, archive=lambda: _archive(config.tier))
    return _consumer.handle(event, context)


def _archive(tier: str) -> Any:
    """The stage's discard archive, built on the first job that expires or is cancelled (no S3 client before)."""
    from tiered_jobs.replay.archive import archive_from_env

    return archive_from_env(tier, aws.client("s3"))
