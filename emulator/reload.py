"""Hot reload: a change under the functions' asset becomes a new code version, as on Lambda.

:class:`CodeWatcher` polls the modification times of the files that make up the Lambda asset
(``JobsSource.files``: the app's job folder and the runtime parts of ``tiered_jobs``) about once
a second: no dependency, no inotify; the job folder's ``requirements.txt`` is one of them. On a
change the session (:meth:`LocalSession.reload_code`) stages the asset afresh
(``JobsSource.stage``, the same staging ``cdk synth`` does), installs the requirements for this
interpreter when they changed (:func:`host_packages`), uploads the code with ``UpdateFunctionCode``
(a new ``CodeSha256``, as ``cdk deploy`` of a code change does), and gives every mapping the new code: the execution
environments built on the old code are retired before their next batch and new ones start, so a
batch already running finishes on the code it started with. Queues, tables, letters and alarms
are untouched: nothing is redeployed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from emulator.background import BackgroundLoop
from tiered_jobs.cdk.dependencies import Target, install
from tiered_jobs.cdk.packaging import JobsSource

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_SECONDS = 1.0

Snapshot = dict[str, tuple[int, int]]


def snapshot(source: JobsSource) -> Snapshot:
    """``{path in the asset: (mtime in ns, size)}`` of the asset's files (bytecode caches left out)."""
    result: Snapshot = {}
    for relative, path in source.files().items():
        try:
            stat = path.stat()
        except FileNotFoundError:  # removed while we looked: the next poll sees it gone
            continue
        result[relative] = (stat.st_mtime_ns, stat.st_size)
    return result


def host_packages(source: JobsSource) -> tuple[str, ...]:
    """The job folder's ``requirements.txt`` installed for this interpreter, as the functions' layer
    paths (none without the file). Cached as local mode's synthesis caches it: a reload that did not
    touch the file runs no pip; one that did installs first, and a failed install keeps the old code."""
    if source.requirements is None:
        return ()
    return (str(install(source.requirements, Target.host()).python_dir),)


def changed_files(before: Snapshot, after: Snapshot) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


class CodeWatcher(BackgroundLoop):
    """Calls ``on_change(changed files)`` when the asset's files of ``source`` change (polling)."""

    def __init__(
        self,
        source: JobsSource,
        on_change: Callable[[list[str]], object],
        *,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
    ):
        super().__init__(interval_seconds)
        self.source = source
        self._on_change = on_change
        self._snapshot: Snapshot = {}

    thread_name = "code-watcher"

    def start(self) -> None:
        self._snapshot = snapshot(self.source)
        super().start()

    def tick(self) -> None:
        current = snapshot(self.source)
        changed = changed_files(self._snapshot, current)
        if changed:
            self._snapshot = current
            self._on_change(changed)  # a failure keeps the old code; the next change retries

    def tick_failed(self, exc: Exception) -> None:
        log.error("reloading the functions' code failed; the previous version keeps running", exc_info=exc)
