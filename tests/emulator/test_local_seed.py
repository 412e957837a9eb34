"""The seed file of local mode: found, run with the stage's environment after the deploy, a failure reported."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from emulator import cli
from emulator.seed import DEFAULT_SEED_FILE, run_seed, seed_file
from emulator.server import Endpoint
from tiered_jobs.contract.names import Env

#: A seed that records what it was given: its environment and working directory.
RECORDING_SEED = """\
import json, os
names = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_REGION", "TIERED_JOBS_STAGE", "AWS_SESSION_TOKEN")
seen = {name: os.environ.get(name) for name in names}
print(json.dumps({"env": seen, "cwd": os.getcwd()}))
"""


def _session(tmp_path: Path, port: int = 4566) -> SimpleNamespace:
    return SimpleNamespace(
        deployment=SimpleNamespace(stage="local"),
        endpoint=Endpoint(f"http://127.0.0.1:{port}"),
        code_source=SimpleNamespace(directory=tmp_path / "jobs"),
    )


def _printed(run) -> str:
    out = Console(file=io.StringIO(), width=200, no_color=True)
    run(out)
    return out.file.getvalue()  # type: ignore[attr-defined]


def test_the_apps_local_seed_is_found_and_a_given_one_must_exist(tmp_path):
    assert seed_file(tmp_path, None) is None
    (tmp_path / DEFAULT_SEED_FILE).write_text("")
    assert seed_file(tmp_path, None) == (tmp_path / DEFAULT_SEED_FILE).resolve()
    other = tmp_path / "data" / "seed.py"
    other.parent.mkdir()
    other.write_text("")
    assert seed_file(tmp_path, other) == other.resolve()
    with pytest.raises(FileNotFoundError, match=r"--seed .*nope\.py: no such file"):
        seed_file(tmp_path, tmp_path / "nope.py")


def test_the_seed_runs_in_the_apps_folder_with_the_stages_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SESSION_TOKEN", "a real session's token")  # must not reach the embedded AWS
    (tmp_path / DEFAULT_SEED_FILE).write_text(RECORDING_SEED)

    printed = _printed(lambda out: cli._seed(tmp_path / DEFAULT_SEED_FILE, _session(tmp_path), tmp_path, out))

    [line] = [line for line in printed.splitlines() if line.startswith("seed | ")]
    seen = json.loads(line.removeprefix("seed | "))
    assert seen["env"] == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:4566",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_REGION": "us-east-1",
        Env.STAGE: "local",
        "AWS_SESSION_TOKEN": None,
    }
    assert Path(seen["cwd"]) == tmp_path.resolve()
    assert "seed: " in printed and " done in " in printed and "failed" not in printed


def test_a_failing_seed_is_reported_with_its_output_and_is_not_fatal(tmp_path):
    seed = tmp_path / DEFAULT_SEED_FILE
    seed.write_text("print('loading accounts')\nraise SystemExit('table accounts not found')\n")

    printed = _printed(lambda out: cli._seed(seed, _session(tmp_path), tmp_path, out))

    assert "seed | loading accounts" in printed and "seed | table accounts not found" in printed
    assert "seed failed: " in printed and "exited with 1" in printed and "fix the seed and restart" in printed


#: How long the slow seed would run if nobody stopped it.
SLOW_SEED_SECONDS = 300


def test_a_seed_that_runs_too_long_is_stopped(tmp_path):
    seed = tmp_path / "slow.py"
    seed.write_text(f"import time\nprint('started', flush=True)\ntime.sleep({SLOW_SEED_SECONDS})\n")

    run = run_seed(seed, {}, tmp_path, timeout=1)

    # Stopped, so well before the seed's own end: not a bound on how fast a loaded machine stops it.
    assert not run.ok and "(stopped after 1 s)" in run.output and run.seconds < SLOW_SEED_SECONDS
