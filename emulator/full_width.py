"""Tables printed whole in a pipe: at their natural width when the output is not a terminal.

Rich lays a renderable out at the console's width, and a console that writes to a pipe or a file
takes ``COLUMNS`` or 80: ``make demo | tee demo.log`` and ``up`` in CI squeezed the tiers' table
into 80 columns, cutting names and headers (``crit…``, ``ALAR…``) and wrapping its rows. In a pipe
the reader is a log or ``grep``, for which a whole row on one line matters more than a width, so
there the console is widened to the renderable's natural width before it is printed
(``tiered_jobs.cli.common.print_fitted`` does the same for the CLI's tables). A terminal keeps its width.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.measure import Measurement

#: The widest a piped renderable is measured at (a bound, never reached by a table of a few columns).
MAX_PIPED_WIDTH = 10_000


def widen_for(console: Console, renderable: RenderableType) -> None:
    """In a pipe, widen ``console`` to ``renderable``'s natural width; a terminal keeps its width.

    The console crops every line it writes at its own width, so the renderable alone cannot ask for
    more. It writes to a pipe, so a wider console only lets later lines run longer, never wraps them.
    """
    if console.is_terminal:
        return
    natural = Measurement.get(console, console.options.update_width(MAX_PIPED_WIDTH), renderable).maximum
    console.width = max(console.width, natural)


class FullWidth:
    """``renderable``, printed at its natural width when the output is not a terminal."""

    def __init__(self, renderable: RenderableType):
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.is_terminal:
            yield self.renderable
            return
        widen_for(console, self.renderable)  # before the lines are cropped, at the end of this print
        yield from console.render(self.renderable, options.update_width(max(console.width, options.max_width)))


class FullWidthLive(Live):
    """A live view whose last render (the one a pipe gets: a live view repaints only in a terminal) is whole."""

    def stop(self) -> None:
        widen_for(self.console, self.renderable)
        super().stop()
