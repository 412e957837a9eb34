"""The live counts end to end as local mode makes them: the consumer's own EMF (``BatchMetrics``), read
from its log line into the embedded CloudWatch as local mode does (``emulator.metrics``), then counted by
the status read per tier and per job type (moto in-process, with local mode's CloudWatch patches)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import boto3

from emulator import moto_patches
from emulator.metrics import MetricStore
from tiered_jobs.contract.tiers import TierQueues
from tiered_jobs.operations import status as status_reads
from tiered_jobs.operations.counts import WindowCounts
from tiered_jobs.runtime.metrics import BatchMetrics


def test_what_the_consumer_writes_is_what_status_counts(aws, capsys, monkeypatch):
    moto_patches.cloudwatch_dimensions_as_a_set()  # the tier's series is written Stage, Tier, service
    moto_patches.cloudwatch_list_metrics_by_series()
    moto_patches.cloudwatch_percentiles()  # the durations' p50/p99, read in the same call
    sqs, cloudwatch = boto3.client("sqs"), boto3.client("cloudwatch")
    tiers = {"bulk": TierQueues(sqs.create_queue(QueueName="bulk")["QueueUrl"])}
    capsys.readouterr()
    # The read must fall in the minute the datapoints did: both on a clock fixed mid-minute (the last
    # minute's, so moto holds no datapoint from the future), not a wall clock a loaded machine may carry
    # over a minute's end between the writes and the read.
    written = datetime.now(timezone.utc).replace(second=30, microsecond=0) - timedelta(minutes=1)
    for outcomes in (["succeeded", "succeeded", "retried"], ["succeeded", "rate_limited", "dead_lettered"]):
        batch = BatchMetrics("local", "bulk", clock=written.timestamp)
        for n, outcome in enumerate(outcomes):
            batch.record("testjobs.ok" if n else "testjobs.transient", outcome, duration_ms=3.0)
        batch.flush()
    store = MetricStore(cloudwatch=cloudwatch)
    for line in capsys.readouterr().out.splitlines():
        store.log_line("tiered-jobs-local-bulk-consumer", line)

    read = status_reads.read_status(
        "local",
        tiers,
        {"sqs": sqs, "cloudwatch": cloudwatch}.__getitem__,
        source="t",
        now=written + timedelta(seconds=1),
        by_job_type=True,
    )

    expected = WindowCounts(completed=3, failed=1, retried=1, held=1)
    assert read.tier("bulk").counts == {"1m": expected, "5m": expected, "60m": expected}
    by_type = {row.job_type: row.counts["5m"] for row in read.job_types}
    assert by_type == {
        "testjobs.ok": WindowCounts(completed=1, failed=1, retried=1, held=1),
        "testjobs.transient": WindowCounts(completed=2),  # each batch's first record
    }
