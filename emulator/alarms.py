"""Local emulation of CloudWatch alarm evaluation (moto stores alarms but never evaluates them).

Every few seconds each deployed alarm (read back with ``DescribeAlarms``) is evaluated over its
last period:

* ``AWS/SQS`` queue metrics come from the live queue (``ApproximateNumberOfMessagesVisible`` from
  ``GetQueueAttributes``; ``ApproximateAgeOfOldestMessage`` from moto's store, see ``moto_patches``);
* every other metric (the consumer's EMF job metrics, Lambda's own metrics) comes from the
  :class:`~emulator.metrics.MetricStore`;
* metric math (``IF``, ``FILL``, arithmetic, comparisons, expressions that use other expressions)
  is evaluated on those values.

A change of state is written with ``SetAlarmState`` and published to the alarm's SNS actions,
or sent to its Lambda actions (an asynchronous invoke with CloudWatch's event), as CloudWatch does;
the reason says ``[local emulation]`` so nobody mistakes it for AWS.
An alarm with ``EvaluationPeriods`` N > 1 (the rate limiter's: 3) fires when each of its last N
periods breaches (``DatapointsToAlarm`` = N, as the stack's alarms use); live SQS queue attributes
have no history, so those alarms see only their current value. No ``Throttles`` locally (nothing
throttles one process).

Given ``alarms_version`` (a value that changes with any alarm's definition or state) the evaluator
describes the alarms again only when it changed, and given ``queue_number`` it reads a queue's
depth without a request (:mod:`emulator.store_reads`): a round with nothing new costs next to nothing,
which matters at the half-second interval tests use (a full round was about 57 ms of CPU).
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from emulator.background import BackgroundLoop
from emulator.metrics import MetricStore, statistic

EMULATION_LABEL = "[local emulation]"
DEFAULT_INTERVAL_SECONDS = 2.0

_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "GreaterThanThreshold": operator.gt,
    "GreaterThanOrEqualToThreshold": operator.ge,
    "LessThanThreshold": operator.lt,
    "LessThanOrEqualToThreshold": operator.le,
}
_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_COMPARE: dict[type, Callable[[float, float], bool]] = {
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


class MissingData(Exception):
    """A metric the expression needs has no datapoint in the period."""


def evaluate_expression(
    expression: str, values: Mapping[str, float | None], expressions: Mapping[str, str] | None = None
) -> float:
    """A metric math expression over single values.

    ``IF``, ``FILL(m, value)``, + - * /, comparisons, numbers and ids: of a metric (``values``) or
    of another expression of the same alarm (``expressions``, evaluated when referenced).
    """
    expressions = expressions or {}

    def walk(node: ast.AST, seen: frozenset[str]) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body, seen)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id in expressions:
                if node.id in seen:
                    raise ValueError(f"metric math {expression!r}: {node.id!r} refers to itself")
                return walk(ast.parse(expressions[node.id], mode="eval"), seen | {node.id})
            if node.id not in values:
                raise ValueError(f"unknown metric id {node.id!r} in {expression!r}")
            value = values[node.id]
            if value is None:
                raise MissingData(node.id)
            return value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand, seen)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left, seen), walk(node.right, seen)
            if isinstance(node.op, ast.Div) and right == 0:
                raise MissingData("division by zero")  # CloudWatch drops such datapoints
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            return float(_COMPARE[type(node.ops[0])](walk(node.left, seen), walk(node.comparators[0], seen)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) in (2, 3):
            name, args = node.func.id, node.args
            if name == "IF" and len(args) == 3:
                return walk(args[1], seen) if walk(args[0], seen) else walk(args[2], seen)
            if name == "FILL" and len(args) == 2:  # a missing datapoint becomes the value
                try:
                    return walk(args[0], seen)
                except MissingData:
                    return walk(args[1], seen)
        raise ValueError(f"metric math {expression!r} uses something not evaluated locally: {ast.dump(node)[:80]}")

    return walk(ast.parse(expression, mode="eval"), frozenset())


def decide(alarm: Mapping[str, Any], value: float | None) -> str:
    """The state for ``value`` (``None``: no data, handled by ``TreatMissingData``)."""
    if value is None:
        state: str = {"breaching": "ALARM", "notBreaching": "OK", "ignore": alarm["StateValue"]}.get(
            alarm.get("TreatMissingData", "missing"), "INSUFFICIENT_DATA"
        )
        return state
    return "ALARM" if _COMPARISONS[alarm["ComparisonOperator"]](value, alarm["Threshold"]) else "OK"


def lambda_action_event(alarm: Mapping[str, Any], state: str, reason: str, now: datetime) -> dict[str, Any]:
    """The event CloudWatch's Lambda alarm action sends (``source`` ``aws.cloudwatch``, the change in ``alarmData``)."""
    arn = alarm["AlarmArn"]
    at = now.isoformat(timespec="milliseconds")
    return {
        "source": "aws.cloudwatch",
        "alarmArn": arn,
        "accountId": arn.split(":")[4],
        "time": at,
        "region": arn.split(":")[3],
        "alarmData": {
            "alarmName": alarm["AlarmName"],
            "state": {"value": state, "reason": reason, "timestamp": at},
            "previousState": {"value": alarm["StateValue"], "reason": alarm.get("StateReason", "")},
            "configuration": {"description": alarm.get("AlarmDescription", "")},
        },
    }


@dataclass(frozen=True)
class Transition:
    alarm_name: str
    old_state: str
    new_state: str
    value: float | None
    reason: str


class AlarmEvaluator(BackgroundLoop):
    """Evaluates the alarms whose names start with ``prefix``; :meth:`start` runs it in a thread."""

    def __init__(
        self,
        clients: Callable[[str], Any],
        store: MetricStore,
        prefix: str,
        queue_age: Callable[[str], float | None],
        *,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        queue_number: Callable[[str, str], float] | None = None,
        alarms_version: Callable[[], Hashable] | None = None,
    ):
        """``queue_number(queue, attribute)`` reads a queue's attribute without ``GetQueueAttributes``;
        ``alarms_version()`` changes whenever an alarm does (unset: a request for each, every round)."""
        super().__init__(interval_seconds)
        self._clients = clients
        self._store = store
        self._prefix = prefix
        self._queue_age = queue_age
        self._queue_number = queue_number
        self._alarms_version = alarms_version
        #: The last ``DescribeAlarms`` answer and the version it was read at.
        self._described: tuple[Hashable, list[dict[str, Any]]] | None = None
        self._queue_urls: dict[str, str] = {}
        #: Latest state and value of every alarm, for the live view.
        self.states: dict[str, tuple[str, float | None]] = {}
        self.transitions: list[Transition] = []

    # -- values --------------------------------------------------------------------------

    def _queue_metric(self, name: str, queue_name: str) -> float | None:
        if name == "ApproximateAgeOfOldestMessage":
            return self._queue_age(queue_name)
        attribute = {
            "ApproximateNumberOfMessagesVisible": "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible": "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed": "ApproximateNumberOfMessagesDelayed",
        }.get(name)
        if attribute is None:
            return None
        if self._queue_number is not None:
            return self._queue_number(queue_name, attribute)
        sqs = self._clients("sqs")
        if queue_name not in self._queue_urls:
            self._queue_urls[queue_name] = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
        attributes = sqs.get_queue_attributes(QueueUrl=self._queue_urls[queue_name], AttributeNames=[attribute])
        return float(attributes["Attributes"][attribute])

    def metric_value(
        self,
        namespace: str,
        name: str,
        dimensions: list[dict[str, str]],
        stat: str,
        period: float,
        periods_ago: int = 0,
    ) -> float | None:
        dims = {d["Name"]: d["Value"] for d in dimensions}
        if namespace == "AWS/SQS" and set(dims) == {"QueueName"}:
            return self._queue_metric(name, dims["QueueName"])
        return statistic(
            self._store.values(namespace, name, dims, period, ending_seconds_ago=periods_ago * period), stat
        )

    def alarm_value(self, alarm: Mapping[str, Any], periods_ago: int = 0) -> float | None:
        if alarm.get("Metrics"):
            values: dict[str, float | None] = {}
            expressions: dict[str, str] = {}
            returned = None
            for query in alarm["Metrics"]:
                if "MetricStat" in query:
                    stat = query["MetricStat"]
                    metric = stat["Metric"]
                    values[query["Id"]] = self.metric_value(
                        metric["Namespace"],
                        metric["MetricName"],
                        metric.get("Dimensions", []),
                        stat["Stat"],
                        stat["Period"],
                        periods_ago,
                    )
                elif "Expression" in query:
                    expressions[query["Id"]] = query["Expression"]
                if query.get("ReturnData", True):
                    returned = query["Id"]
            if returned is None or returned in values:
                return values.get(returned) if returned is not None else next(iter(values.values()), None)
            try:
                return evaluate_expression(expressions[returned], values, expressions)
            except MissingData:
                return None
        stat = alarm.get("Statistic") or alarm["ExtendedStatistic"]  # a metric alarm has one of the two
        return self.metric_value(
            alarm["Namespace"], alarm["MetricName"], alarm.get("Dimensions", []), stat, alarm["Period"], periods_ago
        )

    def alarm_state(self, alarm: Mapping[str, Any]) -> tuple[str, float | None]:
        """The state and latest value: ALARM only when each of the last ``EvaluationPeriods`` periods breaches."""
        value = self.alarm_value(alarm)
        state = decide(alarm, value)
        for periods_ago in range(1, int(alarm.get("EvaluationPeriods") or 1)):
            if state != "ALARM":
                break
            state = decide(alarm, self.alarm_value(alarm, periods_ago))  # not breaching then: not yet
        return state, value

    # -- evaluation ----------------------------------------------------------------------

    def described_alarms(self) -> list[dict[str, Any]]:
        """The alarms as ``DescribeAlarms`` answers, read again only when ``alarms_version`` changed."""
        version = self._alarms_version() if self._alarms_version is not None else None
        if version is not None and self._described is not None and self._described[0] == version:
            return self._described[1]
        cloudwatch = self._clients("cloudwatch")
        alarms = [
            a
            for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNamePrefix=self._prefix)
            for a in page["MetricAlarms"]
        ]
        # The version read before the request: a change made while it ran is read at the next round.
        self._described = (version, alarms) if version is not None else None
        return alarms

    def evaluate_once(self) -> list[Transition]:
        changes = []
        for alarm in self.described_alarms():
            state, value = self.alarm_state(alarm)
            self.states[alarm["AlarmName"]] = (state, value)
            if state != alarm["StateValue"]:
                changes.append(self._change(alarm, state, value))
        self.transitions.extend(changes)
        return changes

    def _change(self, alarm: Mapping[str, Any], state: str, value: float | None) -> Transition:
        shown = "no data" if value is None else f"{value:g}"
        reason = (
            f"{EMULATION_LABEL} Threshold Crossed: value {shown} "
            f"{'is' if state == 'ALARM' else 'is not'} {alarm['ComparisonOperator']} {alarm['Threshold']:g}."
        )
        now = datetime.now(timezone.utc)
        self._clients("cloudwatch").set_alarm_state(
            AlarmName=alarm["AlarmName"],
            StateValue=state,
            StateReason=reason,
            StateReasonData=json.dumps({"emulated": True, "value": value}),
        )
        message = {
            "AlarmName": alarm["AlarmName"],
            "AlarmDescription": alarm.get("AlarmDescription"),
            "AlarmArn": alarm["AlarmArn"],
            "NewStateValue": state,
            "OldStateValue": alarm["StateValue"],
            "NewStateReason": reason,
            "StateChangeTime": now.isoformat(timespec="milliseconds"),
            "Region": alarm["AlarmArn"].split(":")[3],
            "Emulated": True,
        }
        actions = {"ALARM": "AlarmActions", "OK": "OKActions", "INSUFFICIENT_DATA": "InsufficientDataActions"}[state]
        for action_arn in alarm.get(actions, []):
            if action_arn.split(":")[2] == "lambda":
                # CloudWatch's Lambda action: an asynchronous invoke with the alarm's change as the event
                # (lambda_invoke routes it to the local runtime, as ``aws lambda invoke`` is).
                self._clients("lambda").invoke(
                    FunctionName=action_arn,
                    InvocationType="Event",
                    Payload=json.dumps(lambda_action_event(alarm, state, reason, now)).encode(),
                )
                continue
            self._clients("sns").publish(
                TopicArn=action_arn,
                Subject=f'{state}: "{alarm["AlarmName"]}" (local emulation)'[:100],
                Message=json.dumps(message),
            )
        return Transition(alarm["AlarmName"], alarm["StateValue"], state, value, reason)

    # -- background ----------------------------------------------------------------------

    thread_name = "alarm-evaluator"

    def tick(self) -> None:
        self.evaluate_once()
