"""``lambda:Invoke`` of the stack's functions, served by the local runtime instead of moto's Docker path.

moto's server answers ``Invoke`` by running the function in a Docker container. For the functions
of the deployed stack, :func:`install` routes the call to the local runtime instead: a fresh
execution environment (:class:`~emulator.invokers.WorkerInvoker`, a process with the
function's environment and code asset) runs the handler exactly as the event source mappings do.
So ``aws lambda invoke --function-name tiered-jobs-local-replay ...``, boto3's ``invoke`` and
``tiered-jobs dlq replay --via lambda`` run the deployed replay function as on AWS.

What Lambda answers, and so this does:

* ``RequestResponse`` (default): ``200``, the handler's JSON; a handler error, a crash or a
  timeout is ``X-Amz-Function-Error: Unhandled`` with ``{"errorType", "errorMessage"}``.
  ``LogType: Tail`` adds ``X-Amz-Log-Result`` (the last 4 KB of the log, base64).
* ``Event``: ``202`` at once; the function runs in the background.
* ``DryRun``: ``204``, nothing runs.
* A function that does not exist: moto's (and Lambda's) ``ResourceNotFoundException``, ``404``.
  Functions outside the stack keep moto's own behaviour.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from typing import Any

from emulator.esm import FunctionConfig, Invocation

#: ``X-Amz-Log-Result`` carries the last 4 KB of the invocation's log.
LOG_TAIL_BYTES = 4096

Runner = Callable[[FunctionConfig, dict[str, Any], Callable[[str], None]], Invocation]
"""``runner(function, event, log_line) -> Invocation``: runs one invocation, handing each log line to ``log_line``."""

_lock = threading.Lock()
#: (account, region, function name) -> (function, runner)
_routes: dict[tuple[str, str, str], tuple[FunctionConfig, Runner]] = {}


def register(account_id: str, function: FunctionConfig, runner: Runner) -> None:
    """Serve ``Invoke`` of ``function`` with ``runner`` (and make sure moto is patched)."""
    install()
    with _lock:
        _routes[(account_id, function.region, function.name)] = (function, runner)


def unregister(account_id: str, function: FunctionConfig) -> None:
    with _lock:
        _routes.pop((account_id, function.region, function.name), None)


def install() -> None:
    """Patch moto's ``LambdaBackend.invoke`` in this process (idempotent; the server runs in-process)."""
    from moto.awslambda.models import LambdaBackend

    original = LambdaBackend.invoke
    if getattr(original, "routed_by_tiered_jobs", False):
        return

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: dict[str, str]
    ) -> Any:
        fn = self.get_function(function_name, qualifier)  # unknown: ResourceNotFoundException (404), as Lambda
        with _lock:
            route = _routes.get((self.account_id, self.region_name, fn.function_name))
        if route is None:
            return original(self, function_name, qualifier, body, headers, response_headers)
        return _invoke(route, body, headers, response_headers)

    invoke.routed_by_tiered_jobs = True  # type: ignore[attr-defined]
    LambdaBackend.invoke = invoke  # type: ignore[method-assign]


def _invoke(route: tuple[FunctionConfig, Runner], body: Any, headers: Any, response_headers: dict[str, str]) -> bytes:
    function, runner = route
    invocation_type = _header(headers, "X-Amz-Invocation-Type") or "RequestResponse"
    response_headers["X-Amz-Executed-Version"] = "$LATEST"
    if invocation_type == "DryRun":
        return b""
    try:
        event = json.loads(body) if body else {}
    except ValueError:
        response_headers["x-amz-function-error"] = "Unhandled"
        return _error_payload("Runtime.UserCodeSyntaxError", "the payload is not valid JSON")
    if invocation_type == "Event":
        threading.Thread(
            target=runner, args=(function, event, lambda line: None), name=f"invoke-event-{function.name}", daemon=True
        ).start()
        return b""
    log: list[str] = []
    invocation = runner(function, event, log.append)
    if _header(headers, "X-Amz-Log-Type") == "Tail":
        tail = "\n".join(log).encode()[-LOG_TAIL_BYTES:]
        response_headers["x-amz-log-result"] = base64.b64encode(tail).decode()
    if invocation.error is not None:
        response_headers["x-amz-function-error"] = "Unhandled"
        return _error_payload(invocation.error.error_type, invocation.error.message)
    payload = json.dumps(invocation.response).encode()
    response_headers["Content-Length"] = str(len(payload))
    return payload


def _error_payload(error_type: str, message: str) -> bytes:
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    value: str | None = headers.get(name)
    if value is None:
        value = headers.get(name.lower())
    return value
