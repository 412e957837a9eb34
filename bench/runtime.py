"""The real consumer behind the local event-source-mapping runtime, with clients the caller wraps.

Each poller of the mapping gets its own execution environment (a new :class:`Consumer`, so its
own idempotency cache), as Lambda gives each concurrent invocation its own container. Clients
are built by ``clients()`` per environment, so a benchmark can count calls and a reliability
run can inject faults without touching the consumer or the jobs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tests.support.context import lambda_context
from tiered_jobs.contract.names import Handlers
from tiered_jobs.runtime.backoff import RetryPolicy

FUNCTION_NAME = "tiered-jobs-bench-consumer"
REGION = "us-east-1"


def consumer_runtime(
    tier,
    *,
    clients: Callable[[], dict[str, Any]],
    esm_sqs: Any,
    concurrency: int,
    retry: RetryPolicy,
    remaining_ms: int = 30_000,
    batch_size: int = 10,
    handler: Callable[[dict, Any], dict] | None = None,
    listener: Callable[[Any, Any], None] | None = None,
    rate_limits: Any = None,
    rate_limit_table: str | None = None,
    on_invoke: Callable[[dict, Any], None] | None = None,
    job_packages: tuple[str, ...] = ("functions.jobs",),
    control: Callable[[], Any] | None = None,
    archive: Callable[[], Any] | None = None,
    unique_table: str | None = None,
    too_new: tuple[int, int] | None = None,
    large_payloads: Any = None,
    batch_table: str | None = None,
    remaining_for: Callable[[dict], int] | None = None,
):
    """A started-ready ``MappingRuntime`` for ``tier``; ``handler`` replaces the consumer (baselines);
    ``on_invoke(event, invocation)`` sees every invocation (the invariant run records the crashed ones);
    ``job_packages`` are the job folders' packages the consumer imports (the invariant adds its own);
    ``control`` reads the mapping's state before every receive (the invariant run pauses it); ``archive``
    builds where the jobs that end unrun (expired, cancelled) are kept (``None``: none, they are dead-lettered);
    ``unique_table``: where unique jobs' locks are released (``None``: a stack before unique jobs);
    ``too_new``: (hold, bound) seconds for envelopes newer than the consumer (``None``: as deployed);
    ``batch_table``: where batch members are counted (``None``: a stack before batches)."""
    from aws_lambda_powertools import Logger

    from emulator.esm import (
        FunctionConfig,
        Invocation,
        InvocationError,
        MappingConfig,
        MappingRuntime,
    )
    from tiered_jobs.runtime.config import TierConfig
    from tiered_jobs.runtime.consumer import Consumer
    from tiered_jobs.runtime.job_modules import load_job_modules
    from tiered_jobs.runtime.registry import registry

    load_job_modules(job_packages)  # registers the example's jobs, its schemas first, as its consumer does

    # The time budget's margin: 10 % of the invocation, as the stack derives it from the timeout (without
    # its 2 s floor, which the invariant's 1.5 s invocations could not leave room for).
    config = TierConfig(
        stage="bench",
        tier="critical",
        queue_url=tier.queue_url,
        dlq_url=tier.dlq_url,
        idempotency_table=tier.idempotency_table,
        resources=tier.resources,
        retry=retry,
        time_budget_margin_ms=remaining_ms // 10,
        rate_limits=rate_limits,
        rate_limit_table=rate_limit_table,
        unique_table=unique_table,
        batch_table=batch_table,
    )
    if too_new is not None:
        config = replace(config, too_new_hold_seconds=too_new[0], too_new_max_age_seconds=too_new[1])
    if large_payloads is not None:  # the tier's Offload: pointer bodies are fetched from its bucket
        config = replace(config, large_payloads=large_payloads)
    function = FunctionConfig(
        name=FUNCTION_NAME,
        arn=f"arn:aws:lambda:{REGION}:123456789012:function:{FUNCTION_NAME}",
        handler=Handlers.CONSUMER,
        environment={},
        timeout_seconds=30,
        memory_mb=256,
        region=REGION,
        code_root=".",
    )

    class Environment:
        """One execution environment: a consumer with its own clients; a Lambda context per call.

        Not the emulator's ``InProcessInvoker``: that one runs the deployed handler by name with the
        function's environment in ``os.environ`` and the process-wide cached clients, whereas a
        benchmark needs each environment's own wrapped clients (call counts, injected faults), a
        chosen remaining time per invocation and, for baselines, a replacement handler.
        """

        def __init__(self, _function: Any):
            own = clients()
            self.handle = (
                handler
                or Consumer(
                    config,
                    registry,
                    client=own.__getitem__,
                    logger=Logger(service="bench", level="CRITICAL"),
                    archive=archive or (lambda: None),
                ).handle
            )

        def invoke(self, event: dict) -> Invocation:
            started = time.monotonic()
            # ``remaining_for(event)``: an invocation's own remaining time (the composed run's late ones).
            context = lambda_context(remaining_for(event) if remaining_for else remaining_ms, FUNCTION_NAME)
            try:
                response = self.handle(event, context)
            except BaseException as exc:  # noqa: BLE001 -- a crash ends the invocation, as on Lambda
                invocation = Invocation(
                    error=InvocationError(type(exc).__name__, str(exc)), duration_ms=(time.monotonic() - started) * 1000
                )
            else:
                invocation = Invocation(response=response, duration_ms=(time.monotonic() - started) * 1000)
            if on_invoke is not None:
                on_invoke(event, invocation)
            return invocation

        def close(self) -> None:
            pass

    mapping = MappingConfig(
        function=function,
        queue_url=tier.queue_url,
        queue_arn=tier.queue_arn,
        batch_size=batch_size,
        batching_window_seconds=0,
        maximum_concurrency=concurrency,
    )
    return MappingRuntime(mapping, Environment, esm_sqs, listener=listener, control=control)


def depth(tier, url: str | None = None) -> int:
    """Visible + in flight + delayed messages of a queue."""
    attrs = tier.sqs.get_queue_attributes(
        QueueUrl=url or tier.queue_url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )
    return sum(int(v) for v in attrs["Attributes"].values())


def drain(tier, timeout: float, poll: float = 0.5, quiet_checks: int = 3) -> float:
    """Wait until the main queue is empty ``quiet_checks`` times in a row; returns when it first was."""
    deadline = time.monotonic() + timeout
    quiet, emptied_at = 0, None
    while quiet < quiet_checks:
        if time.monotonic() > deadline:
            raise TimeoutError(f"queue not drained after {timeout} s (depth {depth(tier)})")
        if depth(tier) == 0:
            quiet += 1
            emptied_at = emptied_at or time.monotonic()
        else:
            quiet, emptied_at = 0, None
        time.sleep(poll)
    return emptied_at
