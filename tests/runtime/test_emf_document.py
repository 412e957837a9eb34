"""The consumer's EMF documents (runtime/metrics.py, through Powertools' EphemeralMetrics): both dimension
sets, every value once, and split where EMF's 100 values per metric would be passed."""

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


@pytest.fixture(autouse=True)
def _metrics_on(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)


def test_a_batch_prints_one_document_per_job_type_with_both_dimension_sets():
    metrics = BatchMetrics("prod", "bulk")
    for duration in (1.5, 2.25, 3.0):
        metrics.record("reports.build", "succeeded", duration)
        metrics.age("reports.build", 4.0)
    metrics.record("reports.build", "retried", 9.0, retry_delay_seconds=30)
    metrics.record("mail.send", "dead_lettered", 1.0)
    metrics.age("mail.send", 60.5)

    documents = {d[M.DIM_JOB_TYPE]: d for d in _printed(metrics.flush)}

    assert set(documents) == {"reports.build", "mail.send"}
    for document in documents.values():
        (declared,) = document["_aws"]["CloudWatchMetrics"]
        assert declared["Namespace"] == M.NAMESPACE
        # the alarms' set (summed over job types) and the breakdown's
        assert declared["Dimensions"] == [
            [M.DIM_STAGE, M.DIM_TIER, "service"],
            [M.DIM_STAGE, M.DIM_TIER, M.DIM_JOB_TYPE],
        ]
        assert (document[M.DIM_STAGE], document[M.DIM_TIER], document["service"]) == ("prod", "bulk", M.SERVICE)
        units = {m["Name"]: m["Unit"] for m in declared["Metrics"]}
        assert all(units[name] == "Count" for name in COUNTERS) and set(units) >= set(COUNTERS)
        assert all(units[name] == unit for name, unit in UNITS.items() if name in units)
    build, mail = documents["reports.build"], documents["mail.send"]

    def one(value):  # EMF writes a metric with one value as that value, or as a list of one
        return value if isinstance(value, list) else [value]

    assert [one(build[n]) for n in (M.PROCESSED, M.SUCCEEDED, M.RETRIED, M.FAILED)] == [[4.0], [3.0], [1.0], [0.0]]
    assert (build[M.DURATION], one(build[M.RETRY_DELAY]), build[M.JOB_AGE]) == (
        [1.5, 2.25, 3.0, 9.0],
        [30.0],
        [4.0] * 3,
    )
    assert [one(mail[n]) for n in (M.PROCESSED, M.FAILED, M.DEAD_LETTERED, M.DURATION)] == [[1.0]] * 4
    assert M.RETRY_DELAY not in mail


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

    # each value once, in order, across as many documents as Powertools needs (each metric at most 100 a document)
    assert [value for d in documents for value in d.get(M.DURATION, [])] == [float(i) for i in range(250)]
    assert sum(len(d.get(M.JOB_AGE, [])) for d in documents) == 250
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
