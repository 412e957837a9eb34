"""The construct ships bytecode when the runtime's interpreter is at hand, and says so when it is not."""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Annotations, Match

from tiered_jobs.cdk import bytecode
from tiered_jobs.cdk.function import stage_code
from tiered_jobs.cdk.packaging import JobsSource
from tiered_jobs.contract.names import Handlers

pytestmark = pytest.mark.synth

HERE = f"python{sys.version_info.major}.{sys.version_info.minor}"
OTHER = "python3.10" if sys.version_info[:2] != (3, 10) else "python3.12"
JOBS = Path(__file__).resolve().parents[2] / "functions" / "jobs"


def _stage(tmp_path: Path, runtime: str) -> tuple[cdk.Stack, Path]:
    app = cdk.App(outdir=str(tmp_path / runtime))
    stack = cdk.Stack(app, "Code")
    code, _ = stage_code(stack, JobsSource(JOBS, module="functions.jobs"), runtime)
    lambda_.Function(stack, "Consumer", code=code, handler=Handlers.CONSUMER, runtime=lambda_.Runtime.PYTHON_3_13)
    app.synth()
    (asset,) = (p for p in (tmp_path / runtime).glob("asset.*") if p.is_dir())
    return stack, asset


def test_the_asset_carries_the_runtimes_bytecode_beside_every_module(tmp_path, monkeypatch):
    monkeypatch.delenv(bytecode.INTERPRETER_ENV, raising=False)
    stack, asset = _stage(tmp_path, HERE)  # this interpreter is the runtime's version
    sources = {p.with_suffix("") for p in asset.rglob("*.py")}
    tag = f"cpython-{HERE.removeprefix('python').replace('.', '')}"
    compiled = {p.parent.parent / p.name.removesuffix(f".{tag}.pyc") for p in asset.rglob(f"__pycache__/*.{tag}.pyc")}
    assert compiled == sources and len(sources) > 40
    Annotations.from_stack(stack).has_no_info("*", Match.string_like_regexp("source only"))


def test_without_the_runtimes_interpreter_the_asset_is_source_only_and_synthesis_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "")  # no python3.x on it
    monkeypatch.delenv(bytecode.INTERPRETER_ENV, raising=False)
    stack, asset = _stage(tmp_path, OTHER)
    assert not list(asset.rglob("__pycache__"))
    Annotations.from_stack(stack).has_info("*", Match.string_like_regexp(f"ships as source only: no {OTHER}"))
