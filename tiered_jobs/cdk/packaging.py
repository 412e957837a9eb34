"""What a function's code asset contains: the app's job folder plus the runtime parts of this package.

No Docker at synthesis: the jobs are the app's own Python files, and what a function
runs of Tiered Jobs (``RUNTIME_PARTS``: contract, runtime, handlers, replay domain) is copied from
wherever this package is installed -- a wheel in a virtualenv, or an editable checkout. Third-party
code (Powertools, boto3) comes from the AWS-managed layer and the Lambda runtime, not the asset;
the job folder's own packages (its ``requirements.txt``) go into a layer (``dependencies.py``).

The CDK construct (``tiered_jobs.cdk.JobsCode``) stages the asset with :meth:`JobsSource.stage`;
local mode uses the same :meth:`JobsSource.files` to watch for changes and to reload code, so both
ship the same files. Standard library only.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from tiered_jobs.cdk.dependencies import REQUIREMENTS_FILE
from tiered_jobs.contract import payloads
from tiered_jobs.contract.errors import USAGE, TieredJobsError

#: The installed package (this module lives in its ``cdk`` folder): what the runtime parts are copied from.
PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: The parts of this package a function runs, relative to it. Nothing else ships (no CLI, no publisher).
RUNTIME_PARTS: tuple[str, ...] = ("__init__.py", "contract", "runtime", "replay", "handlers")
#: Never shipped: bytecode caches (Lambda compiles on import) and editor or VCS leftovers.
IGNORED_DIRS = frozenset({"__pycache__", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
IGNORED_SUFFIXES = frozenset({".pyc", ".pyo"})
#: The job folder's own payload schemas (``<job type>.schema.json``), which the consumer enforces.
SCHEMAS_DIR = "schemas"


class JobsSourceError(TieredJobsError, ValueError):
    """The job folder or its module name cannot make a function's code (the message says why and the fix)."""

    code = USAGE


def _files_under(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file()
        and not IGNORED_DIRS.intersection(path.relative_to(root).parts[:-1])
        and path.suffix not in IGNORED_SUFFIXES
    )


@dataclass(frozen=True)
class JobsSource:
    """An app's job folder and the import name it gets in the function's code.

    ``module`` is the dotted name the consumer imports (``TIERED_JOBS_JOB_MODULES``); the folder is
    placed at that path in the asset (``myapp.jobs`` -> ``myapp/jobs/``), and any parent
    package the folder does not bring gets an empty ``__init__.py``. Default: the folder's name.
    """

    directory: Path
    module: str = ""
    #: Where the runtime parts are copied from (this installed package unless a test says otherwise).
    runtime_dir: Path = field(default=PACKAGE_DIR)

    def __post_init__(self) -> None:
        directory = Path(self.directory).resolve()
        object.__setattr__(self, "directory", directory)
        module = self.module or directory.name
        object.__setattr__(self, "module", module)
        if not directory.is_dir():
            raise JobsSourceError(
                f"job folder {str(directory)!r} does not exist or is not a folder; "
                f"pass the folder that holds your job modules (e.g. JobsCode('src/jobs'))"
            )
        if not (directory / "__init__.py").is_file():
            raise JobsSourceError(
                f"job folder {str(directory)!r} has no __init__.py; the consumer imports it as "
                f"module {module!r}, so add an __init__.py that imports your job modules"
            )
        if not all(part.isidentifier() for part in module.split(".")):
            raise JobsSourceError(
                f"module {module!r} is not an importable Python name; use letters, digits and "
                f"'_' (dots between packages), e.g. module='jobs' or module='myapp.jobs'"
            )
        if module.split(".")[0] == "tiered_jobs":
            raise JobsSourceError(f"module {module!r} would shadow the Tiered Jobs runtime; pick another name")

    @property
    def module_path(self) -> str:
        """Where the folder lands in the asset (``myapp.jobs`` -> ``myapp/jobs``)."""
        return self.module.replace(".", "/")

    @property
    def requirements(self) -> Path | None:
        """The job folder's ``requirements.txt`` (its third-party packages, ``dependencies.py``), if it has one."""
        path = self.directory / REQUIREMENTS_FILE
        return path if path.is_file() else None

    def files(self) -> dict[str, Path]:
        """``{path in the asset: source file}``: the job folder, then the runtime parts of this package."""
        found = {
            f"{self.module_path}/{path.relative_to(self.directory).as_posix()}": path
            for path in _files_under(self.directory)
        }
        for part in RUNTIME_PARTS:
            root = self.runtime_dir / part
            for path in _files_under(root):
                found[f"tiered_jobs/{path.relative_to(self.runtime_dir).as_posix()}"] = path
        return found

    def parent_packages(self) -> list[str]:
        """``__init__.py`` files the asset needs for the module's parent packages (empty ones)."""
        parts = self.module.split(".")[:-1]
        return [f"{'/'.join(parts[:depth])}/__init__.py" for depth in range(1, len(parts) + 1)]

    def check_schemas(self) -> list[Path]:
        """Check every payload schema of the job folder (``schemas/*.schema.json``): the files checked.

        A schema the consumer's validator cannot check faithfully (a keyword outside its subset, bad
        JSON) fails here, naming the file and the fix, instead of at a payload's first publish.
        """
        try:
            return payloads.check_folder(self.directory / SCHEMAS_DIR)
        except payloads.SchemaError as error:
            raise JobsSourceError(f"job folder {str(self.directory)!r}: payload schema {SCHEMAS_DIR}/{error}") from None

    def stage(self, destination: Path) -> Path:
        """Check the payload schemas, then copy the asset's files into ``destination`` (emptied first),
        the same bytes every time."""
        self.check_schemas()
        destination = Path(destination)
        if destination.exists():
            shutil.rmtree(destination)
        files = self.files()
        for relative, source in files.items():
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        for relative in self.parent_packages():
            if relative not in files:
                (destination / relative).parent.mkdir(parents=True, exist_ok=True)
                (destination / relative).write_text("", encoding="utf-8")
        return destination
