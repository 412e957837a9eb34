"""The story's end: the final table's alarms are checked against :data:`STORY_ALARMS`, the only alarms
the story may leave in ALARM (any other alarm in ALARM, or without data, fails the run), and the
summary lists every expectation and the figures measured."""

from __future__ import annotations

from rich.live import Live
from rich.table import Table

from demo.context import Demo
from emulator.view import rows, table
from tiered_jobs.contract.names import Alarms
from tiered_jobs.operations.status import TierStatus

#: The alarms the story itself may leave in ALARM at the end, and why: jobs it makes fail for good
#: count in their tier's failure rate. Every other alarm must end OK (the critical DLQ alarm is
#: back to OK after the replay; retried-then-successful jobs never page).
STORY_ALARMS: dict[tuple[str, str], str] = {
    ("critical", Alarms.FAILURE_RATE): "the bad deploy dead-lettered 4 payments (failed jobs, replayed later)",
    ("transactional", Alarms.FAILURE_RATE): "3 e-mails to invalid addresses were dead-lettered (failed jobs)",
}


def check_final_table(demo: Demo, live: Live) -> None:
    """Show the final table and check its alarms, from one snapshot: the table printed is the one checked."""
    try:
        final = rows(demo.session)
        live.update(table(demo.session, "Tiers (final)", final))
        check_final_alarms(demo, final)
    except Exception as exc:  # noqa: BLE001 - an unreadable end is a failed expectation
        demo.expect("end", "the final alarm states could be read", False, f"{type(exc).__name__}: {exc}")


def check_final_alarms(demo: Demo, snapshot: list[TierStatus]) -> bool:
    """The alarms of the final table (``snapshot``) are those the story caused, every other one OK."""
    unexpected = sorted(
        f"{row.tier} {kind}: {state}"
        for row in snapshot
        for kind, state in row.alarms.items()
        if state != "OK" and not (state == "ALARM" and (row.tier, kind) in STORY_ALARMS)
    )
    caused = sorted(f"{row.tier} {kind}" for row in snapshot for kind, state in row.alarms.items() if state == "ALARM")
    counted = sum(len(row.alarms) for row in snapshot)
    return demo.expect(
        "end",
        "no alarm is in ALARM but those the story caused; every other alarm is OK",
        counted > 0 and not unexpected,
        ("unexpected: " + "; ".join(unexpected))
        if unexpected
        else f"{counted} alarms; in ALARM: {', '.join(caused) or 'none'}"
        + "".join(
            f"; {tier} {kind}: {why}" for (tier, kind), why in STORY_ALARMS.items() if f"{tier} {kind}" in caused
        ),
    )


def summary(demo: Demo, elapsed: float) -> Table:
    summary_table = Table(title=f"Summary ({elapsed:.0f} s)")
    summary_table.add_column("step")
    summary_table.add_column("expectation")
    summary_table.add_column("result")
    for e in demo.expectations:
        summary_table.add_row(e.step, e.claim, "[green]ok[/green]" if e.ok else f"[red]FAILED[/red] {e.detail}")
    for name, value in demo.figures.items():
        summary_table.add_row("figure", name, value)
    return summary_table
