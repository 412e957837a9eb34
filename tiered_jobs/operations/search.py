"""``tiered-jobs search``: the runs of a stage's jobs, found in the consumers' run lines with Logs Insights.

The query (:mod:`~tiered_jobs.operations.search_query`) runs once over every tier's consumer log
group (``StartQuery`` takes up to 50 groups), then ``GetQueryResults`` is polled until the query
completes. Each tier's group is the one its consumer function logs to: the stack's template names it
(the function's ``LoggingConfig.LogGroup``), and ``ListStackResources`` gives its name, so a search
needs ``cloudformation:GetTemplate`` and ``ListStackResources`` besides ``logs:StartQuery`` and
``logs:GetQueryResults``.

A query is billed by the bytes it scans (:data:`PRICE_PER_GB_SCANNED`): every search reports them and
their cost.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from botocore.exceptions import ClientError

from ..contract.names import consumer_function_name
from ..stage.target import Target
from .search_query import Search, query

#: CloudWatch Logs Insights' published price in us-east-1 (USD per GB of data scanned; other regions differ).
PRICE_PER_GB_SCANNED = 0.005
#: Statuses after which a query has no more results to give.
_DONE = ("Complete", "Failed", "Cancelled", "Timeout", "Unknown")


class SearchFailed(RuntimeError):
    """A query Logs Insights did not complete (failed, cancelled or timed out), or one that took too long."""


@dataclass(frozen=True)
class Run:
    """One finished attempt of a job, as its run line tells it."""

    at: str
    tier: str | None
    job_type: str | None
    key: str | None
    outcome: str | None
    attempt: int | None
    duration_ms: float | None
    queued_ms: float | None
    tenant: str | None = None
    #: The letter of a dead-lettered run: its reason, error type and message id in the DLQ.
    letter: dict[str, str] | None = None
    trace_id: str | None = None
    batch_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Found:
    """A search's runs (newest first), what it scanned and what that cost."""

    runs: list[Run]
    groups: list[str]
    bytes_scanned: float
    records_scanned: float
    query: str

    @property
    def cost_usd(self) -> float:
        return self.bytes_scanned / 1e9 * PRICE_PER_GB_SCANNED

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": [asdict(run) for run in self.runs],
            "log_groups": self.groups,
            "bytes_scanned": int(self.bytes_scanned),
            "records_scanned": int(self.records_scanned),
            "cost_usd": round(self.cost_usd, 6),
            "query": self.query,
        }


def consumer_log_groups(target: Target) -> dict[str, str]:
    """``{tier: log group}`` of the stage's consumers, as the stack's template names them (Lambda's default
    ``/aws/lambda/<function>`` for a function the template gives none, or a stage with no stack)."""
    tiers = list(target.deployment().tiers)
    cloudformation = target.client("cloudformation")
    physical: dict[str, str] = {}
    try:
        template = cloudformation.get_template(StackName=target.stack_name)["TemplateBody"]
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=target.stack_name):
            for resource in page["StackResourceSummaries"]:
                physical[resource["LogicalResourceId"]] = resource.get("PhysicalResourceId", "")
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ValidationError":  # "Stack ... does not exist"
            raise
        template = {}  # a stage found by its SSM parameters alone: Lambda's default groups
    if isinstance(template, str):
        template = json.loads(template)
    by_function: dict[str, str] = {}
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") != "AWS::Lambda::Function":
            continue
        properties = resource.get("Properties", {})
        group = properties.get("LoggingConfig", {}).get("LogGroup")
        name = properties.get("FunctionName")
        if isinstance(name, str) and isinstance(group, dict) and group.get("Ref") in physical:
            by_function[name] = physical[group["Ref"]]
    return {
        tier: by_function.get(consumer_function_name(target.stage, tier), f"/aws/lambda/{name}")
        for tier in tiers
        for name in [consumer_function_name(target.stage, tier)]
    }


def search(
    target: Target,
    wanted: Search,
    *,
    since: timedelta = timedelta(hours=1),
    until: datetime | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    sleep: Callable[[float], None] = time.sleep,
    timeout_seconds: float = 120.0,
) -> Found:
    """Run ``wanted`` over the stage's consumer log groups, from ``since`` before ``until`` (default now)."""
    text = query(wanted)
    groups = sorted(set(consumer_log_groups(target).values()))
    end = until or now()
    start = end - since
    logs = target.client("logs")
    try:
        query_id = _start(logs, groups, start, end, text)
    except logs.exceptions.ResourceNotFoundException:
        # A tier whose consumer never logged has no group yet (Lambda's default one is made on the first
        # line): StartQuery refuses every group then, so ask again over the groups that exist.
        groups = [group for group in groups if _exists(logs, group)]
        if not groups:
            return Found([], [], 0.0, 0.0, text)
        query_id = _start(logs, groups, start, end, text)
    deadline, wait = time.monotonic() + timeout_seconds, 0.25
    while True:
        answer = logs.get_query_results(queryId=query_id)
        status = answer.get("status", "Complete")
        if status in _DONE:
            break
        if time.monotonic() > deadline:
            logs.stop_query(queryId=query_id)
            raise SearchFailed(f"the query did not complete within {timeout_seconds:g} s (stopped)")
        sleep(wait)
        wait = min(2.0, wait * 2)  # Logs Insights takes from a second to minutes: poll less as it runs
    if status != "Complete":
        raise SearchFailed(f"Logs Insights ended the query {status.lower()}")
    statistics = answer.get("statistics", {})
    return Found(
        [run_of({cell["field"]: cell["value"] for cell in row}) for row in answer.get("results", [])],
        groups,
        float(statistics.get("bytesScanned", 0.0)),
        float(statistics.get("recordsScanned", 0.0)),
        text,
    )


def _start(logs: Any, groups: list[str], start: datetime, end: datetime, text: str) -> str:
    answer = logs.start_query(
        logGroupNames=groups, startTime=int(start.timestamp()), endTime=int(end.timestamp()), queryString=text
    )
    return str(answer["queryId"])


def _exists(logs: Any, group: str) -> bool:
    found = logs.describe_log_groups(logGroupNamePrefix=group).get("logGroups", [])
    return any(item["logGroupName"] == group for item in found)


def run_of(row: Mapping[str, str]) -> Run:
    """One result row (``{field: text}``) as a :class:`Run`."""
    letter = {
        name: row[field_name]
        for name, field_name in (("reason", "reason"), ("error_type", "error_type"), ("message_id", "dlq_message_id"))
        if row.get(field_name)
    }
    return Run(
        at=row.get("@timestamp", ""),
        tier=row.get("tier"),
        job_type=row.get("job_type"),
        key=row.get("idempotency_key"),
        outcome=row.get("outcome"),
        attempt=_number(row.get("attempt"), int),
        duration_ms=_number(row.get("duration_ms"), float),
        queued_ms=_number(row.get("queued_ms"), float),
        tenant=row.get("tenant"),
        letter=letter if "message_id" in letter else None,
        trace_id=row.get("trace_id"),
        batch_id=row.get("batch_id"),
        tags={name.removeprefix("tags."): value for name, value in row.items() if name.startswith("tags.")},
    )


def _number(text: str | None, kind: Callable[[str], Any]) -> Any:
    if text is None:
        return None
    try:
        return kind(float(text)) if kind is int else kind(text)
    except ValueError:
        return None
