"""Proven outside the repository: Tiered Jobs installed from its wheel, in a new CDK app of its own.

The wheel is built and installed by pip, with its ``cdk`` extra, into a fresh virtualenv outside the
checkout (``tests/support/wheel.py``); a new app in a temporary folder outside the checkout
(``tests/support/outside_app.py``: a ``Billing`` stack with ``TieredJobs`` and its own
``invoices.create`` job and table, and a ``Web`` stack) runs on that virtualenv's Python. Then:

- the pinned CDK CLI synthesizes it, cdk-nag clean (the app calls ``add_nag_checks``: a finding
  fails synthesis, as the control app shows), and its functions' code is the app's job folder
  plus the runtime of the virtualenv's ``tiered_jobs`` -- nothing of this repository; a payload
  schema the consumer cannot check fails that synthesis in one line;
- the emulator, this repository's development tool, runs it from the app's folder with
  ``up --app "<the virtualenv's python> app.py"``; the virtualenv's ``tiered-jobs`` publishes, and
  the job writes, runs once per key and dead-letters with reasons on the embedded AWS (a payload
  only the job folder's schema refuses too).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest

from emulator.cdk_app import CdkApp, CdkAppError, stacks
from emulator.deploy import Assembly
from tests.emulator.local_support import RunningUp
from tests.support.outside_app import APP_PY, STACK, check_invoices, write_app
from tests.support.wheel import build_wheel, fresh_venv, run_outside, site_packages
from tiered_jobs.contract.names import TEMPLATE_METADATA_KEY, Env

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CDK = ROOT / "node_modules" / ".bin" / "cdk"
#: Appended to the virtualenv's installed runtime: the asset shows which copy it was staged from.
MARKER = "# installed in the fresh virtualenv\n"
#: The app's payload schema, replaced in a copy of the app by one with a keyword the validator lacks.
BAD_SCHEMA_FILE = "src/jobs/schemas/invoices.create.schema.json"
#: The app with one more resource that cdk-nag's AwsSolutions rules refuse (a queue without TLS or a DLQ).
APP_WITH_FINDING = APP_PY.replace(
    "app.synth()", "from aws_cdk import aws_sqs as sqs\nsqs.Queue(stack, 'Open')\napp.synth()"
)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    wheel = build_wheel(tmp_path_factory.mktemp("wheel"))
    venv = fresh_venv(wheel, tmp_path_factory.mktemp("venv"), extras=("cdk",))
    with (site_packages(venv) / "tiered_jobs" / "runtime" / "__init__.py").open("a", encoding="utf-8") as runtime:
        runtime.write(MARKER)
    return venv


@pytest.fixture(scope="module")
def app_dir(venv, tmp_path_factory) -> Path:
    folder = write_app(tmp_path_factory.mktemp("billing"), venv / "bin" / "python")
    assert not folder.resolve().is_relative_to(ROOT) and not venv.resolve().is_relative_to(ROOT)
    return folder


#: jsii's package cache of this user (its default place): a developer's is warm, and extracting
#: aws-cdk-lib afresh costs each synthesizing process ~6 s.
JSII_CACHE = Path.home() / ".cache" / "aws" / "jsii" / "package-cache"


def outside_env(venv: Path) -> dict[str, str]:
    """A terminal of the app's team: its virtualenv and Node.js on PATH, nothing of the repository, no AWS
    credentials, and nothing the CLI would send over the network (telemetry, notices, version check)."""
    node = Path(shutil.which("node") or "node").parent
    return {
        "PATH": f"{venv / 'bin'}:{node}:/usr/bin:/bin",
        "HOME": str(venv.parent),
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "CDK_DISABLE_VERSION_CHECK": "1",
        "JSII_RUNTIME_PACKAGE_CACHE_ROOT": str(JSII_CACHE),
    }


def cdk_synth(folder: Path, venv: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``cdk synth`` with the pinned CLI in ``folder``, as the app's team runs it."""
    return subprocess.run(
        [str(CDK), "synth", "--quiet", "--no-notices", "-o", str(out)],
        cwd=folder,
        env=outside_env(venv),
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.fixture(scope="module")
def syntheses(app_dir, venv, tmp_path_factory) -> tuple[Path, CdkAppError | None, subprocess.CompletedProcess[str]]:
    """``cdk synth`` with the pinned CLI in the app's folder, as its team runs it; meanwhile (in threads:
    each is a child process) the control app with one cdk-nag finding, and a copy of the app whose job
    folder has a payload schema the consumer cannot check: both must fail."""
    assert CDK.exists(), "the pinned CDK CLI is missing: run `make setup` (npm ci)"
    out = tmp_path_factory.mktemp("cdk.out")
    (app_dir / "app_with_finding.py").write_text(APP_WITH_FINDING, encoding="utf-8")
    control = CdkApp.load(app_dir, f"{venv / 'bin' / 'python'} app_with_finding.py")
    bad_schema = shutil.copytree(app_dir, tmp_path_factory.mktemp("bad_schema") / "billing")
    (bad_schema / BAD_SCHEMA_FILE).write_text(json.dumps({"type": "object", "oneOf": [{}]}), encoding="utf-8")

    def refused() -> CdkAppError | None:
        try:
            control.synth(tmp_path_factory.mktemp("control"), environ=outside_env(venv))
        except CdkAppError as error:
            return error
        return None

    with ThreadPoolExecutor(2) as pool:
        control_error = pool.submit(refused)
        schema_error = pool.submit(cdk_synth, bad_schema, venv, tmp_path_factory.mktemp("bad_schema.out"))
        result = cdk_synth(app_dir, venv, out)
        assert result.returncode == 0, result.stderr[-3000:]
        return out, control_error.result(), schema_error.result()


@pytest.fixture(scope="module")
def cli_assembly(syntheses) -> Path:
    return syntheses[0]


def test_tiered_jobs_resolves_inside_the_fresh_virtualenv(venv, app_dir):
    where = run_outside(venv, "python", "-c", "import tiered_jobs; print(tiered_jobs.__file__)", cwd=app_dir)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(site_packages(venv))
    for module in ("infra", "functions", "demo", "emulator"):
        absent = run_outside(venv, "python", "-c", f"import {module}", cwd=app_dir)
        assert "ModuleNotFoundError" in absent.stderr, module


def test_the_pinned_cli_synthesizes_it_with_its_own_stack_names_and_metadata(cli_assembly):
    found = {s.display_name: s for s in stacks(cli_assembly)}
    assert set(found) == {STACK, "Web"}
    assert found[STACK].template["Metadata"][TEMPLATE_METADATA_KEY] == {
        "stage": "prod",
        "jobs": {"path": "src/jobs", "module": "jobs"},
    }
    assert TEMPLATE_METADATA_KEY not in found["Web"].template.get("Metadata", {})


def test_cdk_nag_is_on_in_the_app_so_its_clean_synthesis_means_clean(syntheses):
    _, refused, _ = syntheses
    assert refused is not None, "the control app with an unacknowledged finding synthesized"
    assert "Acknowledge with 'AwsSolutions::AwsSolutions-SQS4'" in str(refused)


def test_a_payload_schema_the_consumer_cannot_check_fails_the_cli_s_synthesis_in_one_line(syntheses):
    """The app's own ``app.py`` catches nothing: importing ``tiered_jobs.cdk`` makes the mistake one line."""
    *_, result = syntheses
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and 'File "' not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("tiered_jobs settings: ")]
    assert f"payload schema {BAD_SCHEMA_FILE.removeprefix('src/jobs/')}: unsupported keyword(s) oneOf; " in line
    assert line.endswith("say the rule with those, or check it in the job's own validate= hook")


def test_the_functions_code_is_the_app_s_jobs_and_the_virtualenv_s_runtime(cli_assembly, app_dir, venv):
    asset = Assembly.read(cli_assembly, app_dir).code_asset("jobs")
    files = {p.relative_to(asset).as_posix() for p in asset.rglob("*") if p.is_file()}
    assert {
        "jobs/__init__.py",
        "jobs/invoices.py",
        "tiered_jobs/handlers/consumer.py",
        "tiered_jobs/runtime/consumer.py",
        "tiered_jobs/replay/service.py",
    } <= files
    assert not [
        f
        for f in files
        if f.startswith(
            (
                "infra/",
                "functions/",
                "demo/",
                "emulator/",
                "tiered_jobs/cdk/",
                "tiered_jobs/cli/",
                "tiered_jobs/publisher/",
            )
        )
    ]
    assert (asset / "tiered_jobs" / "runtime" / "__init__.py").read_text(encoding="utf-8").endswith(MARKER)
    installed = site_packages(venv)
    assert all((asset / f).read_bytes() == (installed / f).read_bytes() for f in files if f.startswith("tiered_jobs/"))


def test_the_emulator_runs_its_job_from_the_app_s_folder(app_dir, venv):
    """``python <checkout>/emulator up --app "<venv python> app.py"`` in the app's folder: the emulator
    runs on this repository's environment, the app's synthesis on the virtualenv's."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [
        sys.executable,
        str(ROOT / "emulator"),
        "up",
        "--app",
        f"{venv / 'bin' / 'python'} app.py",
        "--no-view",
        "--no-console",
        "--no-reload",
    ]
    with RunningUp(command, cwd=app_dir, env=env) as up:
        output = "".join(up.output)
        assert f"ready: {STACK} at {up.exports['AWS_ENDPOINT_URL']}" in output
        assert f"--stage local --stack-name {STACK} status" in output

        endpoint = {
            "endpoint_url": up.exports["AWS_ENDPOINT_URL"],
            "region_name": up.exports["AWS_REGION"],
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }

        def clients(service: str) -> Any:
            return boto3.client(service, **endpoint)

        def publish(job_type: str, key: str, payload: dict[str, Any]) -> None:
            published = run_outside(
                venv, "tiered-jobs", "publish", job_type, "--key", key, "--payload", json.dumps(payload), env=up.exports
            )
            assert published.returncode == 0, published.stderr + published.stdout

        def run_publish_py() -> None:  # the page's service code, as written, from the virtualenv
            sent = run_outside(venv, "python", "publish.py", env=up.exports, cwd=app_dir)
            assert sent.returncode == 0, sent.stderr + sent.stdout

        check_invoices(clients, publish, run_publish_py=run_publish_py)
        # A service with a copy of the job folder's schemas refuses a payload of the wrong shape before sending.
        refused = run_outside(
            venv,
            "tiered-jobs",
            "publish",
            "invoices.create",
            "--key",
            "inv-9",
            "--payload",
            json.dumps({"amount_cents": "12"}),
            env={**up.exports, Env.SCHEMA_DIRS: str(app_dir / "src" / "jobs" / "schemas")},
        )
        assert refused.returncode != 0
        assert "payload field 'amount_cents' must be an integer" in refused.stdout + refused.stderr
    assert up.returncode == 0, "".join(up.output)
