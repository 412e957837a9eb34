"""Execution environments for the local runtime: where and how a handler actually runs.

* :class:`WorkerInvoker` (the default) runs each execution environment in its own process, as
  Lambda does: the function's environment is set when the process starts, the handler module is
  imported once (a cold start) and then invoked warm, one event at a time. Module-level caches,
  Powertools reading its variables at import, and ``os.environ`` itself are therefore per
  function, exactly as on Lambda; a run past the function's timeout kills the process
  (Lambda's "Task timed out") and the next batch starts a new one. The function's output
  (logs, EMF metrics) is its log stream, handed line by line to a ``log_sink``.
* :class:`InProcessInvoker` calls the handler in this process: no process start-up and every
  boto3 call visible to hooks and fakes in the caller (tests, benchmarks, fault injection).
  Because the environment is process-global, one process hosts one function at a time; a second
  function with a different environment is refused with a clear error.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from emulator import worker
from emulator.esm import FunctionConfig, Invocation, InvocationError
from emulator.server import Endpoint

#: Lambda's init phase limit: a handler module that takes longer to import fails the invocation.
INIT_TIMEOUT_SECONDS = 10
#: How long :meth:`WorkerInvoker.close` waits for a worker to exit before killing it.
CLOSE_GRACE_SECONDS = 5

LogSink = Callable[[str, str, str], None]
"""``log_sink(function_name, log_stream_name, line)``: one line of a function's log stream."""


def lambda_environment(function: FunctionConfig, endpoint: Endpoint | None, log_stream: str) -> dict[str, str]:
    """The variables Lambda sets for ``function``, plus the endpoint of the embedded AWS.

    The function's own variables come first; Lambda's reserved ones (region, function name,
    memory...) override them as on Lambda. ``endpoint`` adds ``AWS_ENDPOINT_URL`` and fake
    credentials: the one thing that differs from AWS, and it needs no branch in the code.
    """
    env = dict(function.environment)
    env.update(
        {
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "LAMBDA_TASK_ROOT": function.code_root,
            "_HANDLER": function.handler,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}",
            "AWS_LAMBDA_FUNCTION_NAME": function.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": function.log_group_name,
            "AWS_LAMBDA_LOG_STREAM_NAME": log_stream,
            "AWS_REGION": function.region,
            "AWS_DEFAULT_REGION": function.region,
        }
    )
    if endpoint is not None:
        env.update({name: value for name, value in endpoint.client_env().items() if value})
    return env


def _log_stream_name() -> str:
    return time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex


def _request(function: FunctionConfig, event: dict[str, Any]) -> dict[str, Any]:
    return {
        "event": event,
        "request_id": str(uuid.uuid4()),
        "function_arn": function.arn,
        "deadline_ms": int(time.time() * 1000) + function.timeout_seconds * 1000,
    }


def _timeout_error(function: FunctionConfig) -> InvocationError:
    return InvocationError(
        "Sandbox.Timedout", f"Task timed out after {function.timeout_seconds}.00 seconds", timed_out=True
    )


class WorkerInvoker:
    """One execution environment in a child process (started on the first invocation)."""

    def __init__(
        self,
        function: FunctionConfig,
        endpoint: Endpoint | None,
        log_sink: LogSink | None = None,
        python: str = sys.executable,
    ):
        self.function = function
        self._endpoint = endpoint
        self._log_sink = log_sink
        self._python = python
        self._process: subprocess.Popen[bytes] | None = None
        self._log_thread: threading.Thread | None = None
        self._buffer = b""
        #: This environment's log stream (one per execution environment, as on Lambda).
        self.log_stream = ""

    # -- lifecycle ---------------------------------------------------------------------------

    def _spawn(self) -> InvocationError | None:
        """Start the process and import the handler (the cold start); an error means no environment."""
        function = self.function
        self.log_stream = _log_stream_name()
        env = lambda_environment(function, self._endpoint, self.log_stream)
        env["PATH"] = os.environ.get("PATH", os.defpath)
        self._process = subprocess.Popen(
            [self._python, "-I", worker.__file__, function.code_root, function.handler, *function.layer_paths],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=function.code_root,
            env=env,
        )
        self._buffer = b""
        self._log_thread = threading.Thread(
            target=self._forward_logs,
            args=(self._process,),
            name=f"worker-log-{function.name}-{self._process.pid}",
            daemon=True,
        )
        self._log_thread.start()
        try:
            message = self._read_message(INIT_TIMEOUT_SECONDS)
        except EOFError:
            message = {"error": {"errorType": "Runtime.ExitError", "errorMessage": "the runtime exited during init"}}
        if message is not None and message.get("ready"):
            return None
        self._kill()
        if message is None:
            return InvocationError("Runtime.InitError", f"the handler did not load within {INIT_TIMEOUT_SECONDS} s")
        return InvocationError("Runtime.ImportModuleError", _error_text(message["error"]))

    def _forward_logs(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            if self._log_sink is not None:
                self._log_sink(self.function.name, self.log_stream, raw.decode("utf-8", "replace").rstrip("\n"))

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        self._finish(process)

    def _finish(self, process: subprocess.Popen[bytes]) -> None:
        if self._log_thread is not None:
            self._log_thread.join()
            self._log_thread = None
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    def close(self) -> None:
        """End the environment: close its input so it exits, kill it if it does not."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(CLOSE_GRACE_SECONDS)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        self._finish(process)

    # -- invocation --------------------------------------------------------------------------

    def invoke(self, event: dict[str, Any]) -> Invocation:
        started = time.monotonic()
        cold = self._process is None
        if cold:
            error = self._spawn()
            if error is not None:
                return Invocation(error=error, duration_ms=_ms_since(started), cold_start=True)
        invoke_started = time.monotonic()
        process = self._process
        assert process is not None and process.stdin is not None
        request = _request(self.function, event)
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
        except OSError:
            self._kill()
            return Invocation(
                error=InvocationError("Runtime.ExitError", "the runtime exited before the invocation"),
                duration_ms=_ms_since(invoke_started),
                cold_start=cold,
            )
        try:
            message = self._read_message(self.function.timeout_seconds, deadline_ms=request["deadline_ms"])
        except EOFError:
            self._kill()
            return Invocation(
                error=InvocationError("Runtime.ExitError", "the runtime exited during the invocation"),
                duration_ms=_ms_since(invoke_started),
                cold_start=cold,
            )
        duration = _ms_since(invoke_started)
        if message is None:
            self._kill()
            return Invocation(error=_timeout_error(self.function), duration_ms=duration, cold_start=cold)
        if "error" in message:
            return Invocation(
                error=InvocationError(message["error"]["errorType"], message["error"]["errorMessage"]),
                duration_ms=duration,
                cold_start=cold,
            )
        return Invocation(response=message["response"], duration_ms=duration, cold_start=cold)

    def _read_message(self, timeout_seconds: float, deadline_ms: int | None = None) -> dict[str, Any] | None:
        """The next protocol line, or ``None`` on timeout; :class:`EOFError` when the process ended."""
        process = self._process
        assert process is not None and process.stdout is not None
        fd = process.stdout.fileno()
        if deadline_ms is not None:  # the invocation's own deadline, as the context reports it
            timeout_seconds = max(0.0, deadline_ms / 1000 - time.time())
        deadline = time.monotonic() + timeout_seconds
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer


class InProcessInvoker:
    """Calls the handler in this process with the function's environment applied to ``os.environ``."""

    _lock = threading.Lock()
    #: The environment applied by open invokers, and how many hold it.
    _applied: dict[str, str] | None = None
    _saved: dict[str, str | None] = {}
    _holders = 0

    def __init__(self, function: FunctionConfig, endpoint: Endpoint | None = None):
        self.function = function
        env = lambda_environment(function, endpoint, _log_stream_name())
        env.pop("AWS_LAMBDA_LOG_STREAM_NAME")  # differs per environment; one process shares one
        self._acquire(env)
        self._closed = False
        self._handler: Callable[[Any, Any], Any] | None = None

    @classmethod
    def _acquire(cls, env: Mapping[str, str]) -> None:
        with cls._lock:
            if cls._applied is not None:
                if cls._applied != dict(env):
                    raise RuntimeError(
                        "this process already hosts a function with another environment; in-process "
                        "invocation runs one function per process (os.environ is process-global) — "
                        "use WorkerInvoker for several functions"
                    )
                cls._holders += 1
                return
            cls._saved = {name: os.environ.get(name) for name in env}
            os.environ.update(env)
            cls._applied, cls._holders = dict(env), 1
            _forget_cached_clients()

    @classmethod
    def _release(cls) -> None:
        with cls._lock:
            cls._holders -= 1
            if cls._holders:
                return
            for name, value in cls._saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            cls._applied, cls._saved = None, {}
            _forget_cached_clients()

    def invoke(self, event: dict[str, Any]) -> Invocation:
        cold = self._handler is None
        started = time.monotonic()
        if cold:
            try:
                self._handler = worker.resolve_handler(self.function.handler)
            except Exception as exc:  # noqa: BLE001 - Lambda's Runtime.ImportModuleError
                return Invocation(
                    error=InvocationError("Runtime.ImportModuleError", str(exc)),
                    duration_ms=_ms_since(started),
                    cold_start=True,
                )
        request = _request(self.function, event)
        context = worker.LambdaContext(
            function_name=self.function.name,
            memory_mb=self.function.memory_mb,
            invoked_function_arn=self.function.arn,
            request_id=request["request_id"],
            deadline_ms=request["deadline_ms"],
            log_group_name=self.function.log_group_name,
            log_stream_name="in-process",
        )
        invoke_started = time.monotonic()
        try:
            response = self._handler(event, context)  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001 - an unhandled error fails the invocation
            return Invocation(
                error=InvocationError(type(exc).__name__, str(exc)),
                duration_ms=_ms_since(invoke_started),
                cold_start=cold,
            )
        duration = _ms_since(invoke_started)
        if duration > self.function.timeout_seconds * 1000:
            # A running call cannot be stopped in-process; count it as Lambda would have: timed out.
            return Invocation(error=_timeout_error(self.function), duration_ms=duration, cold_start=cold)
        try:
            response = json.loads(json.dumps(response))  # what the caller gets is what JSON carries
        except (TypeError, ValueError) as exc:
            return Invocation(
                error=InvocationError("Runtime.MarshalError", str(exc)), duration_ms=duration, cold_start=cold
            )
        return Invocation(response=response, duration_ms=duration, cold_start=cold)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._release()


def _forget_cached_clients() -> None:
    """Drop the runtime's cached boto3 clients: they were built for the old environment."""
    from tiered_jobs.runtime import aws

    aws.reset()


def _ms_since(started: float) -> float:
    return (time.monotonic() - started) * 1000


def _error_text(error: Mapping[str, Any]) -> str:
    return f"{error.get('errorType')}: {error.get('errorMessage')}"


def worker_factory(
    endpoint: Endpoint | None, log_sink: LogSink | None = None
) -> Callable[[FunctionConfig], WorkerInvoker]:
    """An :data:`~emulator.esm.InvokerFactory` of process-per-environment invokers."""
    return lambda function: WorkerInvoker(function, endpoint, log_sink)


def in_process_factory(endpoint: Endpoint | None = None) -> Callable[[FunctionConfig], InProcessInvoker]:
    """An :data:`~emulator.esm.InvokerFactory` of in-process invokers (one function per process)."""
    return lambda function: InProcessInvoker(function, endpoint)
