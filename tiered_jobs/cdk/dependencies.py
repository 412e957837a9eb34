"""A job folder's third-party packages (its ``requirements.txt``), installed for Lambda without Docker.

Synthesis builds nothing: pip downloads *wheels* for the functions' runtime and architecture
(``--platform manylinux..._aarch64 --python-version 3.13 --implementation cp --only-binary=:all:``)
into ``<cache>/<key>/python``, the layout of a Lambda layer (``/opt/python`` is on the runtime's
path). The construct ships that folder as one layer that every consumer and the replay function get.

* **Cache.** The key is a sha256 of what decides the result: the requirements' text, the target
  (Python version, platform tags, or the host interpreter), pip's own options and this module's
  ``LAYOUT`` version. An unchanged synthesis finds ``<cache>/<key>`` and runs no pip. An install
  goes to a temporary folder beside it, renamed into place once complete: a crash or a failed
  install never leaves a half-filled entry that a later synthesis would trust. The cache is
  ``$TIERED_JOBS_PACKAGE_CACHE``, else ``$XDG_CACHE_HOME/tiered-jobs/packages``, else
  ``~/.cache/tiered-jobs/packages``; deleting it is always safe.
* **Refusals, one line each.** A package without a wheel for the target (an sdist needs a
  compiler and the target's headers: Docker, which synthesis never uses). A requirement naming a
  distribution the function already has: ``boto3``/``botocore``/``s3transfer`` (the Lambda
  runtime) or ``aws-lambda-powertools`` (the managed layer): a copy in the layer would come first
  on the path and silently replace the one the runtime and the Powertools layer were built with,
  so it is refused whatever its version (the runtime's own version is not known at synthesis).
  Pulled in by another package, such a distribution is left out of the layer for the same reason.
  The same holds for what the Powertools layer ships with Powertools (``POWERTOOLS_LAYER``: pydantic,
  typing-extensions, wrapt, attrs, cryptography...): both layers unpack into ``/opt/python`` file by
  file, and a copy of another version would overwrite part of the Powertools layer's.
* **Size.** :func:`check_unzipped_size` holds the function, its layers and the managed
  Powertools layer (an estimate, ``POWERTOOLS_LAYER_BYTES``) to Lambda's 250 MB unzipped limit.

Local mode installs the same file for the host interpreter (:meth:`Target.host`), cached the
same way. Standard library only: local mode and the tests use it without jsii.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tiered_jobs.contract.errors import USAGE, TieredJobsError

#: The file of a job folder that lists its packages.
REQUIREMENTS_FILE = "requirements.txt"
#: Overrides where installed packages are cached.
CACHE_ENV = "TIERED_JOBS_PACKAGE_CACHE"
#: A layer's Python folder (``/opt/python`` on Lambda).
LAYER_PYTHON_DIR = "python"
#: Bumped when what an install leaves in the cache changes, so older entries are not reused.
LAYOUT = 2
#: Lambda's limit on a function's code and all its layers, unzipped (bytes).
LAMBDA_UNZIPPED_LIMIT_BYTES = 250 * 1024 * 1024
#: The AWS-managed Powertools layer, unzipped: 3.37.0 with every extra for python3.13 arm64
#: measured 40.9 MB (boto3 and botocore left out, as the runtime provides them); 45 MB leaves
#: room for later versions. An estimate: AWS does not state it.
POWERTOOLS_LAYER_BYTES = 45 * 1024 * 1024
#: Distributions a function already has, by the normalized name (PEP 503), and who provides them.
PROVIDED: Mapping[str, str] = {
    "boto3": "the Lambda Python runtime",
    "botocore": "the Lambda Python runtime",
    "s3transfer": "the Lambda Python runtime",
    "aws-lambda-powertools": "the AWS-managed Powertools layer (setting 'powertools_version')",
}
#: The Powertools release whose layer :data:`POWERTOOLS_LAYER` lists (the default ``powertools_version``).
POWERTOOLS_LAYER_VERSION = "3.37.0"
#: What the AWS-managed Powertools layer unpacks into ``/opt/python`` besides Powertools itself, by
#: normalized name. AWS builds the layer from ``aws-lambda-powertools[all]`` and leaves out the SDK the
#: runtime has (boto3, botocore, s3transfer), so this is the closure of that release's requirements with
#: every extra, for CPython on Linux, not followed into the SDK. Checked in rather than resolved at
#: synthesis: synthesis asks no package index about Powertools, and the app's environment need not
#: have it installed. tests/cdk/test_dependencies.py resolves the pinned release's metadata (pip's
#: ``--dry-run --report`` for the Lambda target) and compares, so bumping the default version fails
#: there until this list follows. A stage pinned to another release is held to this list: the names
#: change rarely between releases, and the versions are never known here (only AWS's build knows them).
POWERTOOLS_LAYER: frozenset[str] = frozenset(
    {
        "annotated-types",
        "attrs",
        "aws-encryption-sdk",
        "aws-xray-sdk",
        "cffi",
        "cryptography",
        "fastjsonschema",
        "jmespath",
        "jsonpath-ng",
        "pycparser",
        "pydantic",
        "pydantic-core",
        "pydantic-settings",
        "pyjwt",
        "python-dotenv",
        "typing-extensions",
        "typing-inspection",
        "urllib3",
        "wrapt",
    }
)
#: The glibc minor version of Lambda's Python runtimes: before 3.12 they run on Amazon Linux 2 (glibc
#: 2.26), from 3.12 on Amazon Linux 2023 (glibc 2.34). A ``manylinux_2_N`` wheel runs on glibc 2.N and later.
_AL2_RUNTIMES = ("3.10", "3.11")
_GLIBC_AL2 = 26
_GLIBC_AL2023 = 34
#: The oldest manylinux of each machine (PEP 600): manylinux1 (glibc 2.5) on x86_64, manylinux2014
#: (glibc 2.17) on aarch64, which had none before it.
_OLDEST_GLIBC = {"x86_64": 5, "aarch64": 17}
#: The legacy names of three ``manylinux_2_N`` tags (PEP 600): a wheel may carry either.
_LEGACY_MANYLINUX = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
_MACHINE = {"arm64": "aarch64", "x86_64": "x86_64"}
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_NO_MATCH = re.compile(r"No matching distribution found for (\S+)")
#: A terminal's escape sequences (colours, styles): what pip prints when it believes it writes to one.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class DependencyError(TieredJobsError, ValueError):
    """A job folder's packages cannot be installed for the functions (the message names the package and the fix)."""

    code = USAGE


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares them (``Aws_Lambda.Powertools`` -> ``aws-lambda-powertools``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where installs are cached: ``$TIERED_JOBS_PACKAGE_CACHE``, else the user's cache folder."""
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV]).expanduser()
    base = Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "tiered-jobs" / "packages"


@dataclass(frozen=True)
class Target:
    """What the packages are installed for: a Lambda runtime and architecture, or the host interpreter."""

    #: ``python3.13 on arm64``: how messages name it.
    description: str
    #: ``3.13``.
    python_version: str
    #: pip's ``--platform`` tags; empty for the host interpreter (pip's own tags).
    platforms: tuple[str, ...] = ()
    #: What else makes an install for this target differ (the host's interpreter and machine).
    identity: str = ""

    @classmethod
    def lambda_runtime(cls, runtime: str, architecture: str) -> Target:
        """``python3.13`` / ``arm64`` -> manylinux aarch64 wheels for CPython 3.13."""
        version = runtime.removeprefix("python")
        if architecture not in _MACHINE or not re.fullmatch(r"3\.\d+", version):
            raise DependencyError(f"no package target for runtime {runtime!r} on {architecture!r}")
        return cls(
            description=f"{runtime} on {architecture}",
            python_version=version,
            platforms=manylinux_tags(_MACHINE[architecture], _GLIBC_AL2 if version in _AL2_RUNTIMES else _GLIBC_AL2023),
        )

    @classmethod
    def host(cls) -> Target:
        """The interpreter running this code (local mode's functions run on it)."""
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        return cls(
            description=f"this machine's python{version} ({platform.machine()})",
            python_version=version,
            identity=f"{sys.implementation.name} {sys.version} {sys.platform} {platform.machine()}",
        )

    def pip_options(self) -> list[str]:
        if not self.platforms:
            return ["--only-binary=:all:"]
        return [
            *(f"--platform={tag}" for tag in self.platforms),
            "--implementation=cp",
            f"--python-version={self.python_version}",
            "--only-binary=:all:",
            # Bytecode would be the synthesizing Python's, not the runtime's: Lambda compiles on import.
            "--no-compile",
        ]

    @property
    def wheel_hint(self) -> str:
        """What kind of wheel the target needs, for messages."""
        if not self.platforms:
            return f"a wheel for cp{self.python_version.replace('.', '')} on this machine"
        machine = "aarch64" if self.platforms[0].endswith("_aarch64") else "x86_64"
        return f"a manylinux {machine} wheel for cp{self.python_version.replace('.', '')} (or a pure-Python one)"


def manylinux_tags(machine: str, glibc: int) -> tuple[str, ...]:
    """Every manylinux tag a system of glibc 2.``glibc`` on ``machine`` runs: ``manylinux_2_N`` newest first
    (pip prefers the earlier ones), then the legacy names of the same tags.

    Each tag is passed to pip: its ``--platform`` takes a tag literally (pip 23 expands only the legacy
    manylinux2014 and manylinux2010), so given ``manylinux_2_34`` alone it refuses a wheel tagged only
    ``manylinux_2_17``, which runs there. Naming every tag holds whatever a pip version expands or not.
    """
    oldest = _OLDEST_GLIBC[machine]
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(glibc, oldest - 1, -1)]
    legacy = [f"{name}_{machine}" for minor, name in _LEGACY_MANYLINUX.items() if oldest <= minor <= glibc]
    return (*tags, *legacy)


@dataclass(frozen=True)
class Installed:
    """A cached install: ``directory`` is a layer's root (the packages are in its ``python/``)."""

    directory: Path
    key: str
    #: Bytes of every file, unzipped.
    size: int
    #: ``False``: pip ran for this call.
    cached: bool

    @property
    def python_dir(self) -> Path:
        return self.directory / LAYER_PYTHON_DIR


def requirement_names(text: str) -> list[tuple[int, str, str]]:
    """``(line number, line, normalized name)`` of every requirement line (options and comments skipped)."""
    found = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        match = _NAME.match(line)
        if match:
            found.append((number, line, normalized(match.group(1))))
    return found


def check_requirements(text: str, where: str) -> None:
    """Refuse a requirement on a distribution the function already has (``PROVIDED``, ``POWERTOOLS_LAYER``),
    naming it."""
    for number, line, name in requirement_names(text):
        if name in PROVIDED:
            raise DependencyError(
                f"{where} line {number}: {line!r}: {name} is provided by {PROVIDED[name]}, and a copy in the "
                f"functions' layer would replace it; remove the line (your jobs import the provided {name})"
            )
        if name in POWERTOOLS_LAYER:
            raise DependencyError(
                f"{where} line {number}: {line!r}: {name} is in the AWS-managed Powertools layer "
                f"({POWERTOOLS_LAYER_VERSION} with every extra), which unpacks into /opt/python before the "
                f"functions' layer: a copy would overwrite its files and can break Powertools' import in every "
                f"function; remove the line (your jobs import the layer's {name})"
            )


def left_out(target: Target) -> frozenset[str]:
    """The distributions an install for ``target`` leaves out when another package pulls them in: what the
    function already has. On Lambda that includes the Powertools layer's: both layers unpack into
    ``/opt/python`` file by file, ours last, so a copy of another version would overwrite some of its
    files, leaving neither version whole. Left out, the package gets the layer's copy, which meets
    Powertools' own ranges. Local mode has no such layer: its functions run on this machine's environment."""
    return frozenset(PROVIDED) | (POWERTOOLS_LAYER if target.platforms else frozenset())


def cache_key(text: str, target: Target, pip_options: Sequence[str] = ()) -> str:
    material = {
        "layout": LAYOUT,
        "requirements": text,
        "python": target.python_version,
        "platforms": list(target.platforms),
        "identity": target.identity,
        "pip": list(pip_options),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def tree_size(directory: Path) -> int:
    """Bytes of every file under ``directory`` (what it takes unzipped)."""
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file() and not path.is_symlink())


def install(
    requirements: Path,
    target: Target,
    *,
    cache: Path | None = None,
    pip_options: Sequence[str] = (),
    python: str = sys.executable,
) -> Installed:
    """The packages of ``requirements`` installed for ``target``: from the cache, else by pip into it.

    ``pip_options`` are added to pip's command (an index, ``--find-links``) and to the cache key.
    """
    requirements = Path(requirements).resolve()
    where = str(requirements)
    text = requirements.read_text(encoding="utf-8")
    check_requirements(text, where)
    key = cache_key(text, target, pip_options)
    root = cache if cache is not None else cache_dir()
    entry = root / key
    if entry.is_dir():
        return Installed(entry, key, tree_size(entry), cached=True)
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=root))
    try:
        _pip(python, requirements, scratch / LAYER_PYTHON_DIR, target, pip_options, where)
        _leave_out(scratch / LAYER_PYTHON_DIR, left_out(target))
        try:
            scratch.rename(entry)  # atomic: the entry is complete or absent
        except OSError:
            if not entry.is_dir():  # not a concurrent synthesis that got there first
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Installed(entry, key, tree_size(entry), cached=False)


def _pip(python: str, requirements: Path, into: Path, target: Target, pip_options: Sequence[str], where: str) -> None:
    command = [
        python,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--no-color",
        "--quiet",
        "--target",
        str(into),
        *target.pip_options(),
        *pip_options,
        "--requirement",
        str(requirements),
    ]
    # The CDK CLI runs the app with FORCE_COLOR=0, which pip's console reads as "force colour" (any value):
    # its errors would carry escape codes into the one-line refusal. Without the variable and with
    # --no-color it writes plain text; what still slips through is stripped (``plain``).
    environment = {name: value for name, value in os.environ.items() if name != "FORCE_COLOR"}
    # From the job folder, so a relative path in the file means what its author meant.
    result = subprocess.run(
        command, cwd=requirements.parent, env=environment, capture_output=True, text=True, check=False
    )
    if result.returncode == 0:
        return
    stderr = plain(result.stderr)
    missing = _NO_MATCH.search(stderr)
    if missing:
        raise DependencyError(
            f"{where}: no wheel of {missing.group(1)!r} for {target.description}: synthesis installs wheels only "
            f"(no Docker, nothing is compiled); pin a version that publishes {target.wheel_hint}, use another "
            f"package, or change 'architecture'"
        )
    errors = [line.removeprefix("ERROR: ") for line in stderr.splitlines() if line.startswith("ERROR:")]
    lines = errors or stderr.strip().splitlines() or [f"exit status {result.returncode}"]
    reason = lines[-1]
    raise DependencyError(f"{where}: pip could not install the packages for {target.description}: {reason}")


def plain(text: str) -> str:
    """``text`` without a terminal's escape sequences (colours, styles)."""
    return _ESCAPES.sub("", text)


def _leave_out(site: Path, names: frozenset[str]) -> None:
    """Leave out the distributions ``names`` (what the function already has), pulled in by another package:
    their files by the installed ``RECORD``, then their metadata folder."""
    for info in site.glob("*.dist-info"):
        name = normalized(info.name.removesuffix(".dist-info").rsplit("-", 1)[0])
        if name not in names:
            continue
        record = info / "RECORD"
        if record.is_file():
            for row in record.read_text(encoding="utf-8").splitlines():
                relative = row.split(",", 1)[0]
                path = (site / relative).resolve()
                if relative and path.is_relative_to(site.resolve()) and path.is_file():
                    path.unlink()
        shutil.rmtree(info, ignore_errors=True)
    for folder in sorted((p for p in site.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def check_unzipped_size(parts: Mapping[str, int], limit: int | None = None) -> None:
    """Refuse functions whose code and layers (``{what: bytes}``) exceed Lambda's unzipped limit."""
    limit = LAMBDA_UNZIPPED_LIMIT_BYTES if limit is None else limit
    total = sum(parts.values())
    if total <= limit:
        return
    detail = ", ".join(f"{what} {_mb(size)}" for what, size in parts.items())
    raise DependencyError(
        f"the functions' code and layers would take {_mb(total)} unzipped ({detail}), over Lambda's "
        f"{_mb(limit)} limit for a function and its layers; remove packages from {REQUIREMENTS_FILE} "
        f"(or pick lighter ones), or move a heavy job to a function of your own built from a container image"
    )


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
