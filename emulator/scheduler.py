"""Local emulation of EventBridge Scheduler's firing (moto stores schedules but never runs them).

Every ``interval`` the runner reads the stage's schedule group back with ``ListSchedules`` /
``GetSchedule`` and, for each enabled schedule, sends every fire that fell due since it last
looked (cron, rate and at expressions, in the schedule's time zone, daylight saving time
included; see ``tiered_jobs.contract.cron``) to the target queue, as Scheduler would:

- the target input gets Scheduler's context attributes replaced
  (``<aws.scheduler.scheduled-time>`` and the others);
- the target's ``SqsParameters.MessageGroupId`` (a one-time job's tenant) is the message's
  ``MessageGroupId``, as Scheduler's SQS target sends it;
- a rate schedule fires at its start (``StartDate``, else creation) and every interval after;
- an ``at()`` schedule with ``ActionAfterCompletion=DELETE`` is deleted after its fire;
- a send that fails is retried (a few times, not Scheduler's 24 hours) and then written to the
  target's ``DeadLetterConfig`` queue with the error in message attributes.

What it does not emulate, stated: IAM (the execution role is not assumed; the template tests
check its policy), the flexible time window (it fires at the scheduled time, not within the
window), and Scheduler's own 60-second precision (local fires come within ``interval`` of their
time). Every fire is logged with ``[local emulation]`` and kept in :attr:`ScheduleRunner.fires`
with its lag behind the scheduled time, which the demo reports.

Given ``has_schedules`` (a look-up in the session's own moto, :mod:`emulator.store_reads`), a round
whose group holds no schedule sends no request: most sessions have none, and listing an empty group
five times a second was about 0.03 of a core for the whole session.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from emulator.background import BackgroundLoop
from tiered_jobs.contract import cron
from tiered_jobs.contract.schedules import substitute
from tiered_jobs.stage.scheduling import as_utc_datetime

EMULATION_LABEL = "[local emulation]"
DEFAULT_INTERVAL_SECONDS = 0.2
#: Local attempts of one fire before it is dead-lettered.
SEND_ATTEMPTS = 3
#: At most this many missed fires of one schedule are caught up at once (the rest are skipped, logged).
MAX_CATCH_UP = 100

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fire:
    """One delivery of one scheduled time (a re-delivery of the same time is another ``Fire``)."""

    schedule_name: str
    scheduled_time: datetime
    sent_at: datetime
    queue_url: str
    message_id: str | None
    #: Set when the fire went to the dead-letter queue instead.
    error: str | None = None
    #: The message body sent (context attributes replaced).
    body: str = ""

    @property
    def lag_seconds(self) -> float:
        return (self.sent_at - self.scheduled_time).total_seconds()


def scheduled_time_text(when: datetime) -> str:
    """``<aws.scheduler.scheduled-time>`` as Scheduler writes it: ``2022-03-22T18:59:43Z``."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ScheduleRunner(BackgroundLoop):
    """Fires the due schedules of ``group_name``; :meth:`start` runs it in a thread."""

    def __init__(
        self,
        clients: Callable[[str], Any],
        group_name: str,
        *,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        has_schedules: Callable[[], bool] | None = None,
    ):
        """``has_schedules()`` says whether the group holds any schedule (unset: every round reads it)."""
        super().__init__(interval_seconds)
        self._clients = clients
        self.group_name = group_name
        self._clock = clock
        self._has_schedules = has_schedules
        self._lock = threading.Lock()
        #: ``(name, creation) -> the last scheduled time handled`` (a re-created schedule starts afresh).
        self._cursors: dict[tuple[str, Any], datetime] = {}
        self._queue_urls: dict[str, str] = {}
        self.fires: list[Fire] = []

    # -- one round ---------------------------------------------------------------------------

    def schedules(self) -> list[dict[str, Any]]:
        scheduler = self._clients("scheduler")
        names = [
            s["Name"]
            for page in scheduler.get_paginator("list_schedules").paginate(GroupName=self.group_name)
            for s in page.get("Schedules", [])
        ]
        found = []
        for name in names:
            try:
                found.append(scheduler.get_schedule(Name=name, GroupName=self.group_name))
            except scheduler.exceptions.ResourceNotFoundException:
                continue  # deleted since the listing (a one-time schedule that fired, or a cancel): gone
        return found

    def poll_once(self) -> list[Fire]:
        """Send every fire due by now; returns them."""
        now = self._clock()
        fired: list[Fire] = []
        with self._lock:
            for schedule in self.schedules():
                fired.extend(self._due(schedule, now))
        return fired

    def _due(self, schedule: Mapping[str, Any], now: datetime) -> list[Fire]:
        if schedule.get("State", "ENABLED") != "ENABLED":
            return []
        try:
            expression = cron.parse(schedule["ScheduleExpression"])
            zone = cron.zone(schedule.get("ScheduleExpressionTimezone") or "UTC")
        except cron.ScheduleExpressionError as exc:
            log.warning("%s schedule %s not fired: %s", EMULATION_LABEL, schedule["Name"], exc)
            return []
        start = as_utc_datetime(schedule.get("StartDate")) or as_utc_datetime(schedule.get("CreationDate")) or now
        end = as_utc_datetime(schedule.get("EndDate"))
        key = (schedule["Name"], schedule.get("CreationDate"))
        cursor = self._cursors.get(key, start - timedelta(microseconds=1))
        fired: list[Fire] = []
        while len(fired) < MAX_CATCH_UP:
            due = cron.next_fire(expression, zone, cursor, start=start)
            if due is None or due > now or (end is not None and due > end):
                break
            fired.append(self.fire(schedule, due))
            cursor = due
        self._cursors[key] = cursor
        if fired and isinstance(expression, cron.At) and schedule.get("ActionAfterCompletion") == "DELETE":
            self._clients("scheduler").delete_schedule(Name=schedule["Name"], GroupName=self.group_name)
            log.info(
                "%s deleted one-time schedule %s after it ran (ActionAfterCompletion=DELETE)",
                EMULATION_LABEL,
                schedule["Name"],
            )
        return fired

    # -- one fire ----------------------------------------------------------------------------

    def fire(self, schedule: Mapping[str, Any], scheduled_time: datetime) -> Fire:
        """Deliver one fire of ``schedule`` (public: a test or the demo re-delivers a time, as Scheduler may)."""
        target = schedule["Target"]
        group = target.get("SqsParameters", {}).get("MessageGroupId")  # the tenant of a one-time job
        queue_url, error = "", None
        for attempt in range(1, SEND_ATTEMPTS + 1):
            body = substitute(
                target.get("Input", ""),
                scheduled_time=scheduled_time_text(scheduled_time),
                schedule_arn=schedule.get("Arn", ""),
                execution_id=uuid.uuid4().hex[:16],
                attempt_number=attempt,
            )
            try:
                queue_url = self._queue_url(target["Arn"])  # a deleted queue fails here, like a send would
                message_id = self._clients("sqs").send_message(
                    QueueUrl=queue_url, MessageBody=body, **({"MessageGroupId": group} if group else {})
                )["MessageId"]
            except Exception as exc:  # noqa: BLE001 - any failure of the target call is retried, then dead-lettered
                error = f"{type(exc).__name__}: {exc}"
                time.sleep(0.05 * attempt)
                continue
            done = Fire(schedule["Name"], scheduled_time, self._clock(), queue_url, message_id, body=body)
            log.info(
                "%s EventBridge Scheduler fired %s for %s into %s (%+.3f s)",
                EMULATION_LABEL,
                schedule["Name"],
                scheduled_time_text(scheduled_time),
                queue_url,
                done.lag_seconds,
            )
            self.fires.append(done)
            return done
        dead = Fire(schedule["Name"], scheduled_time, self._clock(), queue_url, None, error, body)
        self._dead_letter(schedule, body, error or "unknown", SEND_ATTEMPTS)
        self.fires.append(dead)
        return dead

    def _queue_url(self, queue_arn: str) -> str:
        if queue_arn not in self._queue_urls:
            name = queue_arn.rsplit(":", 1)[-1]
            self._queue_urls[queue_arn] = self._clients("sqs").get_queue_url(QueueName=name)["QueueUrl"]
        return self._queue_urls[queue_arn]

    def _dead_letter(self, schedule: Mapping[str, Any], body: str, error: str, attempts: int) -> None:
        dlq_arn = schedule["Target"].get("DeadLetterConfig", {}).get("Arn")
        log.warning(
            "%s schedule %s could not deliver (%s)%s",
            EMULATION_LABEL,
            schedule["Name"],
            error,
            "; dead-lettered" if dlq_arn else "; no dead-letter queue: dropped, as Scheduler would",
        )
        if not dlq_arn:
            return
        attributes = {
            "ERROR_MESSAGE": error[:1024],
            "SCHEDULE_ARN": schedule.get("Arn", ""),
            "TARGET_ARN": schedule["Target"]["Arn"],
            "RETRY_ATTEMPTS": str(attempts - 1),
        }
        self._clients("sqs").send_message(
            QueueUrl=self._queue_url(dlq_arn),
            MessageBody=body,
            MessageAttributes={k: {"DataType": "String", "StringValue": v or "-"} for k, v in attributes.items()},
        )

    # -- background --------------------------------------------------------------------------

    thread_name = "schedule-runner"

    def tick(self) -> None:
        if self._has_schedules is None or self._has_schedules():
            self.poll_once()

    def tick_failed(self, exc: Exception) -> None:
        log.error("%s schedule round failed", EMULATION_LABEL, exc_info=exc)
