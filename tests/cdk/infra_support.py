"""Synthesis and template look-ups shared by the construct library's tests (``tests/cdk``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.app import build_app, load_cdk_context
from tiered_jobs.contract.names import function_name, queue_name, stack_name

#: The example app's routes (``cdk.json``): settings tests route like an app, the library has no default.
EXAMPLE_ROUTES: dict[str, str] = json.loads((Path(__file__).resolve().parents[2] / "cdk.json").read_text())["context"][
    "tiered_jobs"
]["routes"]


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
    """Synthesize with ``cdk.json``'s context plus ``overrides``; cdk-nag runs as for ``cdk synth``."""
    outdir = tmp_path_factory.mktemp(name)
    context = load_cdk_context(**overrides)
    app = build_app(context, outdir=str(outdir))
    app.synth()  # runs cdk-nag: any unacknowledged finding raises here
    stage = context["tiered_jobs"]["stage"]
    raw = json.loads((outdir / f"{stack_name(stage)}.template.json").read_text())
    return Synth(stage=stage, outdir=outdir, raw=raw, template=Template.from_json(raw))


def logical_id(synth, type_: str, **properties: Any) -> str:
    matches = [
        key
        for key, res in synth.resources(type_).items()
        if all(res["Properties"].get(k) == v for k, v in properties.items())
    ]
    assert len(matches) == 1, f"{type_} with {properties}: {matches}"
    return matches[0]


def find_queue(synth, stage: str, tier: str, dlq: bool = False) -> tuple[str, dict[str, Any]]:
    key = logical_id(synth, "AWS::SQS::Queue", QueueName=queue_name(stage, tier, dlq=dlq))
    return key, synth.raw["Resources"][key]


def find_consumer(synth, stage: str, tier: str) -> tuple[str, dict[str, Any]]:
    key = logical_id(synth, "AWS::Lambda::Function", FunctionName=function_name(stage, f"{tier}-consumer"))
    return key, synth.raw["Resources"][key]


def policy_statements(synth, function_key: str) -> list[dict[str, Any]]:
    role = synth.raw["Resources"][function_key]["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = []
    for policy in synth.resources("AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def referenced_ids(value: Any) -> set[str]:
    """Logical IDs a template value refers to (Ref / Fn::GetAtt), anywhere inside it."""
    found: set[str] = set()
    if isinstance(value, dict):
        if "Ref" in value:
            found.add(value["Ref"])
        if "Fn::GetAtt" in value:
            found.add(value["Fn::GetAtt"][0])
        for item in value.values():
            found |= referenced_ids(item)
    elif isinstance(value, list):
        for item in value:
            found |= referenced_ids(item)
    return found


# Test modules import the fixtures below (no conftest.py here: several test folders share the
# module name "conftest"). Each importing module gets its own fixture definition, so the synthesis
# itself is cached per process: each variant is synthesized once.
_SYNTHS: dict[str, Synth] = {}


def synthesize_once(tmp_path_factory: pytest.TempPathFactory, name: str, **overrides: Any) -> Synth:
    if name not in _SYNTHS:
        _SYNTHS[name] = synthesize(tmp_path_factory, name, **overrides)
    return _SYNTHS[name]
