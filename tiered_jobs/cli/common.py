"""What every ``tiered-jobs`` command shares: the console it prints to, and the one-line report of the
failures an operator can fix."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..operations.errors import OperatorError, explain


def terminal(stderr: bool = False) -> Console:
    """Built per use, not at import: the width and terminal are those of this invocation."""
    return Console(stderr=stderr, highlight=False)


def print_fitted(
    console: Console, table: Callable[[int | None], tuple[Table, int] | None], blocks: Callable[[Console], None]
) -> None:
    """Print the fullest ``table`` that fits the terminal, else ``blocks`` (one per row, wrapped at spaces).

    ``table(width)`` answers the table and the width it needs, or ``None`` when not even its leanest
    layout fits ``width`` columns. Piped or redirected (a file, CI), the fullest table is printed at
    its full width whatever ``COLUMNS`` says, one line per row, for ``grep``.
    """
    fitted = table(console.width if console.is_terminal else None)
    if fitted is None:
        blocks(console)
        return
    rendered, natural = fitted
    if not console.is_terminal:
        console.width = max(console.width, natural)
    console.print(rendered)


#: The CLI reports an :class:`~tiered_jobs.operations.OperatorError` as one ``error:`` line.
CliError = OperatorError


@contextmanager
def reported_errors() -> Iterator[None]:
    """Turn the failures an operator can fix into one line and an exit code; anything else is a bug."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - classified below; unknown ones re-raised
        fail(exc)


def fail(exc: Exception) -> None:
    explained = explain(exc)
    if explained is None:
        raise exc
    message, code = explained
    terminal(stderr=True).print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)
