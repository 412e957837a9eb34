"""The DLQ commands' table of letter groups, fitted to the terminal's width."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .common import print_fitted, terminal

#: Narrowest the error message column gets before less important columns make room for it.
ERROR_MESSAGE_MIN_WIDTH = 24


def _group_layouts() -> list[list[tuple[str, Callable[[dict[str, Any]], str]]]]:
    """Column sets from the fullest to the leanest: what a narrow terminal drops first is last here."""
    count = ("Count", lambda g: str(g["count"]))
    job_type = ("Job type", lambda g: g["job_type"])
    error_type = ("Error type", lambda g: g["error_type"])
    reason = ("Reason", lambda g: g.get("reason") or "")
    message = ("Error message", lambda g: g.get("error_message") or "")
    frame = ("Failed at", lambda g: g.get("frame") or "")
    first = ("First failed", lambda g: _minute(g.get("oldest")))
    last = ("Dead-lettered", lambda g: _minute(g.get("newest")))
    last_short = ("Dead-lettered", lambda g: _minute(g.get("newest"))[5:])  # MM-DD HH:MM
    return [
        [count, job_type, error_type, reason, message, frame, first, last],
        [count, job_type, error_type, reason, message, frame, last_short],
        [count, job_type, error_type, reason, message, last_short],
        [count, job_type, error_type, message, last_short],
        [count, job_type, error_type, message],
    ]


def _groups_table(groups: list[dict[str, Any]], width: int | None) -> tuple[Table, int] | None:
    """The fullest layout that fits ``width`` columns (``None``: any width), with the width it needs.

    Job type, error type, reason and times are never wrapped or cut: their columns are ``no_wrap``
    and as wide as their longest cell. Only the error message wraps, at spaces, and never narrower
    than ``ERROR_MESSAGE_MIN_WIDTH`` (or its longest word). ``None`` when not even the leanest fits.
    """
    from rich.cells import cell_len

    with_frames = any(group.get("frame") for group in groups)  # letters of older consumers have none
    for full_layout in _group_layouts():
        layout = [column for column in full_layout if with_frames or column[0] != "Failed at"]
        rows = [[escape(cell(group)) for _, cell in layout] for group in groups]
        table = Table()
        natural = minimum = len(layout) + 1  # the vertical borders
        for index, (title, _) in enumerate(layout):
            cells = [row[index] for row in rows]
            widest = max(cell_len(text) for text in [title, *cells]) + 2  # + padding
            natural += widest
            if title == "Error message":
                longest_word = max((cell_len(word) for text in cells for word in text.split()), default=0)
                minimum += min(widest, max(ERROR_MESSAGE_MIN_WIDTH, longest_word) + 2)
                table.add_column(title, min_width=ERROR_MESSAGE_MIN_WIDTH, overflow="fold")
            else:
                minimum += widest
                table.add_column(
                    title, no_wrap=True, min_width=widest - 2, justify="right" if title == "Count" else "left"
                )
        if width is None or minimum <= width:
            for row in rows:
                table.add_row(*row)
            return table, natural
    return None


def print_groups(groups: list[dict[str, Any]]) -> None:
    """On a terminal, fit its width; elsewhere (a pipe, a file, CI) print every column at full width."""
    if groups:
        print_fitted(
            terminal(), lambda width: _groups_table(groups, width), lambda console: _group_blocks(console, groups)
        )


def _group_blocks(console: Console, groups: list[dict[str, Any]]) -> None:
    """Narrower than the leanest table: one block per group, wrapped at spaces only."""
    from rich.padding import Padding

    for group in groups:
        console.print(f"[bold]{group['count']} x {escape(group['job_type'])}[/]")
        details = (
            f"{escape(group['error_type'])} · {group.get('reason') or ''} · "
            f"dead-lettered {_minute(group.get('newest'))}\n{escape(group.get('error_message') or '')}"
            + (f"\nat {escape(group['frame'])}" if group.get("frame") else "")
        )
        console.print(Padding(details, (0, 0, 0, 4)))


def print_message_ids(groups: list[dict[str, Any]]) -> None:
    """Each group's letters by message id, one per line under a heading naming the group.

    A message id is 36 characters (SQS's UUID): on a line of its own, indented by 2, it is never
    wrapped or cut at 80 columns, and it can be copied whole into ``dlq show | replay | discard
    --message-id``. A function deployed before groups carried every id answers only its samples.
    """
    console = terminal()
    for group in groups:
        ids = group.get("message_ids", group.get("sample_message_ids") or [])
        sampled = "" if "message_ids" in group else f", {len(ids)} sample(s) shown"
        console.print(
            f"[bold]{group['count']} x {escape(group['job_type'])} · {escape(group['error_type'])}[/]{sampled}"
        )
        for message_id in ids:
            console.print(f"  {escape(message_id)}", soft_wrap=True, highlight=False)


def _minute(iso: str | None) -> str:
    """``2026-11-29T08:13:00.000Z`` -> ``2026-11-29 08:13`` (UTC): enough to tell groups apart."""
    return iso[:16].replace("T", " ") if iso else ""
