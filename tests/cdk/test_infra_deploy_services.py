"""docs/deploy.md lists every AWS service the stack creates resources of, and its region caveats name
the Powertools layer's parameter as the template reads it: compared with the synthesized templates
(the one ``cdk.json`` gives and the custom one with the optional parts: subscriptions, a periodic
job, console test events)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cdk.infra_support import Synth

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

DEPLOY = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")


def _listed() -> dict[str, list[str]]:
    """``{service: [resource type, ...]}`` of the page's services table."""
    match = re.search(r"<!-- services:start -->\n(.*?)<!-- services:end -->", DEPLOY, re.S)
    assert match, "docs/deploy.md has no services block"
    rows = [line.split("|")[1:-1] for line in match.group(1).splitlines() if line.startswith("| ")]
    return {cells[0].strip(): re.findall(r"`(AWS::[A-Za-z0-9]+::[A-Za-z0-9]+)`", cells[1]) for cells in rows[1:]}


def _types(*synths: Synth) -> set[str]:
    return {resource["Type"] for synth in synths for resource in synth.raw["Resources"].values()}


def test_the_listed_resource_types_are_the_templates(default_synth, custom_synth):
    listed = _listed()
    documented = [kind for kinds in listed.values() for kind in kinds]
    assert len(documented) == len(set(documented)), "a resource type listed twice"
    assert set(documented) == _types(default_synth, custom_synth)


def test_each_row_is_one_service_and_scheduler_is_among_them():
    listed = _listed()
    for service, kinds in listed.items():
        assert kinds, service
        assert len({kind.split("::")[1] for kind in kinds}) == 1, f"{service} mixes services: {kinds}"
    assert "Amazon EventBridge Scheduler" in listed
    (exec_role,) = [line for line in DEPLOY.splitlines() if line.startswith("| `cfn-exec-role`")]
    assert "EventBridge Scheduler" in exec_role


def test_the_powertools_caveat_names_the_parameter_the_template_reads(default_synth):
    parameters = {
        value["Default"]
        for value in default_synth.raw.get("Parameters", {}).values()
        if str(value.get("Type", "")).startswith("AWS::SSM::Parameter::Value")
    }
    (layer,) = [name for name in parameters if name.startswith("/aws/service/powertools/python/")]
    assert "/aws/service/powertools/python/<architecture>/<runtime>/<powertools_version>" in DEPLOY
    assert f"aws ssm get-parameter --name {layer} " in DEPLOY, layer
