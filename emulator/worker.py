"""One Lambda execution environment in its own process: the local runtime's bootstrap.

Standard library only, because it runs with the function's code asset first on ``sys.path`` (as
Lambda puts ``/var/task`` first), and the asset's ``tiered_jobs`` package must win over the
repository's. The parent starts it with ``python -I <this file> <code root> <handler> [<layer>...]``
(each layer's ``python`` folder comes right after the code, as ``/opt/python`` does on Lambda) and
the function's environment, then speaks JSON lines:

* the worker answers ``{"ready": true}`` once the handler module is imported (the cold start),
  or ``{"error": {...}}`` when the import fails (Lambda's ``Runtime.ImportModuleError``);
* for each request ``{"event": ..., "deadline_ms": ..., "request_id": ...}`` it answers
  ``{"response": ...}`` or ``{"error": {"errorType", "errorMessage"}}``.

The protocol uses the process's original stdout; the handler's own ``print``/logging output (and
Powertools' EMF lines) goes to stderr, which the parent reads as the function's log stream.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time
import traceback
import uuid
from typing import Any, Callable


class LambdaContext:
    """The context object Lambda's Python runtime passes to a handler."""

    def __init__(
        self,
        *,
        function_name: str,
        memory_mb: int,
        invoked_function_arn: str,
        request_id: str,
        deadline_ms: int,
        log_group_name: str,
        log_stream_name: str,
    ):
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = invoked_function_arn
        # Lambda's Python runtime passes the raw environment value: a string.
        self.memory_limit_in_mb = str(memory_mb)
        self.aws_request_id = request_id
        self.log_group_name = log_group_name
        self.log_stream_name = log_stream_name
        self.identity = None
        self.client_context = None
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self._deadline_ms - time.time() * 1000))


def resolve_handler(handler: str) -> Callable[[Any, Any], Any]:
    """``package.module.function`` -> the function, imported as Lambda's runtime does."""
    module_name, _, attribute = handler.rpartition(".")
    if not module_name:
        raise ValueError(f"bad handler {handler!r}: expected module.function")
    module = importlib.import_module(module_name)
    try:
        function: Callable[[Any, Any], Any] = getattr(module, attribute)
        return function
    except AttributeError:
        raise AttributeError(f"handler {attribute!r} missing on module {module_name!r}") from None


def trace_header() -> str:
    """A fresh, unsampled X-Ray trace header: tracing code runs but sends nothing."""
    return f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]};Parent={uuid.uuid4().hex[:16]};Sampled=0"


def error_payload(exc: BaseException) -> dict[str, Any]:
    return {
        "errorType": type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_exception(exc),
    }


def main(code_root: str, handler_name: str, *layers: str) -> None:
    # Ctrl-C in the terminal of `up` reaches its whole process group, this process too: the session stops
    # its environments itself (it closes their input), so an interrupt here would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # the function's stdout joins its log stream
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", closefd=False)
    sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # typeshed's TextIO; it is a TextIOWrapper
    sys.path[0:0] = [code_root, *layers]

    def send(message: dict[str, Any]) -> None:
        try:
            line = json.dumps(message)
        except (TypeError, ValueError) as exc:  # a response JSON cannot carry, as Lambda reports it
            line = json.dumps({"error": {"errorType": "Runtime.MarshalError", "errorMessage": str(exc)}})
        protocol.write(line + "\n")
        protocol.flush()

    try:
        handler = resolve_handler(handler_name)
    except Exception as exc:  # noqa: BLE001 - reported to the parent like Runtime.ImportModuleError
        send({"error": error_payload(exc)})
        return
    send({"ready": True})

    environ = os.environ
    for line in sys.stdin:
        request = json.loads(line)
        environ["_X_AMZN_TRACE_ID"] = trace_header()
        context = LambdaContext(
            function_name=environ["AWS_LAMBDA_FUNCTION_NAME"],
            memory_mb=int(environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"]),
            invoked_function_arn=request["function_arn"],
            request_id=request["request_id"],
            deadline_ms=request["deadline_ms"],
            log_group_name=environ["AWS_LAMBDA_LOG_GROUP_NAME"],
            log_stream_name=environ["AWS_LAMBDA_LOG_STREAM_NAME"],
        )
        try:
            send({"response": handler(request["event"], context)})
        except Exception as exc:  # noqa: BLE001 - an unhandled error fails the invocation, as on Lambda
            print(f"[ERROR] {type(exc).__name__}: {exc}", flush=True)
            send({"error": error_payload(exc)})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *sys.argv[3:])
