"""The logger of a figure's consumer that counts calls or costs, not log lines: errors only, so a
``make bench`` run does not print a line per job it consumes."""

from __future__ import annotations

from typing import Any


def quiet_logger() -> Any:
    from aws_lambda_powertools import Logger

    return Logger(service="bench", level="ERROR")
