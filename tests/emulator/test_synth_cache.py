"""The run's synthesis cache (``emulator/synth_cache.py``): an identical synthesis is copied, any
change to what decides it runs the app again, and without the variable nothing is kept.

The app here counts its runs in a file outside its folder and writes a one-stack assembly, so each
rule is checked in well under a second.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import pytest

from emulator import synth_cache
from emulator.cdk_app import CdkApp, CdkAppError

COUNTING_APP = """
import json, os, sys
with open(os.environ["RUNS_FILE"], "a") as f:
    f.write(os.getcwd() + "\\n")
if os.path.exists("fail"):
    sys.exit("the app failed")
out = os.environ["CDK_OUTDIR"]
json.dump({"version": "55.0.0", "artifacts": {}}, open(os.path.join(out, "manifest.json"), "w"))
json.dump(json.loads(os.environ["CDK_CONTEXT_JSON"]), open(os.path.join(out, "context.json"), "w"))
"""


@pytest.fixture
def runs(tmp_path, monkeypatch) -> Path:
    """The file the app appends its working directory to, once per run."""
    path = tmp_path / "runs.txt"
    path.write_text("")
    monkeypatch.setenv("RUNS_FILE", str(path))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.cdk.json of the developer's in the context
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(synth_cache.CACHE_ENV, str(folder))
    return folder


def make_app(folder: Path) -> CdkApp:
    folder.mkdir(parents=True)
    (folder / "app.py").write_text(COUNTING_APP)
    (folder / "cdk.json").write_text(json.dumps({"app": f"{sys.executable} app.py", "context": {"flag": 1}}))
    (folder / "jobs").mkdir()
    (folder / "jobs" / "billing.py").write_text("X = 1\n")
    return CdkApp.load(folder)


def count(runs: Path) -> int:
    return len(runs.read_text().splitlines())


def test_an_identical_synthesis_is_copied_not_run_again(tmp_path, runs, cache):
    app = make_app(tmp_path / "app")
    first = synth_cache.synth(app, tmp_path / "out1", context={"local": {"stage": "local"}})
    second = synth_cache.synth(app, tmp_path / "out2", context={"local": {"stage": "local"}})
    assert count(runs) == 1
    assert (second / "manifest.json").read_text() == (first / "manifest.json").read_text()
    assert json.loads((second / "context.json").read_text())["local"] == {"stage": "local"}


def test_a_copy_of_the_app_elsewhere_hits_the_same_entry(tmp_path, runs, cache):
    app = make_app(tmp_path / "app")
    synth_cache.synth(app, tmp_path / "out1")
    shutil.copytree(app.directory, tmp_path / "copy")
    synth_cache.synth(CdkApp.load(tmp_path / "copy"), tmp_path / "out2")
    assert count(runs) == 1


@pytest.mark.parametrize(
    "change",
    ["a job file", "a new file", "cdk.json's context", "the context added", "the account", "a TIERED_JOBS_ variable"],
)
def test_any_change_to_what_decides_the_synthesis_runs_the_app_again(tmp_path, runs, cache, monkeypatch, change):
    app = make_app(tmp_path / "app")
    synth_cache.synth(app, tmp_path / "out1", context={"local": 1}, account="111111111111")
    context, account = {"local": 1}, "111111111111"
    if change == "a job file":
        (app.directory / "jobs" / "billing.py").write_text("X = 2\n")
    elif change == "a new file":
        (app.directory / "jobs" / "refunds.py").write_text("")
    elif change == "cdk.json's context":
        (app.directory / "cdk.json").write_text(json.dumps({"app": app.command, "context": {"flag": 2}}))
    elif change == "the context added":
        context = {"local": 2}
    elif change == "the account":
        account = "222222222222"
    else:
        monkeypatch.setenv("TIERED_JOBS_STAGE", "other")
    synth_cache.synth(app, tmp_path / "out2", context=context, account=account)
    assert count(runs) == 2


def test_caches_and_where_things_are_served_do_not_change_the_key(tmp_path, runs, cache, monkeypatch):
    app = make_app(tmp_path / "app")
    synth_cache.synth(app, tmp_path / "out1")
    (app.directory / "__pycache__").mkdir()
    (app.directory / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    (app.directory / "cdk.out").mkdir()
    (app.directory / "cdk.out" / "manifest.json").write_text("{}")
    monkeypatch.setenv("TIERED_JOBS_CONSOLE_PORT", "40123")
    synth_cache.synth(app, tmp_path / "out2")
    assert count(runs) == 1


def test_without_the_variable_every_synthesis_runs(tmp_path, runs, monkeypatch):
    monkeypatch.delenv(synth_cache.CACHE_ENV, raising=False)
    app = make_app(tmp_path / "app")
    synth_cache.synth(app, tmp_path / "out1")
    synth_cache.synth(app, tmp_path / "out2")
    assert count(runs) == 2


def test_a_failed_synthesis_stores_nothing(tmp_path, runs, cache):
    app = make_app(tmp_path / "app")
    (app.directory / "fail").write_text("")
    with pytest.raises(CdkAppError, match="the app failed"):
        synth_cache.synth(app, tmp_path / "out1")
    with pytest.raises(CdkAppError, match="the app failed"):
        synth_cache.synth(app, tmp_path / "out2")
    assert count(runs) == 2
    assert [path.suffix for path in cache.iterdir() if path.is_dir()] == []


def test_parallel_askers_of_one_key_run_the_app_once(tmp_path, runs, cache):
    app = make_app(tmp_path / "app")
    errors: list[BaseException] = []

    def ask(n: int) -> None:
        try:
            synth_cache.synth(app, tmp_path / f"out{n}")
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert count(runs) == 1
    assert all((tmp_path / f"out{n}" / "manifest.json").is_file() for n in range(4))
