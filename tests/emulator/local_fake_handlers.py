"""Handlers the local runtime's tests invoke, in-process and in worker processes.

Importable both ways: tests/emulator is on ``sys.path`` under pytest, and it is the ``code root`` the
worker tests give their functions.
"""

from __future__ import annotations

import os
import threading
import time

#: Concurrency gauge for the in-process max-concurrency test.
gate = threading.Event()
_lock = threading.Lock()
running = 0
peak = 0


def describe(event, context):
    """Everything the handler saw: its environment and context (for the worker tests)."""
    print("describe called")
    return {
        "records": len(event["Records"]),
        "env": {
            name: os.environ.get(name)
            for name in (
                "FAKE_SETTING",
                "AWS_LAMBDA_FUNCTION_NAME",
                "AWS_REGION",
                "AWS_ENDPOINT_URL",
                "_X_AMZN_TRACE_ID",
                "LAMBDA_TASK_ROOT",
            )
        },
        "context": {
            "function_name": context.function_name,
            "memory_limit_in_mb": context.memory_limit_in_mb,
            "invoked_function_arn": context.invoked_function_arn,
            "aws_request_id": context.aws_request_id,
            "remaining_ms": context.get_remaining_time_in_millis(),
        },
        "pid": os.getpid(),
    }


def fail_marked(event, context):
    """Reports every record whose body contains ``fail`` as a batch item failure."""
    return {
        "batchItemFailures": [
            {"itemIdentifier": record["messageId"]} for record in event["Records"] if "fail" in record["body"]
        ]
    }


def crash(event, context):
    raise RuntimeError("boom")


def sleep_past_timeout(event, context):
    time.sleep(context.get_remaining_time_in_millis() / 1000 + 5)


def unserialisable(event, context):
    return {"when": object()}


def exit_hard(event, context):
    os._exit(3)


def wait_for_gate(event, context):
    """Blocks until the test opens ``gate``; records the peak number of concurrent calls."""
    global running, peak
    with _lock:
        running += 1
        peak = max(peak, running)
    try:
        gate.wait(30)
    finally:
        with _lock:
            running -= 1
    return {}
