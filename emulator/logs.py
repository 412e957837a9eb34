"""The functions' logs, where Lambda puts them: CloudWatch Logs (moto's, locally).

Lambda writes each execution environment's output to a log stream
(``YYYY/MM/DD/[$LATEST]<id>``) of the function's log group: the group its ``LoggingConfig`` names
(the stack gives every function its own, with a retention), else ``/aws/lambda/<function>``.
Locally the worker processes' output arrives line by line; :class:`LogShipper` sends it to
moto's CloudWatch Logs with ``PutLogEvents`` (batched, about twice a second), so
``aws logs tail <group> --follow``, ``FilterLogEvents`` and ``python -m emulator logs`` all read
them as on AWS. The read side (:func:`function_log_groups`, :func:`read_events`) uses only
CloudFormation and CloudWatch Logs APIs.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from emulator.background import BackgroundLoop

log = logging.getLogger(__name__)

#: Seconds between two shipments to CloudWatch Logs.
SHIP_INTERVAL_SECONDS = 0.5
#: PutLogEvents' limit per call.
MAX_EVENTS_PER_PUT = 10_000


def default_log_group(function_name: str) -> str:
    """The group Lambda uses when the function's ``LoggingConfig`` names none."""
    return f"/aws/lambda/{function_name}"


def function_log_groups(template: Mapping[str, Any], physical_ids: Mapping[str, str]) -> dict[str, str]:
    """``{function name: log group}`` of the template's functions, as deployed (``physical_ids``:
    logical id -> physical id). A function without ``LoggingConfig.LogGroup`` logs to
    :func:`default_log_group`."""
    groups = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") != "AWS::Lambda::Function" or logical_id not in physical_ids:
            continue
        name = physical_ids[logical_id]
        group = resource.get("Properties", {}).get("LoggingConfig", {}).get("LogGroup")
        if isinstance(group, dict) and group.get("Ref") in physical_ids:
            groups[name] = physical_ids[group["Ref"]]
        elif isinstance(group, str):
            groups[name] = group
        else:
            groups[name] = default_log_group(name)
    return groups


def is_metric_document(message: str) -> bool:
    """An EMF line (``{"_aws": {"CloudWatchMetrics": ...}}``): CloudWatch's metrics, not a log message."""
    return '"_aws"' in message and '"CloudWatchMetrics"' in message


class LogShipper(BackgroundLoop):
    """Collects ``(group, stream, line)`` and sends them with ``PutLogEvents`` from one thread."""

    def __init__(self, logs_client: Any, interval_seconds: float = SHIP_INTERVAL_SECONDS):
        super().__init__(interval_seconds)
        self._logs = logs_client
        self._pending: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._known_groups: set[str] = set()
        self._known_streams: set[tuple[str, str]] = set()

    def add(self, group: str, stream: str, line: str) -> None:
        event = {"timestamp": int(time.time() * 1000), "message": line or " "}  # CloudWatch refuses empty events
        with self._lock:
            self._pending.setdefault((group, stream), []).append(event)

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for (group, stream), events in pending.items():
            self._ensure(group, stream)
            for start in range(0, len(events), MAX_EVENTS_PER_PUT):
                self._logs.put_log_events(
                    logGroupName=group, logStreamName=stream, logEvents=events[start : start + MAX_EVENTS_PER_PUT]
                )

    def _ensure(self, group: str, stream: str) -> None:
        """Create the group (as Lambda does when it is missing) and the environment's stream, once."""
        if group not in self._known_groups:
            try:
                self._logs.create_log_group(logGroupName=group)
            except self._logs.exceptions.ResourceAlreadyExistsException:
                pass
            self._known_groups.add(group)
        if (group, stream) not in self._known_streams:
            try:
                self._logs.create_log_stream(logGroupName=group, logStreamName=stream)
            except self._logs.exceptions.ResourceAlreadyExistsException:
                pass
            self._known_streams.add((group, stream))

    thread_name = "log-shipper"

    def tick(self) -> None:
        self._flush_quietly()

    def stop(self) -> None:
        """Stop the thread, then ship what is still pending."""
        super().stop()
        self._flush_quietly()

    def _flush_quietly(self) -> None:
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - a lost shipment must not stop the runtime
            log.warning("shipping function logs to CloudWatch Logs failed: %s", exc)


# -- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogEvent:
    function: str
    timestamp_ms: int
    stream: str
    message: str


@dataclass(frozen=True)
class LogFilter:
    """What to show: a regular expression (``None``: everything) and whether EMF documents count."""

    pattern: str | None = None
    metrics: bool = False

    def __post_init__(self) -> None:
        if self.pattern is not None:
            re.compile(self.pattern)  # fail early on a bad --grep

    def matches(self, message: str) -> bool:
        if not self.metrics and is_metric_document(message):
            return False
        return self.pattern is None or re.search(self.pattern, message) is not None


def read_events(
    logs_client: Any, groups: Mapping[str, str], since_ms: int, seen: set[str] | None = None
) -> list[LogEvent]:
    """Events of ``groups`` (``{function: group}``) from ``since_ms`` on, oldest first; event ids in
    ``seen`` are skipped and the new ones added (for ``--follow``)."""
    found = []
    for function, group in groups.items():
        paginator = logs_client.get_paginator("filter_log_events")
        try:
            for page in paginator.paginate(logGroupName=group, startTime=since_ms):
                for event in page.get("events", []):
                    if seen is not None:
                        if event["eventId"] in seen:
                            continue
                        seen.add(event["eventId"])
                    found.append(
                        LogEvent(function, event["timestamp"], event.get("logStreamName", ""), event["message"])
                    )
        except logs_client.exceptions.ResourceNotFoundException:
            continue  # nothing logged yet
    return sorted(found, key=lambda e: e.timestamp_ms)


def follow(
    logs_client: Any, groups: Mapping[str, str], since_ms: int, stop: Callable[[], bool], interval_seconds: float = 1.0
) -> Iterator[LogEvent]:
    """:func:`read_events`, then every ``interval_seconds`` what arrived since, until ``stop()``."""
    seen: set[str] = set()
    cursor = since_ms
    while True:
        events = read_events(logs_client, groups, cursor, seen)
        yield from events
        if events:
            cursor = max(cursor, events[-1].timestamp_ms - 5_000)  # late shipments land slightly in the past
        if stop():
            return
        time.sleep(interval_seconds)
