"""The library's Powertools Logger (runtime/logger.py): its message decoder gives Powertools' formatter the
answer ``json.loads`` gives, for every first character, and the consumer's handler logs through it."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tiered_jobs.contract.names import Env
from tiered_jobs.runtime.backoff import RetryPolicy
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.logger import JSON_STARTS, decode_message, powertools_logger
from tiered_jobs.runtime.registry import JobRegistry


def _powertools_way(text: str) -> object:
    """What Powertools' formatter keeps of a str message with ``json.loads`` as its decoder."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError, ValueError):
        return text


def _decoded(text: str) -> object:  # compared by repr: NaN is not equal to itself
    try:
        return decode_message(text)
    except (json.JSONDecodeError, TypeError, ValueError):  # caught by the formatter, which keeps the text
        return text


def test_every_first_character_of_the_basic_plane_decodes_as_json_loads_decodes_it():
    for point in range(0x10000):
        if not 0xD800 <= point <= 0xDFFF:  # surrogates: no str a record holds starts with one
            text = chr(point) + "1"
            assert repr(_decoded(text)) == repr(_powertools_way(text)), repr(text)


@pytest.mark.parametrize("rest", ["", "1", '"', "rue", "ull", "aN", "nfinity", "{}", ' {"a": 1}', "x"])
def test_json_and_near_json_decode_as_json_loads_decodes_them(rest):
    for point in range(0x80):
        text = chr(point) + rest
        assert repr(_decoded(text)) == repr(_powertools_way(text)), repr(text)


def test_text_that_cannot_be_json_is_returned_without_parsing(monkeypatch):
    def refuse(text: str) -> object:
        raise AssertionError(f"json.loads called for {text!r}")

    monkeypatch.setattr(json, "loads", refuse)
    assert decode_message("job succeeded") == "job succeeded"
    assert decode_message("") == ""
    assert "j" not in JSON_STARTS


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
    assert Consumer(config, JobRegistry()).logger.registered_formatter.json_deserializer is decode_message
    # The handler, imported as Lambda imports it (its module reads the stack's environment at import).
    env = {**os.environ, Env.JOB_MODULES: "tests.support.jobs"}
    code = (
        "import tiered_jobs.handlers.consumer as h, tiered_jobs.runtime.logger as l; "
        "print(h.logger.registered_formatter.json_deserializer is l.decode_message, h.logger.service)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "tiered-jobs"]
