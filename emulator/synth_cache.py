"""Reuse an identical synthesis: opt-in, for a test run that synthesizes the same app many times.

A synthesis of this repository's app costs 10-20 s of CPU (a Python process, jsii's Node.js
runtime, cdk-nag), and a test run starts a local mode a dozen times for the same app with the
same context: in its own tests, behind documentation pages, behind ``up`` in a subprocess.
With ``TIERED_JOBS_SYNTH_CACHE`` set to a folder, :func:`synth` keeps each cloud assembly there
under a key of everything that decides it, and a later identical synthesis copies it instead of
running the app again:

- the app's files: the content of every file under its folder (not their paths' absolute
  location or times, so a copy of the checkout hits the same entry), except caches, virtualenvs,
  ``node_modules`` and earlier cloud assemblies;
- the app's command, the context ``cdk synth`` would pass, the account and region;
- the environment variables an app may read (``CDK_*``, ``TIERED_JOBS_*``) and those that pick
  its interpreter and packages (``PATH``, ``PYTHONPATH``, ``VIRTUAL_ENV``), but for the ones that
  only say where things are kept or served.

What the key leaves out is what no synthesis of a test run changes: the installed packages
(the run's own virtualenv) and files outside the app's folder. So the cache is for one run, in a
fresh folder (the suite makes one per session), never for a developer's long-lived loop, where a
changed installed package would be missed. Without the variable nothing is cached.

Several processes may ask for the same key at once (parallel test workers): one synthesizes under
a lock, the others wait for it and copy its result. A failed synthesis stores nothing.

Standard library only.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from emulator.cdk_app import CdkApp

#: The folder of reusable assemblies; unset: every synthesis runs the app.
CACHE_ENV = "TIERED_JOBS_SYNTH_CACHE"
#: Never part of an app's content: caches, environments, dependencies, assemblies, version control.
IGNORED_NAMES = frozenset(
    {".git", ".venv", "node_modules", "cdk.out", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)
#: Environment variables that may change what an app synthesizes.
KEYED_ENV_PREFIXES = ("CDK_", "TIERED_JOBS_")
KEYED_ENV_NAMES = frozenset({"PATH", "PYTHONPATH", "VIRTUAL_ENV"})
#: ... except those that only say where things are kept or served (a port differs per session).
UNKEYED_ENV_NAMES = frozenset(
    {CACHE_ENV, "TIERED_JOBS_CONSOLE_PORT", "TIERED_JOBS_PACKAGE_CACHE", "TIERED_JOBS_LOCAL_SEED"}
)


def synth(
    app: CdkApp,
    outdir: Path,
    *,
    context: Mapping[str, Any] | None = None,
    account: str | None = None,
    region: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """:meth:`CdkApp.synth`, or a copy of the identical synthesis the cache already holds."""
    env = os.environ if environ is None else environ
    cache = env.get(CACHE_ENV) or os.environ.get(CACHE_ENV)
    if not cache:
        return app.synth(outdir, context=context, account=account, region=region, environ=environ)
    root = Path(cache)
    root.mkdir(parents=True, exist_ok=True)
    entry = root / key(app, context, account, region, env)
    with open(entry.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not entry.is_dir():
            staging = entry.with_suffix(".partial")
            shutil.rmtree(staging, ignore_errors=True)
            try:
                app.synth(staging, context=context, account=account, region=region, environ=environ)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            staging.rename(entry)
    outdir = Path(outdir).resolve()
    shutil.copytree(entry, outdir, dirs_exist_ok=True)
    return outdir


def key(
    app: CdkApp,
    context: Mapping[str, Any] | None,
    account: str | None,
    region: str | None,
    environ: Mapping[str, str],
) -> str:
    """The hex digest of everything that decides the synthesis (see the module's docstring)."""
    digest = hashlib.sha256()
    keyed_env = {
        name: value
        for name, value in environ.items()
        if (name.startswith(KEYED_ENV_PREFIXES) or name in KEYED_ENV_NAMES) and name not in UNKEYED_ENV_NAMES
    }
    head = {
        "command": app.command,
        "context": app.context(context),
        "account": account,
        "region": region,
        "env": keyed_env,
    }
    digest.update(json.dumps(head, sort_keys=True, default=str).encode())
    for relative, path in _content(app.directory):
        digest.update(relative.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]


def _content(directory: Path) -> Iterator[tuple[str, Path]]:
    """``(relative path, file)`` for every file of the app, in a stable order; symbolic links are
    followed (a checkout's copy may be links to the original)."""
    for folder, subfolders, files in os.walk(directory, followlinks=True):
        subfolders[:] = sorted(name for name in subfolders if name not in IGNORED_NAMES)
        base = Path(folder)
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = base / name
            if path.is_file():
                yield path.relative_to(directory).as_posix(), path
