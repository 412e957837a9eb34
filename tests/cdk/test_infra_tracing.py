"""A tier's ``tracing`` (on by default, as Powertools' tracer is): its consumer's Active tracing, the X-Ray
rights CDK gives the role with it, Powertools' switch for the job subsegments, and the hop walk's X-Ray
hop, which fails a traced function whose role could not send its segments."""

from __future__ import annotations

import copy

import pytest

from tests.cdk.hops import XRAY_ACTIONS, walk
from tests.cdk.infra_support import find_consumer, policy_statements
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.names import DEFAULT_TIERS, Env

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth


def _xray_statements(synth, consumer: str) -> list[dict]:
    return [
        s
        for s in policy_statements(synth, consumer)
        if s["Effect"] == "Allow"
        and set(XRAY_ACTIONS) <= set(s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_every_tier_is_traced_by_default_and_its_role_may_send_to_xray(default_synth, tier):
    key, consumer = find_consumer(default_synth, default_synth.stage, tier)
    props = consumer["Properties"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["Environment"]["Variables"][Env.POWERTOOLS_TRACE_DISABLED] == "false"
    assert [s["Resource"] for s in _xray_statements(default_synth, key)] == ["*"]


def test_the_hop_walk_sends_every_traced_function_to_xray(default_synth):
    hops, problems = walk(default_synth.raw)
    xray = [h for h in hops if h.description.startswith("X-Ray ")]
    traced = [
        k for k, f in default_synth.resources("AWS::Lambda::Function").items() if f["Properties"].get("TracingConfig")
    ]
    assert problems == [] and sorted(h.description.split()[1] for h in xray) == sorted(traced)
    assert {h.actions for h in xray} == {XRAY_ACTIONS}


def test_the_hop_walk_fails_a_traced_consumer_whose_role_may_not_reach_xray(default_synth):
    raw = copy.deepcopy(default_synth.raw)
    key, _ = find_consumer(default_synth, default_synth.stage, "bulk")
    role = raw["Resources"][key]["Properties"]["Role"]["Fn::GetAtt"][0]
    for policy in raw["Resources"].values():
        if policy["Type"] == "AWS::IAM::Policy" and {"Ref": role} in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                if "xray:PutTraceSegments" in statement["Action"]:
                    statement["Resource"] = {"Fn::GetAtt": [key, "Arn"]}  # narrower than "*": X-Ray refuses it
    problems = walk(raw)[1]
    assert problems and all(p.startswith(f"X-Ray {key} ") for p in problems)
    assert any("may not" in p or "does not allow" in p and "xray:PutTraceSegments" in p for p in problems)


def test_a_tier_with_tracing_off_is_not_traced_and_its_tracer_stays_off(custom_synth):
    _, reports = find_consumer(custom_synth, custom_synth.stage, "reports")
    _, bulk = find_consumer(custom_synth, custom_synth.stage, "bulk")
    assert "TracingConfig" not in reports["Properties"]
    assert reports["Properties"]["Environment"]["Variables"][Env.POWERTOOLS_TRACE_DISABLED] == "true"
    assert bulk["Properties"]["TracingConfig"] == {"Mode": "Active"}  # only the tier that asked


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_tracing_must_be_true_or_false(value):
    with pytest.raises(SettingsError, match="tier 'bulk': tracing must be true or false"):
        AppSettings.from_context({"tiers": {"bulk": {"tracing": value}}, "routes": {"*": "bulk"}})
