"""Pause and resume on the template: each tier names its mapping for operators, the replay function may
change its own stage's mappings only, and no consumer may change any."""

from __future__ import annotations

import json

import pytest

from tests.cdk.infra_support import find_consumer, logical_id, policy_statements
from tests.cdk.template_values import Concrete
from tiered_jobs.cdk.replay import MAPPING_ACTIONS
from tiered_jobs.contract.names import Env, Ssm, function_name

pytestmark = pytest.mark.synth


def _as_list(value):
    return value if isinstance(value, list) else [value]


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_each_tier_publishes_its_mappings_uuid_and_the_replay_function_knows_them(request, synth_name):
    synth = request.getfixturevalue(synth_name)
    t = Concrete(synth.raw)
    mappings = {t.ref(lid) for lid in synth.resources("AWS::Lambda::EventSourceMapping")}
    published = {
        t.value(p["Properties"]["Name"]): t.value(p["Properties"]["Value"])
        for p in synth.resources("AWS::SSM::Parameter").values()
    }
    tiers = published[Ssm.tiers(synth.stage)].split(",")
    by_tier = {tier: published[Ssm.tier(synth.stage, tier, Ssm.TIER_MAPPING_UUID)] for tier in tiers}
    assert set(by_tier.values()) == mappings and len(mappings) == len(by_tier)
    replay = logical_id(synth, "AWS::Lambda::Function", FunctionName=function_name(synth.stage, "replay"))
    variables = t.value(synth.raw["Resources"][replay]["Properties"]["Environment"]["Variables"])
    assert json.loads(variables[Env.REPLAY_MAPPINGS]) == by_tier


def test_the_replay_function_may_change_exactly_its_stages_mappings_and_no_consumer_may(default_synth):
    synth = default_synth
    t = Concrete(synth.raw)
    arns = {t.arn(lid) for lid in synth.resources("AWS::Lambda::EventSourceMapping")}
    replay = logical_id(synth, "AWS::Lambda::Function", FunctionName=function_name(synth.stage, "replay"))
    granted = [
        s for s in policy_statements(synth, replay) if set(_as_list(s["Action"])) & {"lambda:UpdateEventSourceMapping"}
    ]
    assert len(granted) == 1
    assert set(_as_list(granted[0]["Action"])) == set(MAPPING_ACTIONS)
    assert {t.value(r) for r in _as_list(granted[0]["Resource"])} == arns  # by ARN: never "*"
    for tier in ("critical", "transactional", "bulk"):
        key, _ = find_consumer(synth, synth.stage, tier)
        actions = {a for s in policy_statements(synth, key) for a in _as_list(s["Action"])}
        assert not {a for a in actions if a.startswith("lambda:")}  # the consumer's IAM is unchanged


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_no_mapping_sets_enabled_so_the_template_never_asks_to_resume_a_paused_tier(request, synth_name):
    """A pause and the breaker change ``Enabled`` outside CloudFormation; a template that set it would state
    ``true`` and a deploy could put it back (docs/deploy.md, "A deploy over a paused tier"). What the template
    does set, and a deploy updates in place, is the mapping's scaling and batching."""
    synth = request.getfixturevalue(synth_name)
    mappings = synth.resources("AWS::Lambda::EventSourceMapping").values()
    assert mappings and all("Enabled" not in m["Properties"] for m in mappings)
    assert all({"ScalingConfig", "BatchSize"} <= set(m["Properties"]) for m in mappings)
