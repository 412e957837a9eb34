"""The distribution as a user gets it: the README's wheel, installed by pip into a new virtualenv
outside the repository, offline.

Offline, the dependencies are this environment's installed files, exposed to the new virtualenv
through a ``.pth`` file one distribution at a time (those the wheel declares, with the requested
extras, transitively): nothing else of this environment -- and not the repository's editable
install -- is importable there.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def build_wheel(workdir: Path) -> Path:
    """The README's `pip wheel` line, offline (`--no-build-isolation`), on a copy of the package's sources."""
    text = README.read_text(encoding="utf-8")
    (line,) = {m.group(0) for m in re.finditer(r"python -m pip wheel --no-deps -w dist \./tiered-jobs", text)}
    match = re.search(r"dist/(tiered_jobs-[^ ]+\.whl)", text)
    assert match, "the README names no wheel file"
    source = workdir / "tiered-jobs"
    shutil.copytree(ROOT / "tiered_jobs", source / "tiered_jobs", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "NOTICE"):
        shutil.copy(ROOT / name, source / name)
    build = subprocess.run(
        [sys.executable, *line.split()[1:], "--no-build-isolation", "-q"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert build.returncode == 0, build.stderr
    return workdir / "dist" / match.group(1)


def dependencies(requirements: Iterable[str], extras: Iterable[str] = ()) -> set[str]:
    """The installed distributions ``requirements`` need, transitively (markers honoured; ``extras`` of
    the top level followed, a dependency's own extras not)."""
    from packaging.requirements import Requirement

    found: set[str] = set()
    pending = [(Requirement(r), ("", *extras)) for r in requirements]
    while pending:
        requirement, wanted = pending.pop()
        if requirement.marker is not None and not any(requirement.marker.evaluate({"extra": e}) for e in wanted):
            continue
        name = requirement.name.lower().replace("_", "-")
        if name not in found:
            found.add(name)
            pending += [(Requirement(r), ("",)) for r in metadata.distribution(name).requires or []]
    return found


def fresh_venv(wheel: Path, home: Path, extras: Iterable[str] = ()) -> Path:
    """A new virtualenv in ``home`` with only the wheel installed (by pip, from the file) and its declared
    dependencies (with ``extras``, e.g. ``("cdk",)``), exposed as the module docstring says."""
    venv, deps = home / "venv", home / "deps"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=180)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert install.returncode == 0, install.stderr
    requires = metadata.Distribution.at(next((venv / "lib").glob("python*/site-packages/tiered_jobs-*.dist-info")))
    deps.mkdir()
    for name in dependencies(requires.requires or [], extras):
        distribution = metadata.distribution(name)
        for top in {Path(f.parts[0]) for f in distribution.files or [] if f.parts[0] != ".."}:
            source = Path(distribution.locate_file(top))
            if source.exists() and not (deps / top).exists():
                (deps / top).symlink_to(source)
    (site_packages(venv) / "dependencies.pth").write_text(f"{deps}\n")
    return venv


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def run_outside(
    venv: Path, *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a program of ``venv`` (from its own folder unless ``cwd``), with no variable pointing back at
    the repository."""
    clean = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(venv.parent), **(env or {})}
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]],
        cwd=cwd or venv.parent,
        env=clean,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
