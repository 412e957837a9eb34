"""Hot reload: a change under the functions' asset becomes a new code version, as on Lambda.

:class:`CodeWatcher` polls the modification times of the files that make up the Lambda asset
(``LAMBDA_ASSET_PATHS`` under the source checkout) about once a second: no dependency, no
inotify. On a change the session (:meth:`LocalSession.reload_code`) copies the asset afresh
(:func:`copy_asset`), uploads it with ``UpdateFunctionCode`` (a new ``CodeSha256``, as
``cdk deploy`` of a code change does), and gives every mapping the new code: the execution
environments built on the old code are retired before their next batch and new ones start, so a
batch already running finishes on the code it started with. Queues, tables, letters and alarms
are untouched: nothing is redeployed.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from emulator.background import BackgroundLoop
from tiered_jobs.contract.names import LAMBDA_ASSET_PATHS

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_SECONDS = 1.0
#: What the asset never ships (``infra.function.asset_excludes`` drops the same).
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")

Snapshot = dict[str, tuple[int, int]]


def asset_files(root: Path, paths: Iterable[str] = LAMBDA_ASSET_PATHS) -> list[Path]:
    """The files of the asset under ``root`` (bytecode caches left out)."""
    found = []
    for relative in paths:
        path = root / relative
        candidates = path.rglob("*") if path.is_dir() else [path]
        found += [p for p in candidates
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return sorted(found)


def snapshot(root: Path, paths: Iterable[str] = LAMBDA_ASSET_PATHS) -> Snapshot:
    """``{relative path: (mtime in ns, size)}`` of the asset's files."""
    result: Snapshot = {}
    for path in asset_files(root, paths):
        try:
            stat = path.stat()
        except FileNotFoundError:  # removed while we looked: the next poll sees it gone
            continue
        result[path.relative_to(root).as_posix()] = (stat.st_mtime_ns, stat.st_size)
    return result


def copy_asset(root: Path, destination: Path, paths: Iterable[str] = LAMBDA_ASSET_PATHS) -> Path:
    """A fresh copy of the asset's files (what ``cdk synth`` would package now) into ``destination``."""
    for relative in paths:
        source = root / relative
        if source.is_dir():
            shutil.copytree(source, destination / relative, ignore=_IGNORED)
        elif source.is_file():
            (destination / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / relative)
    return destination


def changed_files(before: Snapshot, after: Snapshot) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


class CodeWatcher(BackgroundLoop):
    """Calls ``on_change(changed files)`` when the asset's files under ``root`` change (polling)."""

    def __init__(self, root: Path, on_change: Callable[[list[str]], object], *,
                 interval_seconds: float = DEFAULT_INTERVAL_SECONDS):
        super().__init__(interval_seconds)
        self.root = root
        self._on_change = on_change
        self._snapshot: Snapshot = {}

    thread_name = "code-watcher"

    def start(self) -> None:
        self._snapshot = snapshot(self.root)
        super().start()

    def tick(self) -> None:
        current = snapshot(self.root)
        changed = changed_files(self._snapshot, current)
        if changed:
            self._snapshot = current
            self._on_change(changed)  # a failure keeps the old code; the next change retries

    def tick_failed(self, exc: Exception) -> None:
        log.error("reloading the functions' code failed; the previous version keeps running", exc_info=exc)
