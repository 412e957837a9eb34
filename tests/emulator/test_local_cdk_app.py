"""Any app, run as the CDK CLI runs it, and the stack that uses TieredJobs picked from its assembly.

The apps here are small Python scripts that write a prepared cloud assembly where ``CDK_OUTDIR``
says and record what they were given (working directory, variables, context), so each rule is
checked in well under a second; the real apps run in ``test_local_any_app.py`` and
``tests/library/test_outside_app.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from emulator import synth_cache
from emulator.cdk_app import CdkApp, CdkAppError, stacks
from emulator.deploy import REPO_ROOT, Assembly, LocalAppError, app_environment, local_overrides, synthesize
from emulator.server import ACCOUNT_ID, DEFAULT_REGION
from tiered_jobs.cdk.packaging import PACKAGE_DIR, JobsSource
from tiered_jobs.contract.names import LOCAL_OVERRIDES_CONTEXT_KEY, TEMPLATE_METADATA_KEY

#: The app: copies ``assembly/`` into CDK_OUTDIR and records what the CLI would have given it.
RECORDING_APP = """
import json, os, shutil, sys
out = os.environ["CDK_OUTDIR"]
shutil.copytree("assembly", out, dirs_exist_ok=True)
seen = {"cwd": os.getcwd(), "context": json.loads(os.environ["CDK_CONTEXT_JSON"]),
        "account": os.environ.get("CDK_DEFAULT_ACCOUNT"), "region": os.environ.get("CDK_DEFAULT_REGION"),
        "pythonpath": os.environ.get("PYTHONPATH")}
with open(os.path.join(out, "seen.json"), "w") as f:
    json.dump(seen, f)
"""


def tiered_template(stage: str = "local") -> dict:
    return {
        "Metadata": {TEMPLATE_METADATA_KEY: {"stage": stage, "jobs": {"path": "src/jobs", "module": "jobs"}}},
        "Resources": {},
    }


def write_assembly(
    directory: Path,
    templates: dict[str, dict],
    *,
    environment: str = "aws://unknown-account/unknown-region",
    nested: dict[str, dict[str, dict]] | None = None,
    **manifest: object,
) -> None:
    """A cloud assembly as aws-cdk-lib writes it: per stack a template, an asset manifest and the artifacts."""
    directory.mkdir(parents=True, exist_ok=True)
    artifacts: dict[str, dict] = {}
    for name, template in templates.items():
        (directory / f"{name}.template.json").write_text(json.dumps(template))
        (directory / f"{name}.assets.json").write_text(json.dumps({"version": "55.0.0", "files": {}}))
        artifacts[f"{name}.assets"] = {"type": "cdk:asset-manifest", "properties": {"file": f"{name}.assets.json"}}
        artifacts[name] = {
            "type": "aws:cloudformation:stack",
            "environment": environment,
            "properties": {"templateFile": f"{name}.template.json", "stackName": f"{name}-stack"},
            "dependencies": [f"{name}.assets"],
            "displayName": name,
        }
    for stage, stage_templates in (nested or {}).items():
        write_assembly(directory / f"assembly-{stage}", stage_templates)
        artifacts[f"assembly-{stage}"] = {
            "type": "cdk:cloud-assembly",
            "properties": {"directoryName": f"assembly-{stage}", "displayName": stage},
        }
    (directory / "manifest.json").write_text(json.dumps({"version": "55.0.0", "artifacts": artifacts, **manifest}))


@pytest.fixture
def app_dir(tmp_path, monkeypatch) -> Path:
    """An app folder with the recording app, its ``cdk.json``, ``cdk.context.json`` and a ``~/.cdk.json``."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    # These tests watch the app run: a copy from the run's synthesis cache would show another test's run.
    monkeypatch.delenv(synth_cache.CACHE_ENV, raising=False)
    (home / ".cdk.json").write_text(json.dumps({"context": {"user": "home", "lookup": "home", "flag": "home"}}))
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "app.py").write_text(RECORDING_APP)
    (folder / "cdk.json").write_text(
        json.dumps({"app": f"{sys.executable} app.py", "context": {"flag": "cdk.json", "shared": "cdk.json"}})
    )
    (folder / "cdk.context.json").write_text(
        json.dumps({"shared": "cdk.context.json", "lookup": "cdk.context.json", "flag": "cdk.context.json"})
    )
    write_assembly(folder / "assembly", {"Billing": tiered_template()})
    return folder


def seen(outdir: Path) -> dict:
    return json.loads((outdir / "seen.json").read_text())


def test_the_app_runs_in_its_folder_with_the_context_and_variables_the_cli_gives(app_dir, tmp_path):
    out = CdkApp.load(app_dir).synth(
        tmp_path / "out", context={"shared": "-c"}, account=ACCOUNT_ID, region=DEFAULT_REGION
    )
    got = seen(out)
    assert got["cwd"] == str(app_dir)
    # the CLI's order: -c > cdk.json's context (the feature flags) > cdk.context.json > ~/.cdk.json
    assert got["context"] == {"shared": "-c", "flag": "cdk.json", "lookup": "cdk.context.json", "user": "home"}
    assert (got["account"], got["region"]) == (ACCOUNT_ID, DEFAULT_REGION)


def test_the_command_defaults_to_cdk_json_s_app_and_a_missing_one_says_how_to_pass_it(app_dir, tmp_path):
    assert CdkApp.load(app_dir).command == f"{sys.executable} app.py"
    assert CdkApp.load(app_dir, "python other.py").command == "python other.py"
    with pytest.raises(CdkAppError, match=r'no app command: .*cdk.json has no "app".*--app "python app.py"'):
        CdkApp.load(tmp_path)
    with pytest.raises(CdkAppError, match="does not exist"):
        CdkApp.load(tmp_path / "nowhere")


def test_a_failing_app_shows_its_own_error(app_dir, tmp_path):
    (app_dir / "app.py").write_text("import sys\nsys.exit('tiered_jobs settings: tiers.bulk: unknown key')\n")
    with pytest.raises(CdkAppError, match=r"exited with 1:\ntiered_jobs settings: tiers.bulk: unknown key"):
        CdkApp.load(app_dir).synth(tmp_path / "out")


def test_an_app_that_writes_no_assembly_is_told_where_it_should(app_dir, tmp_path):
    (app_dir / "app.py").write_text("print('hello')\n")
    with pytest.raises(CdkAppError, match="wrote no cloud assembly to CDK_OUTDIR"):
        CdkApp.load(app_dir).synth(tmp_path / "out")


def test_error_annotations_and_missing_lookups_fail_as_cdk_synth_fails(app_dir, tmp_path):
    write_assembly(
        app_dir / "assembly",
        {"Billing": tiered_template()},
        missing=[{"key": "vpc-provider:account=1:filter.isDefault=true", "provider": "vpc-provider"}],
    )
    with pytest.raises(CdkAppError, match=r"context lookups .*vpc-provider:account=1.*cdk.context.json"):
        CdkApp.load(app_dir).synth(tmp_path / "out")
    shutil.rmtree(app_dir / "assembly")
    write_assembly(app_dir / "assembly", {"Billing": tiered_template()})
    manifest = json.loads((app_dir / "assembly" / "manifest.json").read_text())
    (app_dir / "assembly" / "Billing.metadata.json").write_text(
        json.dumps({"/Billing/Jobs/Queue": [{"type": "aws:cdk:error", "data": "queue names must be unique"}]})
    )
    manifest["artifacts"]["Billing"]["additionalMetadataFile"] = "Billing.metadata.json"
    (app_dir / "assembly" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CdkAppError, match=r"reported errors:\n/Billing/Jobs/Queue: queue names must be unique"):
        CdkApp.load(app_dir).synth(tmp_path / "out2")


def test_the_stack_with_tiered_jobs_is_found_by_its_metadata_in_nested_assemblies_too(tmp_path):
    write_assembly(tmp_path, {"Web": {"Resources": {}}}, nested={"Prod": {"Billing": tiered_template()}})
    assert [s.display_name for s in stacks(tmp_path)] == ["Web", "Billing"]
    assembly = Assembly.read(tmp_path, tmp_path / "app")
    assert (assembly.stack_name, assembly.stage) == ("Billing-stack", "local")
    assert assembly.directory == tmp_path / "assembly-Prod"  # its asset paths are relative to its own manifest


def test_no_stack_with_tiered_jobs_is_a_clear_error(tmp_path):
    write_assembly(tmp_path, {"Web": {"Resources": {}}, "Data": {"Resources": {}}})
    with pytest.raises(LocalAppError, match=r"no stack in this app uses TieredJobs \(its stacks: Web, Data\)"):
        Assembly.read(tmp_path, tmp_path)


def test_several_stacks_with_tiered_jobs_need_stack(tmp_path):
    write_assembly(tmp_path, {"Billing": tiered_template(), "Orders": tiered_template(), "Web": {"Resources": {}}})
    with pytest.raises(LocalAppError, match=r"several stacks .* \(Billing, Orders\); choose one with --stack NAME"):
        Assembly.read(tmp_path, tmp_path)
    assert Assembly.read(tmp_path, tmp_path, stack="Orders").stack_name == "Orders-stack"  # as cdk shows it
    assert Assembly.read(tmp_path, tmp_path, stack="Billing-stack").stack_name == "Billing-stack"  # CloudFormation's
    with pytest.raises(
        LocalAppError,
        match=r"--stack Web: no such stack uses TieredJobs .*\(those that do: "
        r"Billing, Orders\)",
    ):
        Assembly.read(tmp_path, tmp_path, stack="Web")


def test_reloads_stage_the_app_s_job_folder_with_the_runtime_its_asset_shipped(tmp_path):
    """The installed runtime is watched when the app shipped exactly it (this checkout's app); another
    install's (the app's virtualenv's) stays what the asset holds."""
    jobs = tmp_path / "app" / "src" / "jobs"
    jobs.mkdir(parents=True)
    (jobs / "__init__.py").write_text("")
    write_assembly(tmp_path / "out", {"Billing": tiered_template()})
    asset = JobsSource(jobs, module="jobs").stage(tmp_path / "out" / "asset.1")
    (tmp_path / "out" / "Billing.assets.json").write_text(
        json.dumps({"files": {"1": {"source": {"path": "asset.1", "packaging": "zip"}, "destinations": {}}}})
    )
    assembly = Assembly.read(tmp_path / "out", tmp_path / "app")
    source = assembly.jobs_source()
    assert (source.directory, source.module, source.runtime_dir) == (jobs, "jobs", PACKAGE_DIR)
    with (asset / "tiered_jobs" / "runtime" / "__init__.py").open("a") as runtime:
        runtime.write("# another install\n")
    assert assembly.jobs_source().runtime_dir == asset / "tiered_jobs"


def test_synthesize_passes_the_local_overrides_and_refuses_an_app_that_ignores_them(app_dir, tmp_path):
    overrides = local_overrides(settings={"schedules": {}})
    assembly = synthesize(tmp_path / "out", CdkApp.load(app_dir), overrides)
    assert seen(tmp_path / "out")["context"][LOCAL_OVERRIDES_CONTEXT_KEY] == overrides
    assert (assembly.stack_name, assembly.app_directory) == ("Billing-stack", app_dir)
    write_assembly(app_dir / "assembly", {"Billing": tiered_template(stage="dev")})
    with pytest.raises(LocalAppError, match="is stage 'dev', not local mode's 'local'.*'tiered_jobs:local'"):
        synthesize(tmp_path / "out2", CdkApp.load(app_dir), overrides)


def test_a_stack_pinned_elsewhere_than_the_embedded_aws_is_refused(app_dir, tmp_path):
    write_assembly(app_dir / "assembly", {"Billing": tiered_template()}, environment="aws://111111111111/eu-west-1")
    with pytest.raises(LocalAppError, match="pinned to aws://111111111111/eu-west-1.*CDK_DEFAULT_ACCOUNT"):
        synthesize(tmp_path / "out", CdkApp.load(app_dir))
    write_assembly(
        app_dir / "assembly", {"Billing": tiered_template()}, environment=f"aws://{ACCOUNT_ID}/{DEFAULT_REGION}"
    )
    assert synthesize(tmp_path / "out2", CdkApp.load(app_dir)).environment == f"aws://{ACCOUNT_ID}/{DEFAULT_REGION}"


def test_an_app_outside_the_checkout_does_not_import_the_checkout(tmp_path):
    """The checkout is on PYTHONPATH to import the emulator; an app elsewhere imports its own packages."""
    elsewhere = tmp_path / "lib"
    environ = {"PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(elsewhere)]), "HOME": "/home/x"}
    outside = app_environment(CdkApp(tmp_path, "python app.py"), environ)
    assert outside == {"PYTHONPATH": str(elsewhere), "HOME": "/home/x"}
    assert "PYTHONPATH" not in app_environment(CdkApp(tmp_path, "python app.py"), {"PYTHONPATH": str(REPO_ROOT)})
    assert app_environment(CdkApp(REPO_ROOT, "python app.py"), environ) == environ  # this repository's own app


def test_up_names_the_problem_when_no_stack_of_the_app_uses_tiered_jobs(app_dir, tmp_path):
    from typer.testing import CliRunner

    from emulator.cli import app

    write_assembly(app_dir / "assembly", {"Web": {"Resources": {}}})
    result = CliRunner().invoke(
        app, ["up", "--app-dir", str(app_dir), "--no-view", "--no-console"], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 1, result.output
    assert "error: no stack in this app uses TieredJobs (its stacks: Web)" in result.output
    result = CliRunner().invoke(app, ["up", "--app-dir", str(tmp_path / "nowhere")], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "does not exist" in result.output
