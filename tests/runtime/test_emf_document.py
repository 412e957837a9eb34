"""The consumer's EMF documents: what Powertools' EphemeralMetrics prints for the same calls, written in
one pass (runtime/metrics.py), and split where EMF's 100 values per metric would be passed."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from tiered_jobs.contract.names import Metrics as M
from tiered_jobs.runtime.metrics import COUNTERS, MAX_VALUES, UNITS, BatchMetrics


def _printed(emit) -> list[dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        emit()
    documents = [json.loads(line) for line in out.getvalue().splitlines()]
    for document in documents:
        document["_aws"]["Timestamp"] = 0
    return documents


def _powertools(stage: str, tier: str, job_type: str, values: dict[str, list[float]]) -> None:
    """The same document through Powertools, as runtime/metrics.py wrote it before (the reference)."""
    from aws_lambda_powertools.metrics import EphemeralMetrics

    emf = EphemeralMetrics(namespace=M.NAMESPACE, service=M.SERVICE)
    emf.add_dimension(name=M.DIM_STAGE, value=stage)
    emf.add_dimension(name=M.DIM_TIER, value=tier)
    emf.add_dimensions(**{M.DIM_STAGE: stage, M.DIM_TIER: tier, M.DIM_JOB_TYPE: job_type})
    for name, found in values.items():
        for value in found:
            emf.add_metric(name=name, unit=UNITS.get(name, "Count"), value=value)
    emf.flush_metrics()


@pytest.fixture(autouse=True)
def _metrics_on(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)


def test_a_batch_prints_what_powertools_prints_for_the_same_values():
    metrics = BatchMetrics("prod", "bulk")
    for duration in (1.5, 2.25, 3.0):
        metrics.record("reports.build", "succeeded", duration)
        metrics.age("reports.build", 4.0)
    metrics.record("reports.build", "retried", 9.0, retry_delay_seconds=30)
    metrics.record("mail.send", "dead_lettered", 1.0)
    metrics.age("mail.send", 60.5)

    ours = _printed(metrics.flush)

    counts = {"reports.build": {M.PROCESSED: 4, M.SUCCEEDED: 3, M.RETRIED: 1}, "mail.send": {M.PROCESSED: 1}}
    counts["mail.send"] |= {M.FAILED: 1, M.DEAD_LETTERED: 1}
    expected = {
        "reports.build": {M.DURATION: [1.5, 2.25, 3.0, 9.0], M.RETRY_DELAY: [30.0], M.JOB_AGE: [4.0] * 3},
        "mail.send": {M.DURATION: [1.0], M.JOB_AGE: [60.5]},
    }
    reference = _printed(
        lambda: [
            _powertools("prod", "bulk", job_type, {n: [float(counts[job_type].get(n, 0))] for n in COUNTERS} | lists)
            for job_type, lists in expected.items()
        ]
    )
    assert ours == reference


def test_metrics_off_by_powertools_rule_print_nothing(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    metrics = BatchMetrics("prod", "bulk")
    metrics.record("reports.build", "succeeded", 1.0)
    assert _printed(metrics.flush) == []
    assert _printed(metrics.flush) == [], "the batch's values are gone once flushed"


def test_past_100_values_every_value_is_printed_once_in_documents_of_at_most_100():
    metrics = BatchMetrics("prod", "bulk")
    for i in range(250):  # a batch window's records, all one type
        metrics.record("reports.build", "succeeded", float(i))
        metrics.age("reports.build", 1.0)

    documents = _printed(metrics.flush)

    assert len(documents) == 3
    assert [d[M.DURATION] for d in documents] == [
        [float(i) for i in range(start, min(start + MAX_VALUES, 250))] for start in range(0, 250, MAX_VALUES)
    ]
    assert sum(len(d[M.JOB_AGE]) for d in documents) == 250
    assert sum(d.get(M.SUCCEEDED, [0.0])[0] for d in documents) == 250.0  # the counts, once
    for document in documents:
        declared = [m["Name"] for m in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
        assert declared == [name for name in document if name in declared]  # declared = printed
        assert all(len(document[name]) <= MAX_VALUES for name in declared)


def test_each_document_is_one_json_line_whatever_the_values_and_the_job_type():
    metrics = BatchMetrics("prod", 'bulk"tier')
    for duration in (0.1, 1e16, 123456789.123, 0.0, 2.5):
        metrics.record('odd."type\\', "succeeded", duration)
        metrics.age('odd."type\\', duration)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        metrics.flush()
    (line,) = out.getvalue().splitlines()
    document = json.loads(line)
    assert document[M.DIM_JOB_TYPE] == 'odd."type\\' and document[M.DIM_TIER] == 'bulk"tier'
    assert document[M.DURATION] == [0.1, 1e16, 123456789.123, 0.0, 2.5]  # 1e16: written 1e+16, as JSON does
    assert json.dumps(document, separators=(",", ":")) == line  # the same text json writes, key by key
