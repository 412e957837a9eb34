"""Bytecode for the functions' code asset, compiled by the runtime's own Python when synthesis has it.

Lambda's code directory is read-only, so Python cannot cache what it compiles there: every cold start
compiles each of our modules it imports from source (about 60 ms of CPU for a plain job's 270 KB on
the bench's machine, more than the whole difference the cold-start target allows). The AWS-managed
Powertools layer and the runtime's boto3 come compiled; our asset can too, but only by the runtime's
own minor version (``python3.13`` reads ``cpython-313`` files and nothing else), and no Docker is used
at synthesis. So:

* the interpreter is the one named by ``TIERED_JOBS_BYTECODE_PYTHON`` (a path; ``none`` turns this
  off), else this interpreter when it is the runtime's version, else ``python3.13`` (the runtime's
  name) on ``PATH`` when it runs and says it is that version;
* with none found the asset stays source only, as before, and synthesis says how to get bytecode.

The files are hash-checked (PEP 552): Python reads a module's source to confirm its bytecode still
matches, so an edit made in Lambda's console editor is compiled, never shadowed by stale bytecode,
for the cost of hashing the source (microseconds). The source stays beside the bytecode, so
tracebacks (and the letters that carry them) show the lines. Each file is compiled under
``/var/task``, Lambda's path for the code, so the same source gives the same bytes on every
synthesis, and the asset's hash changes only with the code or the interpreter's version.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tiered_jobs.contract.errors import USAGE, TieredJobsError

#: The interpreter that compiles the asset: a path, or ``none`` to ship source only.
INTERPRETER_ENV = "TIERED_JOBS_BYTECODE_PYTHON"
OFF = "none"
#: Where Lambda puts a function's code: the path compiled into the bytecode (its tracebacks' file names).
LAMBDA_TASK_ROOT = "/var/task"
#: Run by the chosen interpreter: its version first (checked), then the compilation.
_COMPILE = """
import compileall, py_compile, sys
root, ddir = sys.argv[1], sys.argv[2]
compileall.compile_dir(root, ddir=ddir, quiet=1, workers=1,
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
"""
_VERSION = "import sys; print('%d.%d' % sys.version_info[:2])"


class BytecodeError(TieredJobsError, ValueError):
    """The interpreter named to compile the asset is missing, is not the runtime's version, or failed."""

    code = USAGE


@dataclass(frozen=True)
class Interpreter:
    """A Python that compiles for ``version`` (``3.13``), and how it was found (for messages)."""

    executable: str
    version: str
    found_by: str


def runtime_version(runtime: str) -> str:
    """``python3.13`` -> ``3.13``."""
    return runtime.removeprefix("python")


def find_interpreter(runtime: str, environ: os._Environ[str] | dict[str, str] | None = None) -> Interpreter | None:
    """The interpreter that compiles for ``runtime``, or ``None`` (source only). A named one that is
    missing or of another version is an error: it was asked for, so it is not silently skipped."""
    environ = os.environ if environ is None else environ
    version = runtime_version(runtime)
    named = environ.get(INTERPRETER_ENV, "").strip()
    if named:
        if named.lower() == OFF:
            return None
        found = _version_of(named)
        if found != version:
            raise BytecodeError(
                f"{INTERPRETER_ENV}={named!r} "
                + ("does not run" if found is None else f"is Python {found}")
                + f", but the functions run {runtime}: name that version's interpreter, "
                f"or set {INTERPRETER_ENV}={OFF} to ship source only"
            )
        return Interpreter(named, version, f"{INTERPRETER_ENV}")
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return Interpreter(sys.executable, version, "the interpreter running the synthesis")
    on_path = shutil.which(runtime, path=environ.get("PATH"))
    if on_path is not None and _version_of(on_path) == version:
        return Interpreter(on_path, version, f"{runtime} on PATH")
    return None


@dataclass(frozen=True)
class Compiled:
    """What :func:`compile_tree` wrote: how many modules, and what did not compile (the interpreter's
    own words, empty when everything did)."""

    modules: int
    failures: str


def compile_tree(root: Path, interpreter: Interpreter) -> Compiled:
    """Compile every ``.py`` under ``root`` into ``__pycache__`` beside it.

    A module that does not compile is left as source and named in ``failures``, not raised: without
    the runtime's interpreter at hand the same asset would deploy, so synthesis gives the same result
    on every machine and says it (its import fails that module's records with the reason, as ever)."""
    result = subprocess.run(
        [interpreter.executable, "-c", _COMPILE, str(root), LAMBDA_TASK_ROOT],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if result.returncode != 0:
        raise BytecodeError(
            f"compiling the functions' code with {interpreter.executable} ({interpreter.found_by}) failed:\n"
            f"{(result.stdout + result.stderr).strip()[-2000:]}"
        )
    modules = sum(1 for _ in root.rglob(f"__pycache__/*.cpython-{interpreter.version.replace('.', '')}.pyc"))
    return Compiled(modules, result.stdout.strip())


def source_only_note(runtime: str) -> str:
    """What synthesis says when no interpreter was found."""
    return (
        f"The functions' code ships as source only: no {runtime} was found to compile it, so each cold start "
        f"compiles the modules it imports. Put {runtime} on PATH, or name it in {INTERPRETER_ENV}, "
        f"when synthesizing to ship bytecode (docs/consumer.md, 'Cold start')."
    )


@functools.lru_cache(maxsize=32)
def _version_of(executable: str) -> str | None:
    """``3.13``, or ``None`` when ``executable`` does not run (a shim for a version not installed). Asked
    once per executable per process: a test suite or an app synthesizes many stacks."""
    try:
        result = subprocess.run([executable, "-c", _VERSION], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    return result.stdout.strip() if result.returncode == 0 else None
