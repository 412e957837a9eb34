"""Lambda entry point of every tier's consumer (``functions.consumer.handler``).

Thin on purpose: build the consumer once per container from the environment, then hand it the
batch. The jobs register themselves when ``functions.jobs`` is imported.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from functions import jobs  # noqa: F401 -- registers the job types
from functions.consumer.processor import Consumer
from functions.runtime.config import TierConfig
from functions.runtime.registry import registry
from tiered_jobs.contract.names import Metrics

logger = Logger(service=Metrics.SERVICE)
_consumer: Consumer | None = None


def handler(event: dict, context: Any) -> dict:
    global _consumer
    if _consumer is None:
        _consumer = Consumer(TierConfig.from_env(), registry, logger=logger)
    return _consumer.handle(event, context)
