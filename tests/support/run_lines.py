"""Run lines for the search tests: three jobs run by a real consumer (two tagged ``order=o-17``, one of
them dead-lettered), its log lines put in the critical tier's consumer log group on moto, with local
mode's Logs Insights engine answering queries (``emulator/insights.py``)."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3

from emulator import insights
from tests.support.logs import CapturedLogs
from tiered_jobs.contract import trace_header
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.names import consumer_function_name
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import registry

TAGS = {"order": "o-17"}


def ship_run_lines(tier: Any) -> list[dict[str, Any]]:
    """Run the three jobs on ``tier`` (a ``tests.support.tier.Tier``) and store their lines; the lines."""
    insights.install()
    logs = CapturedLogs("INFO")
    consumer = Consumer(
        tier.config(max_attempts=1),
        registry,
        client={"sqs": tier.sqs, "dynamodb": tier.dynamodb}.__getitem__,
        logger=logs.logger,
        rand=lambda: 0.5,
    )
    for job_type, payload, key, tags in (
        ("testjobs.ok", {"label": "a"}, "inv-1", None),
        ("testjobs.ok", {"label": "b"}, "inv-2", TAGS),
        ("testjobs.transient", {"fail_times": 3}, "pay-1", TAGS),
    ):
        tier.sqs.send_message(
            QueueUrl=tier.queue_url,
            MessageBody=build(job_type, payload, key, tags=tags).to_json(),
            MessageSystemAttributes=trace_header.system_attributes(
                "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"
            ),
        )
    tier.run_batch(consumer)
    group = f"/aws/lambda/{consumer_function_name('test', 'critical')}"
    client = boto3.client("logs")
    client.create_log_group(logGroupName=group)
    client.create_log_stream(logGroupName=group, logStreamName="2026/12/07/[$LATEST]1")
    now_ms = int(time.time() * 1000)
    client.put_log_events(
        logGroupName=group,
        logStreamName="2026/12/07/[$LATEST]1",
        logEvents=[
            {"timestamp": now_ms - 1000 + n, "message": json.dumps(line)} for n, line in enumerate(logs.lines())
        ],
    )
    return logs.lines()
