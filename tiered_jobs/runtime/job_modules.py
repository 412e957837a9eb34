"""Importing an app's job modules the way its consumer does: each job folder's ``schemas/`` first, then
one module per job-type prefix, on the first record of that prefix.

The one way a job module becomes live, used by the consumer's handler and by anything that runs the
real consumer outside Lambda (the local runtime, bench, tests). Importing a job module registers its
job types (``@job``); its payload schemas live beside it in ``<job folder>/schemas/``, and are added
to the search path *before* the import, so a module that checks a payload while it loads sees them.
A caller that imported the module by hand and skipped its schemas would run payloads no schema
checked: the bug this function exists to make impossible.

**One module per prefix, imported lazily.** Job type ``orders.ship`` lives in module
``<job package>.orders``, imported when the registry is first asked for an ``orders.*`` type. A
tier's consumer is only ever given the types routed to it, so it imports only their modules: a
module that fails to import (a syntax error, a missing dependency, any exception while it loads)
stops its own job types and nothing else, on no other tier and no other prefix of the same batch.
Routes are globs (``*``, ``pay*``), so they cannot name modules at synthesis; the records that
actually arrive do. A package whose ``__init__.py`` imports every module still works (those modules
load with the package, at cold start), without that isolation.

**A failed import is a code fault, never a crash.** The import's exception is kept and raised again,
wrapped in :class:`JobModuleError` (transient), for every record of the prefix: the records back off
and come back, and run once the fixed code is deployed (a new container imports afresh); when their
attempts run out they are dead-lettered with that reason, never moved by SQS's redrive without one.
The failure is remembered for :data:`RETRY_FAILED_IMPORT_AFTER_SECONDS`, then the import is tried
again on the next record: a failure of the moment (a throttled call at import) does not stick for
the container's life, and a broken module costs one import per interval, not one per record. The job
types such a module registered before it failed are forgotten, so none of its half-built handlers runs.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from importlib import import_module, invalidate_caches
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from tiered_jobs.contract import payloads
from tiered_jobs.contract.names import Env

from .errors import TransientError

if TYPE_CHECKING:
    from .registry import JobRegistry

#: How long a failed import is answered from memory before it is tried again.
RETRY_FAILED_IMPORT_AFTER_SECONDS = 10.0
#: A module's own failure message is cut to this many characters in the error (the letter has its own cap).
MAX_CAUSE_CHARS = 500


class JobModuleError(TransientError):
    """The module of a job type failed to import: its records are retried until it imports (or dead-lettered)."""


def parse_modules(value: str | None) -> list[str]:
    """The module names of ``TIERED_JOBS_JOB_MODULES`` (comma-separated); refused when there are none."""
    modules = [name.strip() for name in (value or "").split(",") if name.strip()]
    if not modules:
        raise RuntimeError(
            f"{Env.JOB_MODULES} is not set: the stack sets it to the comma-separated modules "
            "that define the jobs (e.g. 'myapp.jobs')"
        )
    return modules


def load_job_modules(modules: Iterable[str], *, every_module: bool = False) -> JobModules:
    """Add each package's ``schemas/`` folder, import the package, and let the default registry import
    its modules per prefix. Raises what an import raises (scripts and tests want to see it).

    ``every_module`` imports all the package's modules now (a test that lists every registered type).
    """
    from .registry import registry

    loader = JobModules.of(registry)
    for module in modules:
        loader.add(module, strict=True)
        if every_module:
            loader.import_every_module(module)
    return loader


class JobModules:
    """The job packages of one registry, and the per-prefix imports of their modules (the registry's loader)."""

    def __init__(
        self,
        registry: JobRegistry,
        *,
        clock: Callable[[], float] = time.monotonic,
        retry_after_seconds: float = RETRY_FAILED_IMPORT_AFTER_SECONDS,
    ) -> None:
        self.registry = registry
        self.clock = clock
        self.retry_after_seconds = retry_after_seconds
        self.packages: list[str] = []
        #: Modules imported, or found absent: never looked up again in this container.
        self._settled: set[str] = set()
        #: Modules whose import failed: (when, what to say, the import's own exception).
        self._failed: dict[str, tuple[float, str, BaseException]] = {}
        registry.loader = self

    @classmethod
    def of(cls, registry: JobRegistry) -> JobModules:
        """The loader installed on ``registry``, installed now if it has none."""
        loader = registry.loader
        return loader if isinstance(loader, JobModules) else cls(registry)

    def add(self, package: str, *, strict: bool = False) -> None:
        """Add ``package``'s schemas, then import it. A failure raises when ``strict``; otherwise it is
        remembered and raised for each record (the consumer's cold start never fails on a job's code)."""
        if package not in self.packages:
            self.packages.append(package)
        try:
            folder = folder_of(package)
            if folder is not None and (folder / "schemas").is_dir():
                payloads.add_schema_dir(folder / "schemas")
        except Exception:  # finding the folder imports its parents: their failure is the package's
            if strict:
                raise
        try:
            self._import(package, strict=strict)
        except JobModuleError:
            pass  # remembered: each record of the package raises it (and retries the import in time)

    def import_every_module(self, package: str) -> None:
        """Import each module of ``package`` (not its sub-packages' modules): every type registered."""
        import pkgutil

        folder = folder_of(package)
        for info in pkgutil.iter_modules([str(folder)] if folder else []):
            self._import(f"{package}.{info.name}", strict=True)

    def __call__(self, job_type: str) -> None:
        """Import the module of ``job_type``'s prefix in each package, once; raise :class:`JobModuleError`
        when a package or that module failed to import (and the type is still not registered)."""
        prefix = job_type.split(".", 1)[0]
        failure: JobModuleError | None = None
        for package in self.packages:
            try:
                self._import(package)
                module = f"{package}.{prefix}"
                if module not in self._settled and module not in self._failed and not _exists(module):
                    self._settled.add(module)  # no such module: its types are unknown (permanent), as always
                    continue
                self._import(module)
            except JobModuleError as exc:
                failure = failure or exc
        if failure is not None and job_type not in self.registry.types():  # not ``in``: that would ask again
            raise failure

    def _import(self, module: str, *, strict: bool = False) -> None:
        if module in self._settled:
            return
        failed = self._failed.get(module)
        if failed is not None:
            when, message, cause = failed
            if self.clock() - when < self.retry_after_seconds:
                raise JobModuleError(message) from cause
            invalidate_caches()  # a file written since the last try is found
        before, loaded = set(self.registry.types()), set(sys.modules)
        try:
            import_module(module)
        except Exception as exc:
            self.registry.forget(set(self.registry.types()) - before)
            self._unload(set(sys.modules) - loaded)
            if strict:
                raise
            message = _describe(module, exc)
            self._failed[module] = (self.clock(), message, exc)
            raise JobModuleError(message) from exc
        self._failed.pop(module, None)
        self._settled.add(module)

    def _unload(self, names: set[str]) -> None:
        """Unload the job modules a failed import loaded (a package's ``__init__`` importing its modules):
        a retry then runs them again, and registers their types again."""
        for name in names:
            if any(name == package or name.startswith(f"{package}.") for package in self.packages):
                sys.modules.pop(name, None)


def _describe(module: str, exc: BaseException) -> str:
    """What failed and where (the last frame, or a syntax error's own file and line), in one line."""
    where = ""
    if not isinstance(exc, SyntaxError):  # a SyntaxError's message already names its file and line
        import traceback

        frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if not frame.filename.startswith("<")]
        if frames:  # the innermost frame of the app's code, not the import machinery's
            where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}"
    cause = f"{type(exc).__name__}: {exc}"[:MAX_CAUSE_CHARS]
    return (
        f"job module {module!r} failed to import ({cause}{where}); "
        "its jobs are retried until it imports: fix it and deploy"
    )


def _exists(module: str) -> bool:
    """Whether ``module`` can be found (its parent is imported); a package that is a plain module has none."""
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def folder_of(module: str) -> Path | None:
    """The folder of ``module`` without importing it (its parent packages are imported); None if not found."""
    spec = find_spec(module)
    if spec is None:
        return None
    if spec.submodule_search_locations:  # a package: its folder
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None
