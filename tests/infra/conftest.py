"""Synthesize each variant of the app once per session (a synthesis costs seconds)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.app import build_app, load_cdk_context
from tiered_jobs.contract.names import stack_name


@dataclass(frozen=True)
class Synth:
    """One synthesized cloud assembly: the template (raw and as ``Template``) and its directory."""

    stage: str
    outdir: Path
    raw: dict[str, Any]
    template: Template

    def resources(self, type_: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.raw["Resources"].items() if v["Type"] == type_}

    def asset_dirs(self) -> list[Path]:
        return sorted(p for p in self.outdir.glob("asset.*") if p.is_dir())


def synthesize(tmp_path_factory: pytest.TempPathFactory, name: str, **overrides: Any) -> Synth:
    outdir = tmp_path_factory.mktemp(name)
    context = load_cdk_context(**overrides)
    app = build_app(context, outdir=str(outdir))
    app.synth()  # runs cdk-nag: any unacknowledged finding raises here
    stage = context["tiered_jobs"]["stage"]
    raw = json.loads((outdir / f"{stack_name(stage)}.template.json").read_text())
    return Synth(stage=stage, outdir=outdir, raw=raw, template=Template.from_json(raw))


@pytest.fixture(scope="session")
def default_synth(tmp_path_factory) -> Synth:
    """Exactly what ``cdk.json`` says."""
    return synthesize(tmp_path_factory, "default")


@pytest.fixture(scope="session")
def custom_synth(tmp_path_factory) -> Synth:
    """A disposable stage with an added tier, a moved route, subscriptions, x86 and console events."""
    context = load_cdk_context()["tiered_jobs"]
    return synthesize(
        tmp_path_factory,
        "custom",
        stage="qa",
        disposable=True,
        architecture="x86_64",
        powertools_version="latest",
        alarm_email="oncall@example.com",
        alarm_https_url="https://events.pagerduty.com/integration/abc/enqueue",
        console_test_events=True,
        tiers={**context["tiers"], "reports": {"max_concurrency": 2, "timeout_seconds": 120}},
        routes={**context["routes"], "reports.*": "reports", "payments.update_balance": "transactional"},
    )
