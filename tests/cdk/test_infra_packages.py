"""A job folder's ``requirements.txt`` in the template: one layer of its packages for every function,
built for the functions' architecture at synthesis, from the cache when unchanged, refused when it cannot work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from infra.app import load_cdk_context
from tests.support.packages import EM_AARCH64, REQUIREMENTS, elf_machine, package_cache, shared_objects
from tiered_jobs.cdk import JobsCode, SettingsError, TieredJobs, add_nag_checks, dependencies
from tiered_jobs.contract.names import CONTEXT_KEY, DEFAULT_TIERS

pytestmark = pytest.mark.synth


@pytest.fixture(autouse=True)
def shared_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv(dependencies.CACHE_ENV, str(package_cache(tmp_path_factory)))


def _jobs(tmp_path: Path, requirements: str | None = REQUIREMENTS) -> JobsCode:
    folder = tmp_path / "src" / "jobs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text("from . import invoices  # noqa: F401\n")
    (folder / "invoices.py").write_text("import humanize, msgpack  # noqa: F401\n")
    if requirements is not None:
        (folder / "requirements.txt").write_text(requirements)
    return JobsCode(folder)


def _synth(tmp_path: Path, jobs: JobsCode, name: str = "out", **settings: Any) -> tuple[dict[str, Any], Path]:
    flags = {k: v for k, v in load_cdk_context().items() if k != CONTEXT_KEY}
    outdir = tmp_path / name
    app = cdk.App(outdir=str(outdir), context=flags)
    stack = cdk.Stack(app, "Billing")
    TieredJobs(stack, "Jobs", jobs=jobs, routes={"*": "bulk"}, **settings)
    add_nag_checks(app)
    assembly = app.synth()  # cdk-nag runs here: an unacknowledged finding raises
    template = json.loads(Path(assembly.get_stack_artifact(stack.artifact_id).template_full_path).read_text())
    return template, outdir


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {lid: r["Properties"] for lid, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function"}


def test_every_function_gets_one_layer_of_the_packages_built_for_arm64(tmp_path):
    template, outdir = _synth(tmp_path, _jobs(tmp_path))
    layers = {lid: r for lid, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::LayerVersion"}
    assert len(layers) == 1
    ((layer_id, layer),) = layers.items()
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    functions = _functions(template)
    assert len(functions) == len(DEFAULT_TIERS) + 1  # every consumer and the replay function
    for properties in functions.values():
        assert len(properties["Layers"]) == 2 and {"Ref": layer_id} in properties["Layers"]
    # The layer's asset: the packages under python/, the extension module built for aarch64.
    asset = _asset(outdir, layer["Properties"]["Content"]["S3Key"])
    assert (asset / "python" / "humanize" / "__init__.py").is_file()
    assert {elf_machine(path) for path in shared_objects(asset / "python")} == {EM_AARCH64}
    # The code asset stays the job folder and the runtime: no package in it.
    code = _asset(outdir, next(iter(functions.values()))["Code"]["S3Key"])
    assert (code / "jobs" / "invoices.py").is_file() and not (code / "msgpack").exists()
    # cfn-lint finds nothing new (W3005: CDK's redundant DependsOn, accepted for the whole stack).
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--format", "json", str(outdir / "Billing.template.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode & ~(4 | 8) == 0, result.stderr
    assert [f["Rule"]["Id"] for f in json.loads(result.stdout) if f["Rule"]["Id"] != "W3005"] == []


def _asset(outdir: Path, object_key: str) -> Path:
    """The staged folder uploaded as ``object_key`` (the cloud assembly's asset manifest)."""
    manifest = json.loads((outdir / "Billing.assets.json").read_text())
    for asset in manifest["files"].values():
        if any(d["objectKey"] == object_key for d in asset["destinations"].values()):
            return outdir / asset["source"]["path"]
    raise KeyError(object_key)


def test_an_unchanged_synthesis_runs_no_pip(tmp_path, monkeypatch):
    jobs = _jobs(tmp_path)
    first, _ = _synth(tmp_path, jobs, "first")

    run = dependencies.subprocess.run

    def no_pip(command, *args, **kwargs):
        # Other processes of a synthesis (the bytecode compiler's version probe) still run.
        assert "pip" not in command, f"pip ran for an unchanged synthesis: {command}"
        return run(command, *args, **kwargs)

    monkeypatch.setattr(dependencies.subprocess, "run", no_pip)
    again, _ = _synth(tmp_path, jobs, "again")
    assert _layer_keys(first) == _layer_keys(again)


def _layer_keys(template: dict[str, Any]) -> list[str]:
    return [
        r["Properties"]["Content"]["S3Key"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::LayerVersion"
    ]


def test_a_job_folder_without_requirements_gets_no_layer(tmp_path):
    template, _ = _synth(tmp_path, _jobs(tmp_path, requirements=None))
    assert not _layer_keys(template)
    assert all(len(p["Layers"]) == 1 for p in _functions(template).values())  # Powertools only


def test_a_pin_of_boto3_fails_synthesis_naming_it(tmp_path):
    with pytest.raises(
        SettingsError, match=r"requirements.txt line 2: 'boto3==1.35.0': boto3 is provided by the Lambda"
    ):
        _synth(tmp_path, _jobs(tmp_path, "humanize==4.13.0\nboto3==1.35.0\n"))


def test_functions_over_lambdas_unzipped_limit_fail_synthesis(tmp_path, monkeypatch):
    monkeypatch.setattr(dependencies, "POWERTOOLS_LAYER_BYTES", dependencies.LAMBDA_UNZIPPED_LIMIT_BYTES)
    with pytest.raises(SettingsError) as refused:
        _synth(tmp_path, _jobs(tmp_path))
    message = str(refused.value)
    assert "over Lambda's 250.0 MB limit for a function and its layers" in message
    assert "requirements.txt packages 1.9 MB" in message and "job folder and runtime" in message
