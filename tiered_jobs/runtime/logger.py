"""The library's Powertools ``Logger``: Powertools' own, named for the service every line belongs to."""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract.names import Metrics


def powertools_logger(**options: Any) -> Any:
    """``Logger(service="tiered-jobs", **options)``: JSON lines, level from ``POWERTOOLS_LOG_LEVEL``.

    Imported when first called, not with this module: a consumer's cold start loads Powertools' logger
    once, with its handler."""
    from aws_lambda_powertools import Logger

    return Logger(**{"service": Metrics.SERVICE, **options})
