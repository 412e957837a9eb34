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
    table = Table(title=f"Jobs · last {windows} min", box=box.SIMPLE_HEAD)
    table.add_column("Tier / job type", no_wrap=True)
    for count in COUNTERS:
        table.add_column(count.capitalize(), justify="right", no_wrap=True)
    by_tier: dict[str, list[JobTypeCounts]] = {}
    for row in read.job_types:
        by_tier.setdefault(row.tier, []).append(row)
    for tier in read.tiers:
        table.add_row(f"[bold]{escape(tier.tier)}[/]", *_cells(tier.counts))
        for job_type in by_tier.get(tier.tier, []):
            table.add_row(INDENT + escape(job_type.job_type), *_cells(job_type.counts))
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
