"""AWS cost per 1 M jobs, from the counted calls and a declared model of AWS latency.

Prices: us-east-1 public list prices (standard SQS queue, DynamoDB on-demand, Lambda arm64), free
tiers ignored. Edit ``PRICES`` for another region or a newer price list.

Lambda bills the consumer's time, and that time is mostly waiting for AWS calls. Measured against
moto's Python server it says more about moto than about AWS and changes from run to run, so the
billed time is computed instead: the calls the consumer makes per invocation (counted) times the
declared latency of one call (:data:`LATENCY_MS`), plus declared work per record and per
invocation. moto's measured invocation time is reported beside it, for information only.
"""

from __future__ import annotations

from typing import Any

PRICES = {
    "sqs_per_million_requests": 0.40,
    "dynamodb_per_million_write_units": 0.625,
    #: An eventually consistent read of an item up to 4 KB is half a read unit.
    "dynamodb_per_million_read_units": 0.125,
    "lambda_per_million_requests": 0.20,
    "lambda_arm64_per_gb_second": 0.0000133334,
}

#: Declared latency of one request from a Lambda function to the service in the same region (ms).
#: DynamoDB: "single-digit millisecond performance at any scale" (aws.amazon.com/dynamodb/features);
#: 5 ms is the middle of that range for a PutItem / UpdateItem / GetItem of a small item.
#: SQS publishes no latency figure; 15 ms is an assumption for a SendMessage(Batch) /
#: ChangeMessageVisibilityBatch round trip in-region, stated here so it can be changed.
LATENCY_MS = {"dynamodb": 5.0, "sqs": 15.0}
#: Work per record besides AWS calls: parse, validate, run a no-op job, log (assumption).
PER_RECORD_MS = 1.0
#: Per invocation: the batch processor and one EMF flush (assumption).
PER_INVOCATION_MS = 5.0

FORMULA = (
    "cost = (publish_req + consume_req) * jobs * sqs_price"
    " + idempotency_WRU * jobs * dynamodb_write_price"
    " + invocations * (lambda_request_price + modeled_seconds * memory_GB * gb_s_price),"
    " modeled_seconds = PER_INVOCATION_MS + records * PER_RECORD_MS + sum(calls * LATENCY_MS[service])"
)


def modeled_seconds(records_per_invocation: float, consumer_calls_per_invocation: dict[str, float]) -> float:
    """Billed seconds of one invocation under the declared latency model."""
    calls_ms = sum(n * LATENCY_MS[service] for service, n in consumer_calls_per_invocation.items())
    return (PER_INVOCATION_MS + records_per_invocation * PER_RECORD_MS + calls_ms) / 1000


def per_million_jobs(
    *,
    publish_requests_per_job: float,
    consume_requests_per_job: float,
    idempotency_write_units_per_job: float,
    records_per_invocation: float,
    consumer_calls_per_invocation: dict[str, float],
    memory_mb: int,
    moto_seconds_per_invocation: float | None = None,
) -> dict[str, Any]:
    jobs = 1_000_000
    invocations = jobs / records_per_invocation
    seconds = modeled_seconds(records_per_invocation, consumer_calls_per_invocation)
    parts = {
        "sqs": (publish_requests_per_job + consume_requests_per_job) * jobs / 1e6 * PRICES["sqs_per_million_requests"],
        "dynamodb_idempotency": idempotency_write_units_per_job
        * jobs
        / 1e6
        * PRICES["dynamodb_per_million_write_units"],
        "lambda_requests": invocations / 1e6 * PRICES["lambda_per_million_requests"],
        "lambda_compute": invocations * seconds * memory_mb / 1024 * PRICES["lambda_arm64_per_gb_second"],
    }
    moto = None
    if moto_seconds_per_invocation is not None:
        moto = {
            "seconds_per_invocation": round(moto_seconds_per_invocation, 4),
            "lambda_compute_if_billed": round(
                invocations * moto_seconds_per_invocation * memory_mb / 1024 * PRICES["lambda_arm64_per_gb_second"], 4
            ),
        }
    return {
        "usd_per_million_jobs": round(sum(parts.values()), 4),
        "parts": {k: round(v, 4) for k, v in parts.items()},
        "inputs": {
            "publish_requests_per_job": publish_requests_per_job,
            "consume_requests_per_job": consume_requests_per_job,
            "idempotency_write_units_per_job": idempotency_write_units_per_job,
            "records_per_invocation": round(records_per_invocation, 2),
            "consumer_calls_per_invocation": {k: round(v, 3) for k, v in consumer_calls_per_invocation.items()},
            "modeled_seconds_per_invocation": round(seconds, 4),
            "memory_mb": memory_mb,
        },
        "latency_model_ms": {**LATENCY_MS, "per_record": PER_RECORD_MS, "per_invocation": PER_INVOCATION_MS},
        "measured_on_moto": moto,
        "prices": PRICES,
        "formula": FORMULA,
    }


def rate_limiter_per_million_jobs(
    *,
    reads_per_job: float,
    writes_per_job: float,
    resends_per_job: float,
    wait_seconds_per_job: float,
    memory_mb: int,
    records_per_invocation: float = 10.0,
) -> dict[str, Any]:
    """What the rate limiter adds per 1 M jobs: its DynamoDB calls (failed conditions are billed
    writes too), the SQS calls of held jobs (the re-send batch, and receiving and deleting the
    copy when it returns: three requests per ten held jobs), the Lambda time its calls take (one
    write per claim, a second after a lost condition, a read on a container's first), the Lambda
    a held job's copy costs when it returns (its share of an invocation at the run's records per
    invocation, its record's work, its share of the re-send call), and the Lambda time spent
    waiting for a turn (billed like any other)."""
    jobs = 1_000_000
    gb_second = memory_mb / 1024 * PRICES["lambda_arm64_per_gb_second"]
    copy_invocations = resends_per_job * jobs / max(1.0, records_per_invocation)
    copy_ms = PER_RECORD_MS + LATENCY_MS["sqs"] / 10
    parts = {
        "dynamodb_buckets": jobs
        / 1e6
        * (
            reads_per_job * 0.5 * PRICES["dynamodb_per_million_read_units"]
            + writes_per_job * PRICES["dynamodb_per_million_write_units"]
        ),
        "sqs_resends": resends_per_job * 3 / 10 * jobs / 1e6 * PRICES["sqs_per_million_requests"],
        "lambda_calls": jobs
        * (reads_per_job + writes_per_job)
        * LATENCY_MS["dynamodb"]
        / 1000
        * memory_mb
        / 1024
        * PRICES["lambda_arm64_per_gb_second"],
        "lambda_copies": copy_invocations
        * (PRICES["lambda_per_million_requests"] / 1e6 + PER_INVOCATION_MS / 1000 * gb_second)
        + resends_per_job * jobs * copy_ms / 1000 * gb_second,
        "lambda_waiting": jobs * wait_seconds_per_job * gb_second,
    }
    return {
        "usd_per_million_jobs": round(sum(parts.values()), 4),
        "parts": {k: round(v, 4) for k, v in parts.items()},
        "inputs": {
            "reads_per_job": reads_per_job,
            "writes_per_job": writes_per_job,
            "resends_per_job": resends_per_job,
            "wait_seconds_per_job": round(wait_seconds_per_job, 4),
            "memory_mb": memory_mb,
            "records_per_invocation": round(records_per_invocation, 2),
        },
    }
