"""How cost grows with the work, and where a tier's concurrency, not SQS, becomes the limit.

Cost per 1 M jobs against batch size, job duration and duplicate rate, computed, not measured
again: the calls per job and per batch are **counted** by ``make bench`` (the publisher's
``SendMessageBatch`` per message, the mapping's receives and deletes per batch, the idempotency
calls of a new job and of a duplicate), and everything else is **modelled** with
:mod:`bench.cost`'s declared latency and prices (the job's own duration is the column's value,
billed as Lambda time). A *duplicate* is a second message of a job that already ran (a
publisher's retry, a replay): it is published, received and deleted like any other, answered by
one conditional write, and runs nothing. Rows are per 1 M jobs that ran, so at 50 % duplicates
1.5 M messages carry them.

**Concurrency.** A consumer runs one batch at a time, so one tier can finish at most
``max_concurrency * batch_size / invocation_seconds`` jobs per second, whatever SQS holds. An
SQS event source mapping starts with 5 concurrent invocations and adds up to 300 a minute while
messages wait, up to 1 250 per mapping by default (AWS Lambda developer guide, "Configuring
scaling behavior for SQS event source mappings"; the guide's earlier text said 1 000); its
``MaximumConcurrency`` (2 to 1 000) is the tier's ``max_concurrency``. Provisioned mode (minimum
and maximum event pollers, 2 to 200 by default) scales three times faster and is the way past
that ceiling, at a price per poller; the account's Lambda concurrency (1 000 per region by
default) is shared by every function. SQS standard queues take nearly unlimited requests, so for
these tiers the limit is always one of these settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .cost import LATENCY_MS, PER_INVOCATION_MS, PER_RECORD_MS, PRICES

BATCH_SIZES = (1, 5, 10)
DURATIONS_MS = (10.0, 100.0, 1000.0)
DUPLICATE_RATES = (0.0, 0.1, 0.5)
#: The example's volume: a user reads its cost and what caps it off the table.
JOBS_PER_DAY = 10_000_000
#: AWS's documented SQS event source mapping scaling (standard mode).
ESM_START_CONCURRENCY = 5
ESM_ADDED_PER_MINUTE = 300
ESM_DEFAULT_CEILING = 1250
ACCOUNT_CONCURRENCY = 1000


@dataclass(frozen=True)
class Counted:
    """The calls ``make bench`` counts, per message, per batch and per job (see the module's docstring)."""

    publish_requests_per_message: float = 0.1
    #: The mapping's ``ReceiveMessage`` per batch delivered, its empty long polls included.
    receives_per_batch: float = 1.04
    deletes_per_batch: float = 1.0
    #: Idempotency calls of a new job: one conditional write to start, one to finish (1 WRU each).
    new_job_calls: dict[str, float] = field(default_factory=lambda: {"PutItem": 1.0, "UpdateItem": 1.0})
    #: Of a duplicate: the one conditional write that finds the finished record (still 1 WRU).
    duplicate_calls: dict[str, float] = field(default_factory=lambda: {"PutItem": 1.0})
    memory_mb: int = 256

    @classmethod
    def from_bench(cls, measured: dict[str, Any], memory_mb: int) -> Counted:
        """From ``bench.__main__.figures``: the publisher, the clean consume run and the idempotency figures."""
        clean = measured["consume"]["clean"]
        batches = max(1, clean["invocations"])
        ops = clean["by_operation"]
        idem = measured["idempotency"]
        return cls(
            publish_requests_per_message=measured["publisher"]["ours_per_1000"] / 1000,
            receives_per_batch=ops.get("ReceiveMessage", 0) / batches,
            deletes_per_batch=ops.get("DeleteMessageBatch", 0) / batches,
            new_job_calls={op: n / 1000 for op, n in idem["new_per_1000"].items()},
            duplicate_calls={op: n / 1000 for op, n in idem["duplicate_per_1000"].items()},
            memory_mb=memory_mb,
        )


def invocation_seconds(batch_size: int, duration_ms: float, counted: Counted) -> float:
    """Modelled billed time of one batch of new jobs: the invocation, each record, each job and its calls."""
    per_job_ms = PER_RECORD_MS + duration_ms + sum(counted.new_job_calls.values()) * LATENCY_MS["dynamodb"]
    return (PER_INVOCATION_MS + batch_size * per_job_ms) / 1000


def cost_per_million(batch_size: int, duration_ms: float, duplicate_rate: float, counted: Counted) -> dict[str, Any]:
    """USD per 1 M jobs run (and ``duplicate_rate`` x 1 M duplicate messages), by service."""
    jobs = 1_000_000
    duplicates = jobs * duplicate_rate
    messages = jobs + duplicates
    batches = messages / batch_size
    gb_second = counted.memory_mb / 1024 * PRICES["lambda_arm64_per_gb_second"]
    new_calls, dup_calls = sum(counted.new_job_calls.values()), sum(counted.duplicate_calls.values())
    requests = {
        "publish": messages * counted.publish_requests_per_message,
        "receive": batches * counted.receives_per_batch,
        "delete": batches * counted.deletes_per_batch,
    }
    billed_seconds = (
        batches * PER_INVOCATION_MS
        + messages * PER_RECORD_MS
        + jobs * (duration_ms + new_calls * LATENCY_MS["dynamodb"])
        + duplicates * dup_calls * LATENCY_MS["dynamodb"]
    ) / 1000
    parts = {
        "sqs": sum(requests.values()) / 1e6 * PRICES["sqs_per_million_requests"],
        "dynamodb": (jobs * new_calls + duplicates * dup_calls) / 1e6 * PRICES["dynamodb_per_million_write_units"],
        "lambda_requests": batches / 1e6 * PRICES["lambda_per_million_requests"],
        "lambda_compute": billed_seconds * gb_second,
    }
    return {
        "batch_size": batch_size,
        "duration_ms": duration_ms,
        "duplicate_rate": duplicate_rate,
        "usd_per_million_jobs": round(sum(parts.values()), 4),
        "parts": {k: round(v, 4) for k, v in parts.items()},
        "sqs_requests": {k: round(v) for k, v in requests.items()},
        "invocations": round(batches),
        "billed_seconds": round(billed_seconds),
    }


def concurrency(batch_size: int, duration_ms: float, counted: Counted, max_concurrency: int) -> dict[str, Any]:
    """What a tier of ``max_concurrency`` can finish, and what :data:`JOBS_PER_DAY` needs."""
    seconds = invocation_seconds(batch_size, duration_ms, counted)
    per_consumer = batch_size / seconds  # jobs per second of one busy consumer
    needed_rate = JOBS_PER_DAY / 86_400
    needed = max(2, math.ceil(needed_rate / per_consumer))  # the mapping's minimum is 2
    if needed > ACCOUNT_CONCURRENCY:
        cap = f"the account's {ACCOUNT_CONCURRENCY} concurrent executions (and the mapping's {ESM_DEFAULT_CEILING})"
    elif needed > max_concurrency:
        cap = f"max_concurrency {max_concurrency}: raise it to {needed}"
    else:
        cap = f"none ({needed} consumers at the day's average; max_concurrency {max_concurrency} leaves room)"
    return {
        "invocation_seconds": round(seconds, 4),
        "jobs_per_second_per_consumer": round(per_consumer, 2),
        "jobs_per_day_at_max_concurrency": round(per_consumer * max_concurrency * 86_400),
        "jobs_per_day_at_esm_ceiling": round(per_consumer * min(ESM_DEFAULT_CEILING, ACCOUNT_CONCURRENCY) * 86_400),
        "consumers_for_jobs_per_day": needed,
        "minutes_to_scale_to_them": round(max(0, needed - ESM_START_CONCURRENCY) / ESM_ADDED_PER_MINUTE, 2),
        "caps_jobs_per_day": cap,
    }


def table(counted: Counted, max_concurrency: int = 10) -> list[dict[str, Any]]:
    """One row per batch size and job duration: the cost at each duplicate rate, and the concurrency figures."""
    rows = []
    for batch_size in BATCH_SIZES:
        for duration in DURATIONS_MS:
            costs = [cost_per_million(batch_size, duration, rate, counted) for rate in DUPLICATE_RATES]
            rows.append(
                {
                    "batch_size": batch_size,
                    "duration_ms": duration,
                    "usd_per_million_jobs": {
                        f"{rate:.0%}": c["usd_per_million_jobs"] for rate, c in zip(DUPLICATE_RATES, costs, strict=True)
                    },
                    "usd_per_day_at_jobs_per_day": round(costs[0]["usd_per_million_jobs"] * JOBS_PER_DAY / 1e6, 2),
                    **concurrency(batch_size, duration, counted, max_concurrency),
                }
            )
    return rows


def markdown(rows: list[dict[str, Any]], max_concurrency: int = 10) -> str:
    """The table as ``docs/benchmarks.md`` shows it."""
    rates = " | ".join(f"$ / 1 M, {rate:.0%} dup." for rate in DUPLICATE_RATES)
    lines = [
        f"| batch | job | {rates} | 10 M jobs a day (0 % dup.) | one consumer | "
        f"jobs a day at max_concurrency {max_concurrency} | consumers for 10 M a day | what caps it |",
        "|---|---|" + "---|" * (len(DUPLICATE_RATES) + 5),
    ]
    for r in rows:
        costs = " | ".join(f"${v:.2f}" for v in r["usd_per_million_jobs"].values())
        lines.append(
            f"| {r['batch_size']} | {_ms(r['duration_ms'])} | {costs} | "
            f"${r['usd_per_day_at_jobs_per_day']:.2f} a day | "
            f"{r['jobs_per_second_per_consumer']:g} jobs/s | {r['jobs_per_day_at_max_concurrency'] / 1e6:.1f} M | "
            f"{r['consumers_for_jobs_per_day']} | {r['caps_jobs_per_day']} |"
        )
    return "\n".join(lines) + "\n"


def _ms(value: float) -> str:
    return f"{value / 1000:g} s" if value >= 1000 else f"{value:g} ms"
