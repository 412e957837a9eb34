"""Local emulation of EventBridge rules that send events to SQS queues through an input transformer
(the stack's triggers, ``tiered_jobs/cdk/triggers.py``): ``PutEvents`` that match a rule become jobs.

moto 5.2.5 stores rules and targets and, on ``PutEvents``, matches each rule's pattern and sends to
its SQS targets, but its input transformer is not EventBridge's:

- its event's ``time`` is a Unix timestamp, so ``<time>`` becomes ``1765101600.0`` where EventBridge
  writes ``2026-12-07T10:00:00Z`` (a job's ``published_at`` would be refused);
- a path missing from the event leaves its ``<variable>`` in the output, so every event without the
  key's path would share the key ``<key>`` and run once in all;
- it parses the filled template as JSON and sends it re-serialized (a value that breaks the JSON
  fails the whole ``PutEvents`` request), and it sends to the targets of a ``DISABLED`` rule.

:func:`deliver_matching_events` (installed by the local server) keeps moto's pattern matching and
replaces the delivery of the SQS targets that have an ``InputTransformer`` with :func:`transform`,
which follows "Amazon EventBridge input transformation" (EventBridge User Guide):

- the event is EventBridge's: ``time`` in ISO 8601 UTC to the second, no moto-only field;
- a path is dot notation with array indices (``$.detail.items[0].id``), no wildcard;
- inside a JSON string of the template (``"<key>"``) a string goes in as it is, *not escaped* ("EventBridge
  doesn't escape values extracted by Input Path"), a number or boolean as its JSON text, an object or array
  as its JSON with the inner quotes removed; outside a string (``<payload>``) the value goes in as JSON;
- a path that is not in the event creates no variable ("that variable isn't created and won't appear in
  the output"): its place stays empty, ``""`` inside a string and ``null`` outside one (this module's
  reading of that sentence, so that the consumer is handed an envelope it refuses, with its reason);
- the predefined ``aws.events.rule-arn``, ``aws.events.rule-name``, ``aws.events.event.ingestion-time``,
  ``aws.events.event`` (without ``detail``) and ``aws.events.event.json``;
- the filled text is the message body as it is: JSON or not, the consumer judges it.

Pattern matching is moto's (``moto.events.models.EventPattern``): exact values, ``prefix``, ``suffix``,
``anything-but``, ``exists``, ``numeric``, ``equals-ignore-case``, ``cidr``, ``wildcard``, ``$or``
(``tests/emulator/test_event_rules.py`` checks the first four against EventBridge's documented rules).

A rule on a bus other than ``default`` (a partner's, ``aws.partner/stripe.com/...``, or your own) needs that
bus, which on AWS exists before the stack (a partner's association creates it): :func:`create_rule_buses`
creates it in moto before the deployment. moto names a bus by the last segment of what it is given (it
reads a name with ``/`` as an ARN), so it is created under that segment, and ``PutEvents`` naming the
full bus name finds it.

Not emulated, stated: IAM (the queue policy's ``aws:SourceArn``: the template tests walk it), the
target's ``RetryPolicy`` and ``DeadLetterConfig`` (a local send to a queue does not fail), and
EventBridge's at-least-once redelivery (a test delivers an event twice itself).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

EMULATION_LABEL = "[local emulation]"
#: Predefined variables ("Amazon EventBridge input transformation").
RULE_ARN = "aws.events.rule-arn"
RULE_NAME = "aws.events.rule-name"
INGESTION_TIME = "aws.events.event.ingestion-time"
EVENT = "aws.events.event"
EVENT_JSON = "aws.events.event.json"
#: Fields moto adds to an event that EventBridge's events do not have.
_MOTO_ONLY_FIELDS = ("ingestion-time",)
_STEP = re.compile(r"\.([A-Za-z0-9_-]+)((?:\[[0-9]+\])*)")
_INDEX = re.compile(r"\[([0-9]+)\]")
_VARIABLE = re.compile(r"<([A-Za-z0-9_.-]+)>")
#: Marks a path that is not in the event.
_MISSING = object()

log = logging.getLogger(__name__)


def iso_time(value: Any) -> str:
    """An event's ``time`` as EventBridge writes it: ISO 8601 UTC to the second (``2026-12-07T10:00:00Z``)."""
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(float(value), timezone.utc)
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def aws_event(moto_event: Mapping[str, Any]) -> dict[str, Any]:
    """The event EventBridge hands a target, from the one moto built for ``PutEvents``."""
    event = {k: v for k, v in moto_event.items() if k not in _MOTO_ONLY_FIELDS}
    if "time" in event:
        event["time"] = iso_time(event["time"])
    return event


def value_at(event: Any, path: str) -> Any:
    """The value at ``path`` (``$.detail.items[0].id``) in ``event``, or ``_MISSING``."""
    if not path.startswith("$"):
        return _MISSING
    node, rest = event, path[1:]
    while rest:
        step = _STEP.match(rest)
        if step is None:
            return _MISSING
        rest = rest[step.end() :]
        if not isinstance(node, Mapping) or step.group(1) not in node:
            return _MISSING
        node = node[step.group(1)]
        for index in _INDEX.findall(step.group(2)):
            if not isinstance(node, list) or int(index) >= len(node):
                return _MISSING
            node = node[int(index)]
    return node


def _in_string(value: Any) -> str:
    if value is _MISSING:
        return ""
    if isinstance(value, str):
        return value  # not escaped, as EventBridge
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":")).replace('"', "")
    return json.dumps(value)


def _as_json(value: Any) -> str:
    return "null" if value is _MISSING else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def transform(
    event: Mapping[str, Any],
    paths_map: Mapping[str, str],
    template: str,
    *,
    rule_arn: str,
    rule_name: str,
    ingestion_time: str,
) -> str:
    """The text EventBridge sends the target for ``event`` (already :func:`aws_event`)."""
    values: dict[str, Any] = {name: value_at(event, path) for name, path in paths_map.items()}
    values.update(
        {
            RULE_ARN: rule_arn,
            RULE_NAME: rule_name,
            INGESTION_TIME: ingestion_time,
            EVENT: {k: v for k, v in event.items() if k != "detail"},
            EVENT_JSON: dict(event),
        }
    )
    out: list[str] = []
    in_string = escaped = False
    position = 0
    while position < len(template):
        char = template[position]
        variable = _VARIABLE.match(template, position) if char == "<" else None
        if variable is not None and variable.group(1) in values:
            value = values[variable.group(1)]
            out.append(_in_string(value) if in_string else _as_json(value))
            position = variable.end()
            continue
        out.append(char)
        if in_string and escaped:
            escaped = False
        elif in_string and char == "\\":
            escaped = True
        elif char == '"':
            in_string = not in_string
        position += 1
    return "".join(out)


def create_rule_buses(template: Mapping[str, Any], events: Any) -> list[str]:
    """Create in moto the buses the template's rules are on, other than ``default``; returns the names created."""
    wanted = {
        str(resource["Properties"]["EventBusName"])
        for resource in template.get("Resources", {}).values()
        if resource.get("Type") == "AWS::Events::Rule"
        and isinstance(resource.get("Properties", {}).get("EventBusName"), str)
        and resource["Properties"]["EventBusName"] != "default"
    }
    existing = {bus["Name"] for bus in events.list_event_buses().get("EventBuses", [])}
    created = []
    for name in sorted(wanted):
        moto_name = name.split("/")[-1]  # moto's lookup name (see above)
        if moto_name not in existing:
            events.create_event_bus(Name=moto_name)
            existing.add(moto_name)
            created.append(name)
    return created


def deliver_matching_events() -> None:
    """Make moto's rules deliver ``PutEvents`` to SQS targets with an input transformer as EventBridge does
    (idempotent); other targets keep moto's delivery."""
    from moto.events.models import Rule
    from moto.sqs.models import sqs_backends
    from moto.utilities.arns import parse_arn

    if getattr(Rule.send_to_targets, "transformed_by_tiered_jobs", False):
        return
    moto_send: Callable[..., None] = Rule.send_to_targets

    def send_to_targets(rule: Any, original_event: Any, transform_input: bool = True) -> None:
        if rule.state != "ENABLED" or not rule.event_pattern.matches_event(original_event):
            return  # EventBridge delivers nothing for a disabled rule
        ours = [
            t
            for t in rule.targets
            if transform_input and "InputTransformer" in t and parse_arn(t["Arn"]).service == "sqs"
        ]
        others = [t for t in rule.targets if t not in ours]
        if others:
            moto_send(_with_targets(rule, others), original_event, transform_input)
        if not ours:
            return
        event = aws_event(original_event)
        ingestion = iso_time(original_event.get("ingestion-time", original_event.get("time")))
        for target in ours:
            transformer = target["InputTransformer"]
            body = transform(
                event,
                transformer.get("InputPathsMap", {}),
                transformer["InputTemplate"],
                rule_arn=rule.arn,
                rule_name=rule.name,
                ingestion_time=ingestion,
            )
            queue = parse_arn(target["Arn"])
            sqs_backends[queue.account][queue.region].send_message(queue_name=queue.resource_id, message_body=body)
            log.info(
                "%s EventBridge rule %s matched event %s: sent to %s",
                EMULATION_LABEL,
                rule.name,
                event.get("id"),
                queue.resource_id,
            )

    send_to_targets.transformed_by_tiered_jobs = True  # type: ignore[attr-defined]
    Rule.send_to_targets = send_to_targets  # type: ignore[method-assign, assignment]


def _with_targets(rule: Any, targets: list[dict[str, Any]]) -> Any:
    """A shallow copy of moto's ``rule`` with only ``targets`` (moto's delivery iterates ``rule.targets``)."""
    import copy

    clone = copy.copy(rule)
    clone.targets = targets
    return clone
