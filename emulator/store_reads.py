"""What the session's background loops read straight from moto's store instead of over HTTP.

The embedded AWS runs in the session's own process, so a loop that only needs to know a number or
whether something changed can look it up in moto's backends (a few dictionary reads) instead of
sending a request that moto parses, answers and botocore parses back (2 to 20 ms of CPU each). The
loops run every fraction of a second for the whole session, mostly with nothing to do: the alarm
evaluator read every alarm and the depth of every queue an alarm watches twice a second, the
schedule runner listed an empty schedule group five times a second, and each idle poller of a
mapping sent an empty long poll every second: about 0.14 of a core for an idle session. What a
loop acts on (an alarm's definition, a schedule's target, a batch of messages) is still read
through the API, as any client would; these reads only say when to read it again, or give a value
the API would give too.

Like :func:`emulator.moto_patches.oldest_message_age_seconds`, each needs the server in this process.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from emulator.moto_patches import queue_attribute


def queue_number(queue_name: str, attribute: str, account_id: str, region: str) -> float:
    """A numeric attribute of a queue (``ApproximateNumberOfMessages``...), as ``GetQueueAttributes``
    answers it; a queue that does not exist raises, as that call would."""
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[account_id][region].queues.get(queue_name)
    if queue is None:
        raise LookupError(f"queue {queue_name} does not exist")
    return float(queue_attribute(queue, attribute))


def alarms_version(account_id: str, region: str) -> Hashable:
    """A value that changes whenever an alarm is created, replaced, deleted or changes state
    (``PutMetricAlarm`` makes a new alarm object; ``SetAlarmState`` stamps the state's time)."""
    from moto.cloudwatch.models import cloudwatch_backends

    alarms = list(cloudwatch_backends[account_id][region].alarms.items())
    return tuple(
        (
            name,
            id(alarm),
            alarm.state_value,
            alarm.state_updated_timestamp,
            alarm.configuration_updated_timestamp,
            alarm.actions_enabled,
        )
        for name, alarm in alarms
    )


def schedule_group_has_schedules(group_name: str, account_id: str, region: str) -> bool:
    """Whether the group holds a schedule (a group that does not exist: ``True``, so that the
    runner's own read reports it)."""
    from moto.scheduler.models import scheduler_backends

    group = scheduler_backends[account_id][region].schedule_groups.get(group_name)
    return group is None or bool(group.schedules)


def scheduled_rules_version(account_id: str, region: str) -> Hashable:
    """A value that changes whenever a scheduled rule of the default bus (the only bus one can be on) is
    created, replaced, deleted, enabled or disabled, or has its targets changed; empty when there is none
    (``PutRule`` makes a new rule object; ``PutTargets`` changes its list in place)."""
    from moto.events.models import events_backends

    bus = events_backends[account_id][region].event_buses.get("default")
    if bus is None:
        return ()
    return tuple(
        (name, id(rule), rule.state, rule.scheduled_expression, repr(rule.targets))
        for name, rule in list(bus.rules.items())
        if rule.scheduled_expression
    )


def message_waiter(queue_arn: str, account_id: str, region: str) -> Callable[[float], bool]:
    """``wait(seconds)``: wait up to ``seconds`` for the queue to hold a message visible now, and say
    whether it does. It waits on the condition moto's own long poll waits on (a send wakes it at
    once); a message that becomes visible again or stops being delayed is seen when the wait ends,
    as moto's long poll sees it. A queue that does not exist: ``True`` at once, so that the receive
    reports it."""
    from moto.sqs.models import sqs_backends

    queue_name = queue_arn.rsplit(":", 1)[-1]

    def wait(seconds: float) -> bool:
        queue = sqs_backends[account_id][region].queues.get(queue_name)
        if queue is None:
            return True
        with queue._messages_lock:
            return bool(queue._messages_lock.wait_for(lambda: queue.messages, timeout=seconds))

    return wait
