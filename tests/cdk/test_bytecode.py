"""The asset's bytecode: which interpreter compiles it, what it writes, and that Python then loads it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest

from tiered_jobs.cdk import bytecode
from tiered_jobs.cdk.packaging import JobsSource

HERE = f"python{sys.version_info.major}.{sys.version_info.minor}"
#: A Lambda runtime this interpreter is not (so only PATH or the variable can compile for it).
OTHER = "python3.10" if sys.version_info[:2] != (3, 10) else "python3.12"
TAG = f"cpython-{sys.version_info.major}{sys.version_info.minor}"


def _fake_python(folder, name, says):
    """An executable named ``name`` that answers the version question with ``says``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\necho {says}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_interpreter_running_the_synthesis_compiles_for_its_own_version():
    found = bytecode.find_interpreter(HERE, {"PATH": ""})
    assert found is not None and found.executable == sys.executable and found.version == HERE.removeprefix("python")


def test_another_runtime_is_compiled_by_its_interpreter_on_path_only_when_it_says_that_version(tmp_path):
    version = OTHER.removeprefix("python")
    liar = _fake_python(tmp_path / "liar", OTHER, "3.9")  # a shim that runs another version
    assert bytecode.find_interpreter(OTHER, {"PATH": str(liar.parent)}) is None
    honest = _fake_python(tmp_path / "honest", OTHER, version)
    found = bytecode.find_interpreter(OTHER, {"PATH": f"{liar.parent}{os.pathsep}{honest.parent}"})
    assert found is None  # the first one on PATH is what a shell would run, and it is not the version
    found = bytecode.find_interpreter(OTHER, {"PATH": str(honest.parent)})
    assert found is not None and found.executable == str(honest) and found.found_by == f"{OTHER} on PATH"


def test_none_found_means_source_only_and_synthesis_says_how_to_get_bytecode():
    assert bytecode.find_interpreter(OTHER, {"PATH": ""}) is None
    note = bytecode.source_only_note(OTHER)
    assert OTHER in note and bytecode.INTERPRETER_ENV in note


def test_the_variable_turns_it_off_or_names_the_interpreter_and_a_wrong_one_is_refused(tmp_path):
    assert bytecode.find_interpreter(HERE, {bytecode.INTERPRETER_ENV: "none", "PATH": ""}) is None
    named = bytecode.find_interpreter(HERE, {bytecode.INTERPRETER_ENV: sys.executable, "PATH": ""})
    assert named is not None and named.found_by == bytecode.INTERPRETER_ENV
    wrong = rf"is Python {HERE.removeprefix('python')}, but the functions run {OTHER}"
    with pytest.raises(bytecode.BytecodeError, match=wrong):
        bytecode.find_interpreter(OTHER, {bytecode.INTERPRETER_ENV: sys.executable, "PATH": ""})
    with pytest.raises(bytecode.BytecodeError, match="does not run"):
        bytecode.find_interpreter(HERE, {bytecode.INTERPRETER_ENV: str(tmp_path / "missing"), "PATH": ""})


def _staged(tmp_path, name):
    folder = tmp_path / "src" / "jobs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text("from . import invoices  # noqa: F401\n")
    (folder / "invoices.py").write_text("def answer():\n    return 42\n")
    return JobsSource(folder).stage(tmp_path / name)


def test_every_module_is_compiled_hash_checked_and_the_same_source_gives_the_same_bytes(tmp_path):
    interpreter = bytecode.find_interpreter(HERE, {"PATH": ""})
    assert interpreter is not None
    first, second = _staged(tmp_path, "one"), _staged(tmp_path, "two")
    sources = sorted(p.relative_to(first) for p in first.rglob("*.py"))
    assert bytecode.compile_tree(first, interpreter) == bytecode.Compiled(len(sources), "")
    bytecode.compile_tree(second, interpreter)
    for source in sources:
        compiled = source.parent / "__pycache__" / f"{source.stem}.{TAG}.pyc"
        data = (first / compiled).read_bytes()
        # PEP 552's flags word: bit 0 hash-based, bit 1 check the source (an edited file is recompiled).
        assert int.from_bytes(data[4:8], "little") == 0b11, compiled
        # Compiled under Lambda's path, not the staging folder's, so the asset hash is stable.
        assert data == (second / compiled).read_bytes(), compiled


_LOADS = textwrap.dedent(
    """
    import importlib._bootstrap_external as external, sys
    compiled = []
    original = external.SourceLoader.source_to_code
    def counting(self, data, path, **kw):
        compiled.append(path)
        return original(self, data, path, **kw)
    external.SourceLoader.source_to_code = counting
    import jobs.invoices
    assert jobs.invoices.answer() == 42
    print(sum(1 for p in compiled if "/jobs/" in p))
    """
)


def test_python_loads_the_bytecode_instead_of_compiling_and_recompiles_an_edited_module(tmp_path):
    staged = _staged(tmp_path, "asset")
    interpreter = bytecode.find_interpreter(HERE, {"PATH": ""})
    assert interpreter is not None
    bytecode.compile_tree(staged, interpreter)

    def compiled_at_import() -> int:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(staged)}  # read-only, as Lambda's
        result = subprocess.run([sys.executable, "-c", _LOADS], cwd=staged, env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return int(result.stdout)

    assert compiled_at_import() == 0
    # Edited in place (as in Lambda's console editor): the stale bytecode is not used.
    (staged / "jobs" / "invoices.py").write_text("def answer():\n    return 42  # edited\n")
    assert compiled_at_import() == 1


def test_a_module_that_does_not_compile_stays_source_and_is_named(tmp_path):
    staged = _staged(tmp_path, "asset")
    (staged / "jobs" / "broken.py").write_text("def (:\n")
    interpreter = bytecode.find_interpreter(HERE, {"PATH": ""})
    assert interpreter is not None
    compiled = bytecode.compile_tree(staged, interpreter)
    assert 'File "/var/task/jobs/broken.py", line 1' in compiled.failures and "SyntaxError" in compiled.failures
    assert (staged / "jobs" / "__pycache__" / f"invoices.{TAG}.pyc").is_file()  # the rest is compiled
    assert not (staged / "jobs" / "__pycache__" / f"broken.{TAG}.pyc").exists()


def test_an_interpreter_that_fails_is_an_error_naming_it(tmp_path):
    staged = _staged(tmp_path, "asset")
    broken = _fake_python(tmp_path / "bin", "python3", "3.13; exit 3")
    with pytest.raises(bytecode.BytecodeError, match=rf"compiling the functions' code with {broken} \(test\) failed"):
        bytecode.compile_tree(staged, bytecode.Interpreter(str(broken), "3.13", "test"))
