"""`tiered-jobs publish --tenant` and the rates `tiered-jobs status` shows (configured and current)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import boto3

from tiered_jobs.contract.names import Metrics, Ssm
from tiered_jobs.contract.rate_limits import RateLimit, RateLimits


def test_publish_with_a_tenant_sets_the_message_group_id(cli, deployment):
    result = cli(
        "publish",
        "payments.update_balance",
        "-k",
        "p1",
        "-p",
        '{"account_id": "acc_1", "amount": 5}',
        "--tenant",
        "acme",
    )

    assert result.exit_code == 0, result.output
    (message,) = boto3.client("sqs").receive_message(
        QueueUrl=deployment.queue_urls["critical"], MessageSystemAttributeNames=["MessageGroupId"]
    )["Messages"]
    assert message["Attributes"]["MessageGroupId"] == "acme"
    assert json.loads(message["Body"])["tenant"] == "acme"


def test_publish_refuses_a_tenant_sqs_would_refuse(cli, deployment):
    result = cli("publish", "payments.update_balance", "-k", "p1", "--tenant", "acme corp")

    assert result.exit_code == 2
    assert "'tenant' must be 1-128 characters" in result.stderr


def test_status_shows_the_configured_rate_and_the_jobs_completed(cli, deployment):
    limits = RateLimits(RateLimit(5, 5), {"analytics.*": RateLimit(2, 2)})
    boto3.client("ssm").put_parameter(
        Name=Ssm.tier("test", "bulk", Ssm.TIER_RATE_LIMITS), Value=limits.to_json(), Type="String"
    )
    boto3.client("cloudwatch").put_metric_data(
        Namespace=Metrics.NAMESPACE,
        MetricData=[
            {
                "MetricName": Metrics.SUCCEEDED,
                "Value": 600.0,
                "Timestamp": datetime.now(timezone.utc) - timedelta(minutes=2),
                "Dimensions": [
                    {"Name": Metrics.DIM_SERVICE, "Value": Metrics.SERVICE},
                    {"Name": Metrics.DIM_STAGE, "Value": "test"},
                    {"Name": Metrics.DIM_TIER, "Value": "bulk"},
                ],
            }
        ],
    )

    result = cli("status")
    assert result.exit_code == 0, result.output
    bulk = next(line for line in result.stdout.splitlines() if "bulk" in line and "/s" in line)
    assert "5/s (burst 5); analytics.*: 2/s (burst 2)" in bulk
    assert any("critical" in line and "none" in line for line in result.stdout.splitlines())
    # Counts, not a rate: 600 jobs 2 minutes ago are in the 5 and 60 minutes, not in the last one.
    jobs = next(line for line in result.stdout.splitlines() if line.split()[:1] == ["bulk"] and "/" in line)
    assert jobs.split()[1] == "0/600/600"

    as_json = json.loads(cli("status", "--json").stdout)
    rows = as_json["rates"]
    assert rows["bulk"]["rate_limit"]["tier"] == {"per_second": 5, "burst": 5}
    assert rows["critical"]["rate_limit"] is None and "completed_per_second" not in rows["bulk"]
    bulk_counts = next(row["counts"] for row in as_json["tiers"] if row["tier"] == "bulk")
    assert (bulk_counts["1m"]["completed"], bulk_counts["5m"]["completed"]) == (0, 600)
