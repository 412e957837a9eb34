"""The seed file: the app's test data, put back after every deploy of local mode.

Local mode keeps everything in memory, and a change to ``cdk.json`` needs a restart (a fresh
deploy), so the rows, jobs and letters a developer tests with would be gone each time. A seed file
(``local-seed.py`` in the app's folder, or ``up --seed PATH``) is run after each deploy, in a child
process with the stage's environment pointing at the embedded AWS (the variables ``up`` prints),
so it is plain boto3 or ``tiered_jobs.publisher`` code, the same it would be against AWS.

A failing seed is reported, never fatal: the stack is up and usable, and the fix is to edit the
seed and restart.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Looked for in the app's folder when ``--seed`` is not given.
DEFAULT_SEED_FILE = "local-seed.py"
#: ``up --seed``'s variable.
SEED_ENV = "TIERED_JOBS_LOCAL_SEED"
#: A seed that runs longer is stopped and reported (it is test data, not a migration).
SEED_TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class SeedRun:
    path: Path
    returncode: int
    output: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def seed_file(app_directory: Path, given: Path | None) -> Path | None:
    """The seed to run: ``given`` (relative to the current directory; it must exist), else the app
    folder's ``local-seed.py`` if there is one, else none."""
    if given is not None:
        path = given.expanduser().resolve()
        if not path.is_file():
            raise FileNotFoundError(f"--seed {given}: no such file ({path})")
        return path
    default = app_directory / DEFAULT_SEED_FILE
    return default.resolve() if default.is_file() else None


def run_seed(path: Path, environment: Mapping[str, str], cwd: Path, timeout: float = SEED_TIMEOUT_SECONDS) -> SeedRun:
    """Run ``path`` with this Python in ``cwd``, with this process's environment plus ``environment``
    (the endpoint, fake credentials, the stage), its stdout and stderr together."""
    env = dict(os.environ)
    for name, value in environment.items():  # an empty value means unset (a session token of real credentials)
        if value:
            env[name] = value
        else:
            env.pop(name, None)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(path)],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return SeedRun(path, -1, output + f"\n(stopped after {timeout:.0f} s)", time.monotonic() - started)
    return SeedRun(path, done.returncode, done.stdout, time.monotonic() - started)
