"""A success leaves a line: each finished job logs at INFO its type, key, attempt and duration (as
Celery's ``Task ... succeeded in 0.04s``), and the tier's log level reaches Powertools in the function."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.logs import CapturedLogs
from tiered_jobs.contract.names import Env
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import registry


def _consumer(tier, logs: CapturedLogs) -> Consumer:
    clients = {"sqs": tier.sqs, "dynamodb": tier.dynamodb}
    return Consumer(tier.config(), registry, client=clients.__getitem__, logger=logs.logger, rand=lambda: 0.5)


def test_a_finished_job_logs_its_type_key_attempt_and_duration_at_info(tier, recorded):
    logs = CapturedLogs("INFO")
    consumer = _consumer(tier, logs)
    tier.publish("testjobs.slow", {"steps": 2, "step_ms": 30}, "slow-1")
    tier.publish("testjobs.transient", {"fail_times": 1}, "flaky-1")

    tier.run_batch(consumer)
    tier.make_visible()
    tier.run_batch(consumer)

    lines = {line["idempotency_key"]: line for line in logs.lines("job succeeded")}
    assert set(lines) == {"slow-1", "flaky-1"}
    slow, flaky = lines["slow-1"], lines["flaky-1"]
    assert slow["level"] == "INFO" and slow["job_type"] == "testjobs.slow" and slow["attempt"] == 1
    assert slow["duration_ms"] >= 60, "two steps of 30 ms ran inside the measured time"
    assert slow["duplicate"] is False
    assert flaky["job_type"] == "testjobs.transient" and flaky["attempt"] == 2  # the attempt that succeeded
    assert flaky["duration_ms"] >= 0


def test_a_duplicate_logs_its_line_marked_duplicate(tier, recorded):
    logs = CapturedLogs("INFO")
    consumer = _consumer(tier, logs)
    for _ in range(2):
        tier.publish("testjobs.ok", {"label": "twice"}, "same-key")
        tier.run_batch(consumer)

    assert [line["duplicate"] for line in logs.lines("job succeeded")] == [False, True]
    assert len(recorded) == 1


def test_at_warning_a_success_logs_nothing(tier, recorded):
    logs = CapturedLogs("WARNING")
    tier.publish("testjobs.ok", {"label": "quiet"}, "quiet-1")

    tier.run_batch(_consumer(tier, logs))

    assert len(recorded) == 1 and logs.lines() == []


def _handler_log_level(level: str | None) -> str:
    """The level of the consumer handler's logger, imported as Lambda imports it, with the
    environment the stack sets (``POWERTOOLS_LOG_LEVEL``, or none)."""
    env = {k: v for k, v in os.environ.items() if k != Env.POWERTOOLS_LOG_LEVEL}
    env[Env.JOB_MODULES] = "tests.support.jobs"
    if level is not None:
        env[Env.POWERTOOLS_LOG_LEVEL] = level
    code = (
        "import json, logging, tiered_jobs.handlers.consumer as h; "
        "print(json.dumps(logging.getLevelName(h.logger.log_level)))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_log_level_in_the_environment_reaches_the_handlers_logger():
    assert _handler_log_level("WARNING") == "WARNING"
    assert _handler_log_level("DEBUG") == "DEBUG"
    assert _handler_log_level(None) == "INFO"
