"""A Powertools logger whose JSON lines a test can read: what the consumer logs, as CloudWatch gets it."""

from __future__ import annotations

import io
import itertools
import json
import logging
from typing import Any

from aws_lambda_powertools import Logger

_names = itertools.count()


class CapturedLogs:
    """A fresh Powertools ``Logger`` (its own service name, so no other test's handler is reused)
    writing to memory; :meth:`lines` parses what it wrote."""

    def __init__(self, level: str = "INFO"):
        self._stream = io.StringIO()
        self.logger = Logger(
            service=f"captured-{next(_names)}", level=level, logger_handler=logging.StreamHandler(self._stream)
        )

    def lines(self, message: str | None = None) -> list[dict[str, Any]]:
        """Every JSON line written so far (only those with this ``message`` when given)."""
        parsed = [json.loads(line) for line in self._stream.getvalue().splitlines() if line.strip()]
        return [line for line in parsed if message is None or line.get("message") == message]
