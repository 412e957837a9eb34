"""Local mode's Logs Insights subset: the engine over events, and moto's StartQuery / GetQueryResults
answered by it (rows, statistics), with what is outside the subset refused by name."""

from __future__ import annotations

import json
import time

import boto3
import pytest

from emulator import insights
from emulator.insights import Event, QueryError, parse, run


def _line(**fields) -> str:
    return json.dumps({"level": "INFO", "message": "job succeeded", **fields})


EVENTS = [
    Event(1_000, _line(job_type="a.one", idempotency_key="k-1", outcome="succeeded", duration_ms=5, tags={"o": "x"})),
    Event(2_000, _line(job_type="a.two", idempotency_key="k-2", outcome="retried", duration_ms=50)),
    Event(3_000, _line(job_type="b.one", idempotency_key="z-3", outcome="dead_lettered", duration_ms=7)),
    Event(4_000, "START RequestId: 1 Version: $LATEST"),
]


def _keys(text: str, start: int = 0, end: int = 10_000) -> list[str]:
    return [row.get("idempotency_key", "") for row in run(text, EVENTS, start, end)]


def test_filters_compare_match_and_combine():
    fields = "fields idempotency_key | "
    assert _keys(fields + 'filter job_type = "a.one"') == ["k-1"]
    assert _keys(fields + 'filter outcome in ["retried", "dead_lettered"]') == ["k-2", "z-3"]
    assert _keys(fields + "filter job_type like /^a\\./ and duration_ms > 10") == ["k-2"]
    assert _keys(fields + 'filter job_type = "b.one" or `tags.o` = "x"') == ["k-1", "z-3"]
    assert _keys(fields + 'filter not outcome = "succeeded" and idempotency_key like "k-"') == ["k-2"]
    assert _keys(fields + 'filter (job_type = "a.one" or job_type = "b.one") and duration_ms < 6') == ["k-1"]


def test_sort_limit_time_range_and_statistics():
    rows = run("fields @timestamp, idempotency_key | sort duration_ms desc | limit 2", EVENTS, 0, 3_000)
    assert [row["idempotency_key"] for row in rows] == ["k-2", "z-3"]
    assert rows[0]["@timestamp"] == "1970-01-01 00:00:02.000"
    assert rows.statistics["recordsScanned"] == 3 and rows.statistics["recordsMatched"] == 3
    assert rows.statistics["bytesScanned"] == sum(len(e.message.encode()) for e in EVENTS[:3])


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("fields a | stats count() by a", "'stats' is not in"),
        ("filter a ~ 1", "unexpected text"),
        ('filter a = "x" and', "ends where a condition"),
        ("limit ten", "whole number"),
    ],
)
def test_what_is_outside_the_subset_is_refused_by_name(text, said):
    with pytest.raises(QueryError, match=said):
        parse(text)


def test_moto_answers_start_query_with_this_engine(aws):
    insights.install()
    logs = boto3.client("logs", region_name="us-east-1")
    logs.create_log_group(logGroupName="g")
    logs.create_log_stream(logGroupName="g", logStreamName="s")
    now_ms = int(time.time()) * 1000 - 60_000  # PutLogEvents takes events of the last 14 days
    logs.put_log_events(
        logGroupName="g",
        logStreamName="s",
        logEvents=[{"timestamp": now_ms + e.timestamp_ms, "message": e.message} for e in EVENTS],
    )
    query_id = logs.start_query(
        logGroupNames=["g"],
        startTime=now_ms // 1000,
        endTime=now_ms // 1000 + 10,
        queryString='fields idempotency_key | filter outcome = "retried"',
    )["queryId"]

    answer = logs.get_query_results(queryId=query_id)

    assert answer["status"] == "Complete"
    assert [{cell["field"]: cell["value"] for cell in row}["idempotency_key"] for row in answer["results"]] == ["k-2"]
    assert answer["statistics"]["recordsScanned"] == 4 and answer["statistics"]["bytesScanned"] > 0
