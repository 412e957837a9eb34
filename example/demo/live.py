"""The live table under the story: one row per tier (depth, in flight, succeeded, retried,
dead-lettered, DLQ, alarms), repainted twice a second while the steps run.

The repainting stops before the end is checked, so the last table shown is the one snapshot the
end checks (``example/demo/end.py``), not a later repaint."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.live import Live

from emulator.session import LocalSession
from emulator.view import safe_table


def live_tiers(session: LocalSession, console: Console) -> Live:
    return Live(safe_table(session), console=console, refresh_per_second=2, transient=False)


@contextmanager
def repainting(live: Live, session: LocalSession) -> Iterator[None]:
    """Repaint ``live`` from the session every 0.5 s until the block ends (the thread joined)."""
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(0.5):
            live.update(safe_table(session))

    painter = threading.Thread(target=refresh, name="demo-view", daemon=True)
    painter.start()
    try:
        yield
    finally:
        stop.set()
        painter.join()
