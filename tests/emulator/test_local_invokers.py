"""Execution environments: a worker process per environment, and the in-process invoker."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from emulator.esm import FunctionConfig, InvocationError
from emulator.invokers import InProcessInvoker, WorkerInvoker, lambda_environment
from emulator.server import Endpoint

#: The fake handlers' code root: the repository, as the asset root is for the real ones.
ROOT = str(Path(__file__).resolve().parents[2])
ENDPOINT = Endpoint("http://127.0.0.1:1")  # never called: the fake handlers make no AWS call


def function(handler: str, name: str = "fn", timeout: int = 30, **env: str) -> FunctionConfig:
    return FunctionConfig(
        name=name,
        arn=f"arn:aws:lambda:us-east-1:123456789012:function:{name}",
        handler=f"tests.emulator.local_fake_handlers.{handler}",
        environment={"FAKE_SETTING": "on", **env},
        timeout_seconds=timeout,
        memory_mb=256,
        region="us-east-1",
        code_root=ROOT,
    )


EVENT = {"Records": [{"messageId": "1", "body": "x"}]}


@pytest.fixture
def worker():
    invokers: list[WorkerInvoker] = []
    lines: list[tuple[str, str]] = []

    def make(handler: str, **kwargs) -> WorkerInvoker:
        invoker = WorkerInvoker(
            function(handler, **kwargs), ENDPOINT, lambda name, stream, line: lines.append((name, line))
        )
        invokers.append(invoker)
        return invoker

    make.lines = lines
    yield make
    for invoker in invokers:
        invoker.close()


def test_worker_runs_the_handler_with_the_functions_environment_and_context(worker):
    invoker = worker("describe")

    first = invoker.invoke(EVENT)
    second = invoker.invoke(EVENT)

    assert first.error is None and first.cold_start and not second.cold_start
    assert first.response["pid"] == second.response["pid"] != os.getpid()  # warm: same environment
    assert first.response["env"]["FAKE_SETTING"] == "on"
    assert first.response["env"]["AWS_LAMBDA_FUNCTION_NAME"] == "fn"
    assert first.response["env"]["AWS_ENDPOINT_URL"] == ENDPOINT.url
    assert first.response["env"]["LAMBDA_TASK_ROOT"] == ROOT
    assert first.response["env"]["_X_AMZN_TRACE_ID"].endswith("Sampled=0")
    context = first.response["context"]
    assert context["function_name"] == "fn"
    assert context["memory_limit_in_mb"] == "256"
    assert context["invoked_function_arn"].endswith(":function:fn")
    assert first.response["context"]["aws_request_id"] != second.response["context"]["aws_request_id"]
    assert 25_000 < context["remaining_ms"] <= 30_000
    # stdout is the function's log stream, read by a thread of its own: it may arrive just after the answer
    deadline = time.monotonic() + 10
    while ("fn", "describe called") not in worker.lines and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ("fn", "describe called") in worker.lines


def test_worker_reports_handler_errors_and_stays_warm(worker):
    invoker = worker("crash")
    assert invoker.invoke(EVENT).error == InvocationError("RuntimeError", "boom")
    assert invoker.invoke(EVENT).cold_start is False
    assert any("RuntimeError: boom" in line for _, line in worker.lines)


def test_worker_kills_a_handler_past_its_timeout_and_starts_a_new_environment(worker):
    invoker = worker("sleep_past_timeout", timeout=1)
    invocation = invoker.invoke(EVENT)
    assert invocation.error == InvocationError("Sandbox.Timedout", "Task timed out after 1.00 seconds", timed_out=True)
    assert invoker.invoke(EVENT).cold_start is True


def test_worker_reports_a_process_that_exits_mid_invocation(worker):
    invocation = worker("exit_hard").invoke(EVENT)
    assert invocation.error is not None and invocation.error.error_type == "Runtime.ExitError"


def test_worker_reports_import_errors_like_lambda(worker):
    invocation = worker("no_such_handler").invoke(EVENT)
    assert invocation.cold_start
    assert invocation.error is not None and invocation.error.error_type == "Runtime.ImportModuleError"
    assert "no_such_handler" in invocation.error.message


@pytest.mark.parametrize("invoker_class", ["worker", "in_process"])
def test_a_response_json_cannot_carry_is_a_marshal_error(worker, invoker_class):
    if invoker_class == "worker":
        invoker = worker("unserialisable")
    else:
        invoker = InProcessInvoker(function("unserialisable"))
    try:
        assert invoker.invoke(EVENT).error.error_type == "Runtime.MarshalError"
    finally:
        invoker.close()


def test_lambda_reserved_variables_override_the_functions_own():
    env = lambda_environment(function("describe", AWS_REGION="eu-west-1"), ENDPOINT, "stream")
    assert env["AWS_REGION"] == "us-east-1"
    assert env["FAKE_SETTING"] == "on"
    assert env["AWS_ENDPOINT_URL"] == ENDPOINT.url
    assert "AWS_SESSION_TOKEN" not in env


def test_in_process_applies_the_environment_then_restores_it(monkeypatch):
    monkeypatch.delenv("FAKE_SETTING", raising=False)
    invoker = InProcessInvoker(function("describe"))
    try:
        response = invoker.invoke(EVENT).response
        assert response["env"]["FAKE_SETTING"] == "on"
        assert response["pid"] == os.getpid()
        assert response["context"]["memory_limit_in_mb"] == "256"
    finally:
        invoker.close()
    assert "FAKE_SETTING" not in os.environ
    assert os.environ["AWS_REGION"] == "us-east-1"


def test_in_process_hosts_one_function_environment_at_a_time():
    first = InProcessInvoker(function("describe"))
    same = InProcessInvoker(function("describe"))
    try:
        with pytest.raises(RuntimeError, match="one function per process"):
            InProcessInvoker(function("describe", name="other"))
    finally:
        first.close()
        same.close()
    InProcessInvoker(function("describe", name="other")).close()  # free again once all closed
