"""Local mode's terminal shows a retry as one readable line; the JSON document Lambda writes is shipped whole."""

from __future__ import annotations

import json

from emulator.log_render import render
from tests.runtime.test_failure_traceback import _consumer, _line_of, _read_qty
from tests.support.logs import CapturedLogs


def test_a_retrys_log_document_is_one_line_naming_the_job_its_error_and_the_frame_that_raised(tier):
    logs = CapturedLogs()
    consumer = _consumer(tier, logs, max_attempts=2)
    tier.publish("orders.reserve", {"order": {"id": "o-1"}}, "reserve-1")
    tier.run_batch(consumer)
    (retry,) = logs.lines("job failed, will retry")
    document = json.dumps(retry)  # what the consumer writes to stdout, and Lambda to CloudWatch Logs

    shown = render(document)

    assert len(document) > 4000 and document.count("_read_qty") >= 2  # the traceback, twice
    raising = _line_of(_read_qty, 'payload["order"]["qty"]')
    expected = (
        "WARNING job failed, will retry: orders.reserve 'reserve-1' attempt 1: KeyError: 'qty' "
        f"at {__file__.replace('test_log_render', 'test_failure_traceback').replace('/emulator/', '/runtime/')}"
        f":{raising} in _read_qty; retry in 5 s"
    )
    assert shown == f"{expected} ({retry['duration_ms']} ms)"  # the run line's duration, the one other field


def test_other_fields_are_kept_short_and_other_lines_are_left_as_they_are():
    line = json.dumps({"level": "INFO", "message": "job succeeded", "job_type": "a.b", "note": "x" * 200})

    assert render(line) == f"INFO job succeeded: a.b [note={'x' * 79}…]"
    assert render("START RequestId: 1 Version: $LATEST") == "START RequestId: 1 Version: $LATEST"
    emf = json.dumps({"_aws": {"CloudWatchMetrics": []}, "JobsSucceeded": 1})
    assert render(emf) == emf and render("{not json") == "{not json"
