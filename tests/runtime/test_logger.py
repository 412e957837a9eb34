"""The library's Powertools Logger (runtime/logger.py): Powertools' own, and the consumer and its handler log
through it."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from tiered_jobs.contract.names import Env
from tiered_jobs.runtime.backoff import RetryPolicy
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.logger import powertools_logger
from tiered_jobs.runtime.registry import JobRegistry


def test_json_text_is_still_logged_as_structure_and_other_text_as_text():
    stream = io.StringIO()
    logger = powertools_logger(service="logger-test", logger_handler=logging.StreamHandler(stream))
    logger.info('{"order": 7}')
    logger.info("job succeeded")
    logger.info("null and void")  # starts like JSON, is not: kept as text, as Powertools keeps it
    messages = [json.loads(line)["message"] for line in stream.getvalue().splitlines()]
    assert messages == [{"order": 7}, "job succeeded", "null and void"]


def test_the_consumer_and_its_handler_log_through_the_library_logger():
    config = TierConfig(stage="t", tier="bulk", queue_url="q", dlq_url="d", idempotency_table="i", retry=RetryPolicy())
    assert Consumer(config, JobRegistry()).logger.service == "tiered-jobs"
    # The handler, imported as Lambda imports it (its module reads the stack's environment at import).
    env = {**os.environ, Env.JOB_MODULES: "tests.support.jobs"}
    code = "import tiered_jobs.handlers.consumer as h; print(type(h.logger).__module__, h.logger.service)"
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["aws_lambda_powertools.logging.logger", "tiered-jobs"]


def test_a_records_keys_are_on_its_lines_and_gone_after_it():
    """The consumer's per-record keys go through Powertools' ``append_keys`` and ``remove_keys``."""
    from tiered_jobs.contract.envelope import build
    from tiered_jobs.runtime.log_keys import LogKeys
    from tiered_jobs.runtime.received import read

    stream = io.StringIO()
    logger = powertools_logger(service="logger-keys-test", logger_handler=logging.StreamHandler(stream))
    record = read({"messageId": "m-1", "body": build("testjobs.ok", {}, "k-1").to_json()}, {"testjobs.ok"})
    with LogKeys(logger, record, "bulk"):
        logger.info("inside")
    logger.info("after")
    inside, after = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["tier"] == "bulk" and inside["message_id"] and "tier" not in after and "message_id" not in after
