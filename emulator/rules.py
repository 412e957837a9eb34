"""Local emulation of EventBridge scheduled rules (moto stores rules but never fires a scheduled one).

The stack's circuit breakers have one: an ``AWS::Events::Rule`` with ``rate(5 minutes)`` whose
target is the replay function with the constant input ``{"action": "reconcile", ...}``
(``tiered_jobs/cdk/circuit_breaker.py``). Without this runner, a breaker stranded locally (its alarm
event lost) would never be moved on.

Every ``interval`` the runner reads the rules of the default event bus back with ``ListRules`` /
``ListTargetsByRule`` (scheduled rules exist only on the default bus) and, for each ``ENABLED`` rule
with a ``rate(...)`` or ``cron(...)`` ``ScheduleExpression``, invokes each of its Lambda function
targets when a scheduled time has come, as EventBridge does:

- asynchronously (``Invoke`` with ``InvocationType=Event``, which :mod:`emulator.lambda_invoke`
  routes to the local runtime, as the alarms' Lambda actions are);
- with the target's ``Input`` passed through unchanged, or, without one, the event EventBridge
  sends for a schedule (``"detail-type": "Scheduled Event"``, ``"source": "aws.events"``, the rule's
  ARN in ``resources``, the scheduled time in ``time``);
- cron expressions in UTC (a rule has no time zone); a rate expression "starts when you create the
  rule" (EventBridge's rate-expression reference): its first fire is one interval after the runner
  first saw the rule (moto keeps no creation time; the session starts the runner right after the
  deployment), then every interval.

What it does not emulate, stated: IAM (neither the function's resource policy for
``events.amazonaws.com`` nor a target's ``RoleArn`` is checked; the template tests check them),
EventBridge's own retry policy and dead-letter queue for a target (an ``Invoke`` refused is logged
and kept in :attr:`RuleRunner.fires` with its error, not retried), ``InputPath`` and
``InputTransformer`` (such a target is skipped, logged), targets other than Lambda functions
(skipped, logged), and exact timing: a fire goes at the first round at or after its time (within
``interval``; EventBridge's own precision is a minute). A round that finds several times of one
rule past (a suspended laptop, a clock a test moved) fires once, for the latest, and logs how many
it skipped: catching up would start one execution environment per missed time, for nothing.
Every fire is logged with ``[local emulation]``.

Given ``rules_version`` (a look-up in the session's own moto, :mod:`emulator.store_reads`), a round
reads the rules through the API only when a scheduled rule changed, and a session without one sends
no request at all.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from emulator.background import BackgroundLoop
from emulator.scheduler import scheduled_time_text
from tiered_jobs.contract import cron

EMULATION_LABEL = "[local emulation]"
#: A round a second: EventBridge fires within the minute, and a round with nothing due sends no request.
DEFAULT_INTERVAL_SECONDS = 1.0
#: The only bus a scheduled rule can be on.
DEFAULT_BUS = "default"
_UTC = cron.zone("UTC")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScheduledRule:
    """A rule of the default bus with a schedule expression, and its targets, as the API answers them."""

    name: str
    arn: str
    state: str
    expression: str
    targets: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class RuleFire:
    """One asynchronous invoke of one target for one scheduled time of a rule."""

    rule_name: str
    target_id: str
    function_arn: str
    scheduled_time: datetime
    sent_at: datetime
    #: The event sent: the target's ``Input`` as written, or the scheduled event.
    payload: str
    #: Set when ``Invoke`` was refused (not retried: EventBridge's retry policy is not emulated).
    error: str | None = None

    @property
    def lag_seconds(self) -> float:
        return (self.sent_at - self.scheduled_time).total_seconds()


def scheduled_event(rule: ScheduledRule, scheduled_time: datetime) -> dict[str, Any]:
    """The event EventBridge sends a target of a scheduled rule that has no ``Input``."""
    _arn, _partition, _service, region, account, _resource = rule.arn.split(":", 5)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": scheduled_time_text(scheduled_time),
        "region": region,
        "resources": [rule.arn],
        "detail": {},
    }


def is_lambda_function(arn: str) -> bool:
    """A Lambda function's ARN (``arn:aws:lambda:region:account:function:name[:qualifier]``)."""
    parts = arn.split(":")
    return len(parts) >= 7 and parts[2] == "lambda" and parts[5] == "function"


class RuleRunner(BackgroundLoop):
    """Fires the due scheduled rules of the default bus at their Lambda targets; :meth:`start` runs it in a thread."""

    thread_name = "rule-runner"

    def __init__(
        self,
        clients: Callable[[str], Any],
        *,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        clock: Callable[[], datetime] | None = None,
        rules_version: Callable[[], Hashable] | None = None,
    ):
        """``clock`` (default: the wall clock) says when a round is; ``rules_version()`` changes whenever a
        scheduled rule does and is empty when there is none (unset: every round reads the rules)."""
        super().__init__(interval_seconds)
        self._clients = clients
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._rules_version = rules_version
        self._lock = threading.Lock()
        #: The last listing and the version it was read at.
        self._listed: tuple[Hashable, list[ScheduledRule]] | None = None
        #: ``(name, expression) -> when the runner first saw the rule`` (a rate counts from there).
        self._starts: dict[tuple[str, str], datetime] = {}
        #: ``(name, expression) -> the last scheduled time handled`` (a changed expression starts afresh;
        #: a rule gone from a round is forgotten).
        self._cursors: dict[tuple[str, str], datetime] = {}
        #: What was already reported once (a skipped target, an expression not understood).
        self._warned: set[tuple[str, ...]] = set()
        #: The rules of the last round.
        self._last_round: list[ScheduledRule] = []
        self.fires: list[RuleFire] = []

    # -- reading the rules -----------------------------------------------------------------

    def rules(self) -> list[ScheduledRule]:
        """The scheduled rules of the default bus and their targets (read again only when they changed)."""
        version = self._rules_version() if self._rules_version is not None else None
        if version is not None and not version:
            return []  # no scheduled rule: no request
        if version is not None and self._listed is not None and self._listed[0] == version:
            return self._listed[1]
        events = self._clients("events")
        listed = [
            rule
            for page in events.get_paginator("list_rules").paginate(EventBusName=DEFAULT_BUS)
            for rule in page.get("Rules", [])
            if rule.get("ScheduleExpression")
        ]
        found = []
        for rule in listed:
            try:
                targets = [
                    target
                    for page in events.get_paginator("list_targets_by_rule").paginate(
                        Rule=rule["Name"], EventBusName=DEFAULT_BUS
                    )
                    for target in page.get("Targets", [])
                ]
            except events.exceptions.ResourceNotFoundException:
                continue  # deleted since the listing: gone
            found.append(
                ScheduledRule(
                    rule["Name"], rule["Arn"], rule.get("State", "ENABLED"), rule["ScheduleExpression"], tuple(targets)
                )
            )
        # The version read before the requests: a change made while they ran is read at the next round.
        self._listed = (version, found) if version is not None else None
        return found

    def next_fires(self) -> dict[str, datetime]:
        """The next scheduled time of each enabled rule the runner has seen (for the view and tests)."""
        with self._lock:
            upcoming = {}
            for rule in self._last_round:
                key = (rule.name, rule.expression)
                expression = self._expression(rule)
                if rule.state != "ENABLED" or expression is None or key not in self._starts:
                    continue
                due = cron.next_fire(expression, _UTC, self._cursors[key], start=self._starts[key])
                if due is not None:
                    upcoming[rule.name] = due
            return upcoming

    # -- one round -------------------------------------------------------------------------

    def poll_once(self) -> list[RuleFire]:
        """Invoke the targets of every rule due by now; returns the fires."""
        now = self._clock()
        fired: list[RuleFire] = []
        with self._lock:
            self._last_round = self.rules()
            for rule in self._last_round:
                fired.extend(self._due(rule, now))
            current = {(rule.name, rule.expression) for rule in self._last_round}
            for key in [key for key in self._starts if key not in current]:
                del self._starts[key], self._cursors[key]
        return fired

    def _expression(self, rule: ScheduledRule) -> cron.Cron | cron.Rate | None:
        try:
            expression = cron.parse(rule.expression)
        except cron.ScheduleExpressionError as exc:
            self._warn_once(("expression", rule.name, rule.expression), "rule %s not fired: %s", rule.name, exc)
            return None
        if isinstance(expression, cron.At):  # Scheduler's; a rule takes rate() and cron() only
            self._warn_once(
                ("expression", rule.name, rule.expression), "rule %s not fired: at() is not a rule's", rule.name
            )
            return None
        return expression

    def _due(self, rule: ScheduledRule, now: datetime) -> list[RuleFire]:
        expression = self._expression(rule)
        if expression is None:
            return []
        key = (rule.name, rule.expression)
        start = self._starts.setdefault(key, now)
        cursor = self._cursors.setdefault(key, start)  # nothing at first sight: a rate fires one interval later
        if rule.state != "ENABLED":
            # EventBridge does not fire a disabled rule, nor catch up its times once enabled again.
            self._cursors[key] = max(cursor, now)
            return []
        due = cron.next_fire(expression, _UTC, cursor, start=start)
        if due is None or due > now:
            return []
        skipped = 0
        while (later := cron.next_fire(expression, _UTC, due, start=start)) is not None and later <= now:
            due, skipped = later, skipped + 1
        self._cursors[key] = due
        if skipped:
            log.warning(
                "%s rule %s: %d earlier scheduled time(s) passed unseen (a suspended session or a moved clock); "
                "fired once, for %s",
                EMULATION_LABEL,
                rule.name,
                skipped,
                scheduled_time_text(due),
            )
        return [fire for target in rule.targets if (fire := self._fire_target(rule, target, due)) is not None]

    # -- one fire --------------------------------------------------------------------------

    def _fire_target(self, rule: ScheduledRule, target: Mapping[str, Any], scheduled_time: datetime) -> RuleFire | None:
        if not is_lambda_function(target["Arn"]):
            self._warn_once(
                ("target", rule.name, target["Id"]),
                "rule %s: target %s (%s) not fired: only Lambda function targets are emulated",
                rule.name,
                target["Id"],
                target["Arn"],
            )
            return None
        if "InputPath" in target or "InputTransformer" in target:
            self._warn_once(
                ("target", rule.name, target["Id"]),
                "rule %s: target %s not fired: InputPath and InputTransformer are not emulated",
                rule.name,
                target["Id"],
            )
            return None
        return self.fire(rule, target, scheduled_time)

    def fire(self, rule: ScheduledRule, target: Mapping[str, Any], scheduled_time: datetime) -> RuleFire:
        """Invoke one Lambda target of ``rule`` for ``scheduled_time`` (public: a test re-delivers a time)."""
        payload = target["Input"] if "Input" in target else json.dumps(scheduled_event(rule, scheduled_time))
        error = None
        try:
            self._clients("lambda").invoke(FunctionName=target["Arn"], InvocationType="Event", Payload=payload.encode())
        except Exception as exc:  # noqa: BLE001 - any refusal is the fire's outcome, reported; the loop goes on
            error = f"{type(exc).__name__}: {exc}"
        done = RuleFire(rule.name, target["Id"], target["Arn"], scheduled_time, self._clock(), payload, error)
        if error is None:
            log.info(
                "%s EventBridge rule %s fired for %s: invoked %s asynchronously (%+.3f s)",
                EMULATION_LABEL,
                rule.name,
                scheduled_time_text(scheduled_time),
                target["Arn"],
                done.lag_seconds,
            )
        else:
            log.warning(
                "%s EventBridge rule %s could not invoke %s for %s (%s); not retried: EventBridge's retry policy "
                "and dead-letter queue are not emulated",
                EMULATION_LABEL,
                rule.name,
                target["Arn"],
                scheduled_time_text(scheduled_time),
                error,
            )
        self.fires.append(done)
        return done

    def _warn_once(self, key: tuple[str, ...], message: str, *args: object) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s " + message, EMULATION_LABEL, *args)

    # -- background ------------------------------------------------------------------------

    def tick(self) -> None:
        self.poll_once()

    def tick_failed(self, exc: Exception) -> None:
        log.error("%s scheduled-rule round failed", EMULATION_LABEL, exc_info=exc)
