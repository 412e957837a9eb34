"""The Jobs table of ``tiered-jobs status``: the live counts per tier, each tier's job types beneath it.

One cell holds one count over the three windows, ``1m/5m/60m``: three columns per count would make
twelve, which no 80-column terminal holds, while four cells of three short numbers fit beside a
job type's name. Numbers past four digits are shortened (``12.3k``) for the same reason; ``--json``
keeps them exact.
"""

from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

from ..operations.counts import COUNTERS, WINDOWS, JobTypeCounts, WindowCounts
from ..operations.status import StageStatus

#: How a job type's row is set under its tier's.
INDENT = "  "


def jobs_table(read: StageStatus) -> Table:
    """Rows: each tier (bold), then its job types, indented; a tier without counts shows ``–``."""
    windows = " / ".join(label.removesuffix("m") for label in WINDOWS)
    by_tier: dict[str, list[JobTypeCounts]] = {}
    for row in read.job_types:
        by_tier.setdefault(row.tier, []).append(row)
    rows: list[tuple[str, list[str]]] = []
    for tier in read.tiers:
        rows.append((f"[bold]{escape(tier.tier)}[/]", _cells(tier.counts)))
        rows.extend(
            (INDENT + escape(job_type.job_type), _cells(job_type.counts)) for job_type in by_tier.get(tier.tier, [])
        )
    table = Table(title=f"Jobs · last {windows} min", box=box.SIMPLE_HEAD)
    # A count is never cut: when the terminal is too narrow, the names fold instead.
    table.add_column("Tier / job type", overflow="fold")
    for index, count in enumerate(COUNTERS):
        widest = max([len(cells[index]) for _, cells in rows], default=1)
        table.add_column(count.capitalize(), justify="right", no_wrap=True, min_width=widest)
    for name, cells in rows:
        table.add_row(name, *cells)
    return table


def _cells(counts: dict[str, WindowCounts] | None) -> list[str]:
    if counts is None:
        return ["–"] * len(COUNTERS)
    return ["/".join(short(getattr(counts[label], count)) for label in WINDOWS) for count in COUNTERS]


def short(value: int) -> str:
    """``999`` -> ``999``, ``12345`` -> ``12.3k``, ``123456`` -> ``123k``, ``2500000`` -> ``2.5M``."""
    if value < 10_000:
        return str(value)
    # Past 999.5k the rounding would print 1000k: that is 1.0M.
    scaled, unit = (value / 1_000, "k") if value < 999_500 else (value / 1_000_000, "M")
    return f"{scaled:.1f}{unit}" if scaled < 99.95 else f"{scaled:.0f}{unit}"
