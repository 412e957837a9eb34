"""Third-party packages for the tests of a job folder's ``requirements.txt`` (``tiered_jobs.cdk.dependencies``).

Real ones from PyPI, pinned: ``msgpack`` (a C extension: a wheel per Python, platform and
architecture) and ``humanize`` (pure Python); neither is in this repository's environment, so a
job that imports them runs only if the layer is on its path. Installs share one cache per test
session (:func:`package_cache`), so PyPI is asked once. ``write_sdist`` makes a package that
has no wheel at all, and ``write_wheel`` one wheel of a chosen tag, both served from a local folder,
so what pip accepts or refuses does not depend on PyPI.
"""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

BINARY = "msgpack==1.1.2"
PURE = "humanize==4.13.0"
REQUIREMENTS = f"{BINARY}\n{PURE}\n"
#: ELF ``e_machine`` values (the ELF header, offset 18, little-endian).
EM_X86_64 = 62
EM_AARCH64 = 183


def package_cache(tmp_path_factory) -> Path:
    """One cache for the whole session (and each xdist worker): every test module installs into it."""
    return Path(tmp_path_factory.getbasetemp()) / "tiered-jobs-packages"


def elf_machine(path: Path) -> int:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", f"{path} is not an ELF file"
    return int.from_bytes(header[18:20], "little")


def shared_objects(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.so"))


def write_sdist(folder: Path, name: str = "onlysource", version: str = "1.0") -> Path:
    """A source distribution (and nothing else) of ``name`` in ``folder``, for ``--find-links``."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / f"{name}-{version}.tar.gz"
    files = {
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        "setup.py": f"from setuptools import setup\nsetup(name={name!r}, version={version!r}, py_modules=[{name!r}])\n",
        f"{name}.py": "VALUE = 1\n",
    }
    with tarfile.open(archive, "w:gz") as tar:
        for relative, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{relative}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


def write_wheel(
    folder: Path, tag: str, name: str = "onlytagged", version: str = "1.0", requires: tuple[str, ...] = ()
) -> Path:
    """A wheel of ``name`` tagged ``tag`` alone (``cp313-cp313-manylinux_2_17_aarch64``) in ``folder``, for
    ``--find-links``: a module ``<name>.py`` and the metadata pip reads (PEP 427), ``requires`` its
    ``Requires-Dist`` lines."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    metadata = "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    files = {
        f"{name}.py": "VALUE = 1\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{metadata}",
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\nTag: {tag}\n",
    }
    record = [f"{path},sha256={_digest(text.encode())},{len(text.encode())}" for path, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
