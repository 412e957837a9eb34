"""The local event-source-mapping runtime, measured on moto's server.

* SQS requests per 1 000 consumed jobs (receive + delete by the mapping, visibility changes and
  dead-letter sends by the consumer), counted with botocore hooks, empty long polls included;
* throughput of the runtime (receive -> Lambda event -> invoke -> delete exactly the successes)
  with a no-op handler, next to a raw receive/delete loop at the same queue depth, and with the
  real consumer (idempotency on DynamoDB, metrics) for information;
* the average batch size and invocation time the cost model uses.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

from tests.support.tier import analytics_bodies, chunks, create_tier

from .calls import CallCounter
from .runtime import consumer_runtime, drain

#: 5 % of the jobs fail once (transient) and succeed on their retry: visibility changes count too.
FLAKY_EVERY = 20


def _fill(tier, bodies: list[str]) -> None:
    for batch in chunks(bodies, 10):
        tier.sqs.send_message_batch(
            QueueUrl=tier.queue_url, Entries=[{"Id": str(i), "MessageBody": body} for i, body in enumerate(batch)]
        )


def _bodies(jobs: int, prefix: str, flaky: bool) -> list[str]:
    from tiered_jobs.contract.envelope import build

    bodies = analytics_bodies(jobs, prefix=prefix)
    for i in range(0, jobs, FLAKY_EVERY) if flaky else ():
        bodies[i] = build("demo.flaky", {"fail_times": 1, "error": "transient"}, f"{prefix}-flaky-{i}").to_json()
    return bodies


def measure(jobs: int = 1000, concurrency: int = 2) -> dict[str, Any]:
    import boto3

    from emulator.server import EmbeddedAws, client_environment
    from tiered_jobs.runtime.backoff import RetryPolicy

    with EmbeddedAws() as endpoint, client_environment(endpoint):
        results: dict[str, Any] = {"jobs": jobs, "concurrency": concurrency}

        # 1. requests per 1 000 consumed jobs (clean, and with 5 % transient failures), batch figures
        for label, flaky in (("clean", False), ("with_5pct_retries", True)):
            tier = create_tier(f"consume-{label.replace('_', '-')}", endpoint_url=endpoint.url)
            counter = CallCounter()
            runtime = consumer_runtime(
                tier,
                clients=lambda counter=counter: {
                    "sqs": counter.attach(boto3.client("sqs")),
                    "dynamodb": boto3.client("dynamodb"),
                },
                esm_sqs=counter.attach(boto3.client("sqs")),
                concurrency=concurrency,
                retry=RetryPolicy(max_attempts=3, schedule=(1,), jitter=0.0),
            )
            _fill(tier, _bodies(jobs, label, flaky))
            counter.reset()
            runtime.start()
            try:
                drain(tier, timeout=600)
            finally:
                runtime.stop(timeout=60)
            stats = runtime.stats.snapshot()
            sqs_ops = counter.by_operation("sqs")
            results[label] = {
                "sqs_requests_per_1000": sum(sqs_ops.values()) * 1000 / jobs,
                "by_operation": sqs_ops,
                "invocations": stats["batches"],
                "records_per_invocation": stats["records"] / max(1, stats["batches"]),
            }

        # 2. throughput: raw loop, runtime with a no-op handler, runtime with the real consumer
        results["raw_loop_jobs_per_second"] = _raw_loop(create_tier("raw", endpoint_url=endpoint.url), jobs)
        results["runtime_noop_jobs_per_second"], _, results["runtime_noop_warnings"] = _runtime_rate(
            create_tier("noop", endpoint_url=endpoint.url),
            jobs,
            concurrency,
            handler=lambda event, context: {"batchItemFailures": []},
        )
        consumer_tier = create_tier("real", endpoint_url=endpoint.url)
        (
            results["runtime_consumer_jobs_per_second"],
            results["consumer_ms_per_invocation"],
            results["runtime_consumer_warnings"],
        ) = _runtime_rate(consumer_tier, jobs, concurrency)
    results["runtime_vs_raw"] = results["runtime_noop_jobs_per_second"] / results["raw_loop_jobs_per_second"]
    return results


def _raw_loop(tier, jobs: int) -> float:
    _fill(tier, analytics_bodies(jobs, prefix="raw"))
    started, consumed = time.monotonic(), 0
    while consumed < jobs:
        messages = tier.sqs.receive_message(QueueUrl=tier.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
            "Messages", []
        )
        if messages:
            tier.sqs.delete_message_batch(
                QueueUrl=tier.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )
            consumed += len(messages)
    return jobs / (time.monotonic() - started)


def _runtime_rate(tier, jobs: int, concurrency: int, handler=None) -> tuple[float, float, list[str]]:
    """Jobs per second until the queue first drained, the mean invocation time (ms), and what the mapping
    warned of meanwhile (a receive, an invocation or a delete that failed leaves its batch to come back
    after the queue's visibility timeout, a minute here: a rate that fell, with its reason)."""
    import boto3

    from tiered_jobs.runtime.backoff import RetryPolicy

    _fill(tier, analytics_bodies(jobs, prefix="rate"))
    durations: list[float] = []
    runtime = consumer_runtime(
        tier,
        clients=lambda: {"sqs": boto3.client("sqs"), "dynamodb": boto3.client("dynamodb")},
        esm_sqs=boto3.client("sqs"),
        concurrency=concurrency,
        retry=RetryPolicy(),
        handler=handler,
        listener=lambda function, invocation: durations.append(invocation.duration_ms),
    )
    with _mapping_warnings() as warned:
        started = time.monotonic()
        runtime.start()
        try:
            emptied = drain(tier, timeout=600, poll=0.1, quiet_checks=1)
        finally:
            runtime.stop(timeout=60)
    return jobs / (emptied - started), sum(durations) / max(1, len(durations)), warned


@contextlib.contextmanager
def _mapping_warnings() -> Iterator[list[str]]:
    """The text of each warning the local mapping logs meanwhile, kept here and not printed: ``make bench``
    sets its logger to ERROR (and so may a test before), so it is lowered to WARNING for the while, and
    kept from the root logger's handlers; both are restored after."""
    found: list[str] = []
    mapping_log = logging.getLogger("emulator.esm")
    kept = _Kept(found)
    level, propagate = mapping_log.level, mapping_log.propagate
    mapping_log.addHandler(kept)
    mapping_log.setLevel(logging.WARNING)
    mapping_log.propagate = False
    try:
        yield found
    finally:
        mapping_log.removeHandler(kept)
        mapping_log.setLevel(level)
        mapping_log.propagate = propagate


class _Kept(logging.Handler):
    """Keeps the text of each record it is given."""

    def __init__(self, found: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.found = found

    def emit(self, record: logging.LogRecord) -> None:
        self.found.append(record.getMessage())
