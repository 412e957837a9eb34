"""The live table under the story: one row per tier (the emulator's view of the tier's status, as
``tiered-jobs status`` reads it), read again every ``REFRESH_SECONDS`` while the steps run.

The repainting stops before the end is checked, so the last table shown is the one snapshot the
end checks (``demo/end.py``), not a later repaint."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.live import Live

from emulator.full_width import FullWidthLive
from emulator.session import LocalSession
from emulator.view import REFRESH_SECONDS, safe_table


def live_tiers(session: LocalSession, console: Console) -> Live:
    return FullWidthLive(safe_table(session), console=console, refresh_per_second=2, transient=False)


@contextmanager
def repainting(live: Live, session: LocalSession) -> Iterator[None]:
    """Repaint ``live`` from the session every ``REFRESH_SECONDS`` until the block ends (the thread joined)."""
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(REFRESH_SECONDS):
            live.update(safe_table(session))

    painter = threading.Thread(target=refresh, name="demo-view", daemon=True)
    painter.start()
    try:
        yield
    finally:
        stop.set()
        painter.join()
