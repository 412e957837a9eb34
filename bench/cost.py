"""AWS cost per 1 M jobs, computed from the counted calls (not estimated ones).

Prices: us-east-1 public list prices (standard SQS queue, DynamoDB on-demand, Lambda arm64),
free tiers ignored. Edit ``PRICES`` for another region or a newer price list.
"""

from __future__ import annotations

from typing import Any

PRICES = {
    "sqs_per_million_requests": 0.40,
    "dynamodb_per_million_write_units": 0.625,
    "lambda_per_million_requests": 0.20,
    "lambda_arm64_per_gb_second": 0.0000133334,
}

FORMULA = (
    "cost = (publish_req + consume_req) * jobs * sqs_price"
    " + idempotency_WRU * jobs * dynamodb_write_price"
    " + jobs / records_per_invocation * (lambda_request_price + seconds_per_invocation * memory_GB * gb_s_price)"
)


def per_million_jobs(*, publish_requests_per_job: float, consume_requests_per_job: float,
                     idempotency_write_units_per_job: float, records_per_invocation: float,
                     seconds_per_invocation: float, memory_mb: int) -> dict[str, Any]:
    jobs = 1_000_000
    invocations = jobs / records_per_invocation
    parts = {
        "sqs": (publish_requests_per_job + consume_requests_per_job) * jobs / 1e6 * PRICES["sqs_per_million_requests"],
        "dynamodb_idempotency": idempotency_write_units_per_job * jobs / 1e6 * PRICES["dynamodb_per_million_write_units"],
        "lambda_requests": invocations / 1e6 * PRICES["lambda_per_million_requests"],
        "lambda_compute": invocations * seconds_per_invocation * memory_mb / 1024 * PRICES["lambda_arm64_per_gb_second"],
    }
    return {"usd_per_million_jobs": round(sum(parts.values()), 4),
            "parts": {k: round(v, 4) for k, v in parts.items()},
            "inputs": {"publish_requests_per_job": publish_requests_per_job,
                       "consume_requests_per_job": consume_requests_per_job,
                       "idempotency_write_units_per_job": idempotency_write_units_per_job,
                       "records_per_invocation": round(records_per_invocation, 2),
                       "seconds_per_invocation": round(seconds_per_invocation, 4), "memory_mb": memory_mb},
            "prices": PRICES, "formula": FORMULA}
