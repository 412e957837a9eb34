"""The emulator's background loops (alarm evaluation, SQS metrics, log shipping, schedules, code
watching): one daemon thread each that runs a round every few seconds until stopped.

A failed round is logged and the next one retries: a local AWS that hiccups once (a request during
a reload, a queue deleted by a test) must not silence alarms or metrics for the rest of the
session. Failures while stopping are not reported: the server may already be going away.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class BackgroundLoop:
    """Calls :meth:`tick` every ``interval_seconds`` on a daemon thread between :meth:`start` and
    :meth:`stop` (``stop`` joins the thread, so nothing runs once it returns)."""

    #: The thread's name (shown by ``py-spy``, ``threading.enumerate()`` and in tracebacks).
    thread_name = "background-loop"
    #: Run a round as soon as the thread starts, not only after the first interval.
    tick_on_start = False

    def __init__(self, interval_seconds: float):
        self._interval = interval_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> None:
        """One round of the loop's work."""
        raise NotImplementedError

    def tick_failed(self, exc: Exception) -> None:
        """Report a failed round (the next round retries)."""
        log.warning("%s: a round failed, the next one retries: %s", self.thread_name, exc)

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        if self.tick_on_start:
            self._round()
        while not self._stop.wait(self._interval):
            self._round()

    def _round(self) -> None:
        try:
            self.tick()
        except Exception as exc:  # noqa: BLE001 - keep looping; the next round retries
            if not self._stop.is_set():
                self.tick_failed(exc)
