"""5. A bad deploy: the critical consumer pointed at a missing ledger table dead-letters payments,
the critical DLQ alarm goes to ALARM and pages the on-call inbox. 6. Inspect (the replay function)
-> fix (roll the configuration back) -> replay: the same payments apply exactly once, the DLQ
empties and the alarm returns to OK. One step, because the fix restores what the bad deploy changed."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table

from demo.context import Demo
from emulator.full_width import FullWidth
from tiered_jobs.contract.names import Alarms, Env

#: The bad deploy's ledger table: it does not exist.
MISSING_TABLE = "payments-ledger-typo"


def bad_deploy_and_replay(demo: Demo) -> None:
    demo.console.rule("5. A bad deploy: the critical consumer points at a missing ledger table")
    consumer = demo.tier("critical").consumer
    good_environment = dict(consumer.environment)
    demo.session.update_function_configuration(
        consumer.name, {**good_environment, Env.resource_var(demo.payments_table()): MISSING_TABLE}
    )
    before = dict(demo.expected_balances)
    demo.pay("incident", 4, copies=lambda _: 1)
    demo.wait_for(lambda: demo.dlq_depth("critical") >= 4, 20)
    demo.expect("incident", "the failing payments went to the critical DLQ", demo.dlq_depth("critical") == 4)
    demo.expect("incident", "no balance changed while the ledger was unreachable", demo.balances() == before)
    fired = demo.wait_for(lambda: alarm_state(demo, "critical", Alarms.DLQ_DEPTH) == "ALARM", 20)
    demo.expect("incident", "the critical DLQ alarm went to ALARM", fired)
    demo.expect(
        "incident",
        "the on-call inbox got the ALARM notification (SNS -> SQS)",
        demo.wait_for(lambda: "ALARM" in demo.inbox.states(), 10),
    )

    demo.console.rule("6. Inspect -> fix -> replay")
    inspected = demo.session.invoke(demo.deployment.replay, {"action": "inspect", "tier": "critical"})
    groups = (inspected.response or {}).get("groups", [])
    show_groups(demo, groups)
    demo.expect(
        "replay",
        "inspect groups the letters by job type and error",
        [(g["job_type"], g["error_type"], g["count"]) for g in groups]
        == [("payments.update_balance", "ResourceNotFoundException", 4)],
    )
    demo.session.update_function_configuration(consumer.name, good_environment)
    demo.console.print("  fix deployed: the consumer's configuration rolled back (UpdateFunctionConfiguration)")
    replayed = demo.session.invoke(demo.deployment.replay, {"action": "replay", "tier": "critical"})
    moved = (replayed.response or {}).get("moved")
    demo.expect("replay", "replay moved the 4 letters back to the critical queue", moved == 4, f"moved={moved}")
    demo.wait_for(lambda: demo.drained("critical") and demo.balances() == demo.expected_balances, 30)
    demo.expect(
        "replay",
        "every balance is exactly right after the replay",
        demo.balances() == demo.expected_balances,
        json.dumps(demo.balances()),
    )
    demo.expect("replay", "the critical DLQ is empty", demo.dlq_depth("critical") == 0)
    ok = demo.wait_for(lambda: alarm_state(demo, "critical", Alarms.DLQ_DEPTH) == "OK", 20)
    demo.expect(
        "replay",
        "the critical DLQ alarm is back to OK, and the inbox was told",
        ok and demo.wait_for(lambda: "OK" in demo.inbox.states(), 10),
    )


def alarm_state(demo: Demo, tier: str, kind: str) -> str:
    name = Alarms.name(demo.deployment.stage, tier, kind)
    alarm = demo.session.clients("cloudwatch").describe_alarms(AlarmNames=[name])["MetricAlarms"][0]
    state: str = alarm["StateValue"]
    return state


def show_groups(demo: Demo, groups: list[dict[str, Any]]) -> None:
    table = Table(title="critical DLQ (inspect)")
    for column in ("job type", "error", "reason", "count", "message"):
        table.add_column(column)
    for group in groups:
        table.add_row(
            group["job_type"],
            group["error_type"],
            group.get("reason", ""),
            str(group["count"]),
            group["error_message"][:60],
        )
    demo.console.print(FullWidth(table))  # whole rows in a pipe
