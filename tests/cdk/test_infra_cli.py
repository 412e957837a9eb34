"""The real CDK CLI from npm synthesizes the app as users type it, and cfn-lint finds no error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tiered_jobs.contract.names import stack_name

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
#: cfn-lint findings we accept, with the reason. Everything else (every error, other warnings) fails.
ACCEPTED_CFN_LINT = {
    # CDK adds DependsOn on the role's policy next to the GetAtt of the role itself: redundant, harmless.
    "W3005",
}


@pytest.fixture(scope="module")
def cli_synth(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    if shutil.which("npx") is None or not (ROOT / "node_modules" / ".bin" / "cdk").exists():
        pytest.fail("the pinned CDK CLI is missing: run `make setup` (npm ci)")
    outdir = tmp_path_factory.mktemp("cli")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JSII_SILENCE_WARNING")}
    result = subprocess.run(
        ["npx", "--no-install", "cdk", "synth", "--quiet", "-o", str(outdir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return outdir, result


def test_cli_synth_writes_the_three_tiers_without_noise(cli_synth):
    outdir, result = cli_synth
    template = json.loads((outdir / "TieredJobs-dev.template.json").read_text())
    names = {
        r["Properties"].get("FunctionName")
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    assert names == {f"tiered-jobs-dev-{t}-consumer" for t in ("critical", "transactional", "bulk")} | {
        "tiered-jobs-dev-replay"
    }
    # app.py silences the jsii Node end-of-life banner itself, so plain `npx cdk synth` stays quiet.
    assert "end-of-life" not in result.stderr and "end-of-life" not in result.stdout
    assert not (ROOT / "cdk.context.json").exists()


def test_cfn_lint_finds_no_errors(cli_synth, custom_synth):
    """The CLI's template, and in the same run (one start of cfn-lint) the custom stage's, which holds the
    optional parts: subscriptions, a schedule, a canary tier's alias and CodeDeploy."""
    outdir, _ = cli_synth
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    custom = custom_synth.outdir / f"{stack_name(custom_synth.stage)}.template.json"
    result = subprocess.run(
        [str(cfn_lint), "--format", "json", str(outdir / "TieredJobs-dev.template.json"), str(custom)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Exit code is a bit mask: 2 = errors, 4 = warnings, 8 = informational; anything else is a crash.
    assert result.returncode & ~(4 | 8) == 0, result.stderr
    findings = json.loads(result.stdout)
    unexpected = [(f["Rule"]["Id"], f["Message"]) for f in findings if f["Rule"]["Id"] not in ACCEPTED_CFN_LINT]
    assert unexpected == []


def _app_env(context: dict, outdir: Path) -> dict[str, str]:
    """What the CDK CLI hands the app: the context as JSON, and the output directory."""
    return {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(outdir)}


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"tiered_jobs": {"tiers": {"bulk": {"max_attempts": 0}}}},
            "tiered_jobs settings: tier 'bulk': max_attempts 0 is out of range; use a value between 1 and 100",
        ),
        ({"stage": "Prod"}, "tiered_jobs settings: context 'tiered_jobs': stage 'Prod' is invalid"),
        (
            {"tiered_jobs": {"tiers": {"bulk": {"idempotency_ttl_seconds": 60}}}},
            "tiered_jobs settings: tier 'bulk': idempotency_ttl_seconds 60 is shorter than",
        ),
    ],
)
def test_a_settings_error_prints_its_message_alone_and_fails(tmp_path, context, message):
    """No traceback: one line naming the tier, the key and the fix, and a non-zero exit status."""
    result = subprocess.run(
        [sys.executable, "app.py"],
        cwd=ROOT,
        env=_app_env(context, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(message)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == "" and not (tmp_path / "manifest.json").exists()


def test_the_cdk_cli_shows_the_settings_error_without_a_traceback(tmp_path):
    result = subprocess.run(
        ["npx", "--no-install", "cdk", "synth", "--quiet", "-c", "stage=Prod", "-o", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode != 0
    assert "tiered_jobs settings: context 'tiered_jobs': stage 'Prod' is invalid" in result.stderr
    assert "Traceback" not in result.stderr and 'File "' not in result.stderr
