"""The run line: each finished attempt's one line carries what a search needs (docs/consumer.md's log
table): type, key, tenant and tags; tier, attempt and outcome; duration, time queued, trace and batch.
Nothing of the payload is on it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tests.support.logs import CapturedLogs
from tiered_jobs.contract import trace_header
from tiered_jobs.contract.envelope import build
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import registry

HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
TAGS = {"order": "o-17", "customer": "c-9"}


def _consumer(tier, logs: CapturedLogs, now=None) -> Consumer:
    clients = {"sqs": tier.sqs, "dynamodb": tier.dynamodb}
    extra = {"now": now} if now is not None else {}
    return Consumer(
        tier.config(max_attempts=2), registry, client=clients.__getitem__, logger=logs.logger, rand=lambda: 0.5, **extra
    )


def _send(tier, job_type: str, payload: dict, key: str, **fields) -> None:
    tier.sqs.send_message(
        QueueUrl=tier.queue_url,
        MessageBody=build(job_type, payload, key, **fields).to_json(),
        MessageSystemAttributes=trace_header.system_attributes(HEADER),
    )


def test_a_success_line_carries_tags_outcome_times_and_trace(tier, recorded):
    logs = CapturedLogs("INFO")
    # The consumer's clock an hour after the send: the job waited about that long before it ran.
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    _send(tier, "testjobs.ok", {"label": "secret-payload"}, "run-1", tenant="acme", tags=TAGS)

    tier.run_batch(_consumer(tier, logs, now=lambda: later))

    (line,) = logs.lines("job succeeded")
    assert line["job_type"] == "testjobs.ok" and line["idempotency_key"] == "run-1"
    assert line["tenant"] == "acme" and line["tags"] == TAGS
    assert line["tier"] == tier.config().tier and line["attempt"] == 1 and line["outcome"] == "succeeded"
    assert line["duration_ms"] >= 0
    assert 3_500_000 <= line["queued_ms"] <= 3_700_000
    assert line["trace_id"] == "1-5759e988-bd862e3fe1be46a994272793"
    assert "secret-payload" not in str(logs.lines())


def test_a_job_without_tags_batch_or_trace_has_none_of_those_keys(tier, recorded):
    logs = CapturedLogs("INFO")
    tier.publish("testjobs.ok", {"label": "plain"}, "plain-1")

    tier.run_batch(_consumer(tier, logs))

    (line,) = logs.lines("job succeeded")
    assert not {"tags", "batch_id", "trace_id"} & set(line)
    assert line["outcome"] == "succeeded" and line["queued_ms"] >= 0


def test_retried_and_dead_lettered_lines_carry_outcome_duration_and_tags(tier, recorded):
    logs = CapturedLogs("INFO")
    consumer = _consumer(tier, logs)
    _send(tier, "testjobs.transient", {"fail_times": 5}, "flaky-1", tags=TAGS)

    tier.run_batch(consumer)
    tier.make_visible()
    tier.run_batch(consumer)

    (retried,) = logs.lines("job failed, will retry")
    (lettered,) = [line for line in logs.lines() if line.get("outcome") == "dead_lettered"]
    for line, outcome, attempt in ((retried, "retried", 1), (lettered, "dead_lettered", 2)):
        assert line["outcome"] == outcome and line["attempt"] == attempt
        assert line["tags"] == TAGS and line["trace_id"].startswith("1-5759e988")
        assert line["duration_ms"] >= 0 and line["queued_ms"] >= 0
