"""The ``schedules`` command's table, fitted to the terminal's width as the DLQ groups' table is.

Every cell is a name, an id, an expression or a time: split anywhere but at a space it is
unreadable (``once-3f2a`` / ``9c…`` on the next line, which the folding columns printed). So no
cell is ever wrapped or cut: a narrower terminal gets fewer columns, and one too narrow even for the
leanest table gets one block per schedule, wrapped at spaces only. Piped or redirected, the fullest
table is printed at its full width whatever ``COLUMNS`` says, one line per schedule, for ``grep``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timezone

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..contract.schedules import SCHEDULED_TIME
from ..stage.scheduling import ScheduledJob
from .common import print_fitted, terminal

Column = tuple[str, Callable[[ScheduledJob], str]]


def _next_fire(job: ScheduledJob) -> str:
    if job.next_fire is not None:
        return job.next_fire.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return "disabled" if job.state != "ENABLED" else "–"


def _schedule(job: ScheduledJob) -> str:
    """Expression and time zone in one cell: what fires it, read as one phrase."""
    return f"{job.expression} {job.timezone}"


def _key(job: ScheduledJob, whole: bool) -> str:
    """The job's idempotency key; a periodic job's pattern ends ``…`` on a terminal instead of its 30
    characters of ``<aws.scheduler.scheduled-time>``, the same for every periodic job (``--json`` and a
    pipe print it whole)."""
    key = job.idempotency_key or ""
    if whole or job.kind != "periodic" or not key.endswith(SCHEDULED_TIME):
        return key
    return key.removesuffix(SCHEDULED_TIME) + "…"


def _layouts(whole_keys: bool) -> list[list[Column]]:
    """Column sets from the fullest to the leanest: what a narrow terminal loses first is missing below.

    The name goes first (a one-time schedule's is derived from its type and key; a periodic one's is
    in its key pattern), then the kind (the expression tells: ``at()`` is one-time), then the schedule.
    """
    name: Column = ("Name", lambda j: j.name)
    kind: Column = ("Kind", lambda j: j.kind)
    expression: Column = ("Expression", lambda j: j.expression)
    zone: Column = ("Time zone", lambda j: j.timezone)
    schedule: Column = ("Schedule", _schedule)
    job_type: Column = ("Job type", lambda j: j.job_type or "?")
    tier: Column = ("Tier", lambda j: j.tier or "?")
    fire: Column = ("Next fire (UTC)", _next_fire)
    key: Column = ("Key", lambda j: _key(j, whole_keys))
    return [
        [name, kind, expression, zone, job_type, tier, fire, key],
        [kind, schedule, job_type, tier, fire, key],
        [schedule, job_type, tier, fire, key],
        [job_type, tier, fire, key],
    ]


def schedules_table(stage: str, jobs: Sequence[ScheduledJob], width: int | None) -> tuple[Table, int] | None:
    """The fullest layout whose every cell fits whole in ``width`` columns (``None``: any width), with
    the width it needs; ``None`` when not even the leanest fits."""
    from rich.cells import cell_len

    title = f"Scheduled jobs · stage {stage}"
    for layout in _layouts(whole_keys=width is None):
        rows = [[cell(job) for _, cell in layout] for job in jobs]
        natural = len(layout) + 1  # the vertical borders
        table = Table(title=escape(title))
        for index, (heading, _) in enumerate(layout):
            widest = max(cell_len(text) for text in [heading, *(row[index] for row in rows)])
            natural += widest + 2  # + padding
            table.add_column(heading, no_wrap=True, min_width=widest)
        if width is None or natural <= width:
            for row in rows:
                table.add_row(*map(escape, row))
            return table, max(natural, cell_len(title))
    return None


def print_schedules(stage: str, jobs: Sequence[ScheduledJob]) -> None:
    """On a terminal, fit its width; elsewhere (a pipe, a file, CI) the fullest table at full width."""
    print_fitted(
        terminal(), lambda width: schedules_table(stage, jobs, width), lambda console: _blocks(console, stage, jobs)
    )


def _blocks(console: Console, stage: str, jobs: Sequence[ScheduledJob]) -> None:
    """Narrower than the leanest table: one block per schedule, wrapped at spaces only."""
    from rich.padding import Padding

    console.print(f"[bold]Scheduled jobs · stage {escape(stage)}[/]")
    for job in jobs:
        console.print(f"[bold]{escape(job.job_type or '?')}[/] → {escape(job.tier or '?')}")
        details = (
            f"next fire {_next_fire(job)} UTC · {escape(_schedule(job))}\n"
            f"{job.kind} schedule {escape(job.name)}\nkey {escape(job.idempotency_key or '')}"
        )
        console.print(Padding(details, (0, 0, 0, 4)))
