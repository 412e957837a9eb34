"""Safe consumer deploys (a tier's ``deployment``): the template a canary tier makes, walked as AWS would.

The custom stage's ``reports`` tier shifts by canary (``tests/cdk/conftest.py``); its other tiers, and
every tier of the default stage, keep ``all_at_once``: no alias, no version, no CodeDeploy. The walk
from each rollback alarm to the alias the mapping invokes is the proof that an alarm during a shift
moves the tier's traffic back.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from aws_cdk import aws_codedeploy as codedeploy

from tests.cdk.hops import ALARM_READ_ACTIONS, ALIAS_ACTIONS, walk
from tests.cdk.infra_support import Synth, find_consumer, find_queue
from tests.cdk.template_values import Concrete
from tiered_jobs.cdk.deployment import ALIAS, ROLLBACK_ALARMS
from tiered_jobs.cdk.settings import SettingsError
from tiered_jobs.cdk.settings.tier_builder import build_tier
from tiered_jobs.cdk.settings.tiers import ALL_AT_ONCE, DEPLOYMENTS
from tiered_jobs.contract.names import Alarms, Ssm

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

#: The custom stage's canary tier, and CodeDeploy's name of its configuration.
CANARY = "reports"
CONFIG_NAME = "CodeDeployDefault.LambdaCanary10Percent5Minutes"
SHIFTING_TYPES = (
    "AWS::Lambda::Alias",
    "AWS::Lambda::Version",
    "AWS::CodeDeploy::Application",
    "AWS::CodeDeploy::DeploymentGroup",
)


def _one(synth: Synth, type_: str, **where: Any) -> tuple[str, dict[str, Any]]:
    found = [
        (key, res)
        for key, res in synth.resources(type_).items()
        if all(res.get("Properties", {}).get(k) == v for k, v in where.items())
    ]
    assert len(found) == 1, f"{type_} {where}: {[key for key, _ in found]}"
    return found[0]


def _alias(synth: Synth, tier: str) -> tuple[str, dict[str, Any]]:
    consumer, _ = find_consumer(synth, synth.stage, tier)
    return _one(synth, "AWS::Lambda::Alias", FunctionName={"Ref": consumer})


def _mapping(synth: Synth, tier: str) -> tuple[str, dict[str, Any]]:
    queue, _ = find_queue(synth, synth.stage, tier)
    return _one(synth, "AWS::Lambda::EventSourceMapping", EventSourceArn={"Fn::GetAtt": [queue, "Arn"]})


def _group(synth: Synth, alias: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    group = alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]["DeploymentGroupName"]["Ref"]
    return group, synth.raw["Resources"][group]


def _alarm(synth: Synth, tier: str, kind: str) -> str:
    key, _ = _one(synth, "AWS::CloudWatch::Alarm", AlarmName=Alarms.name(synth.stage, tier, kind))
    return key


# -- the setting --------------------------------------------------------------------------------


def test_an_unknown_deployment_fails_early_naming_the_tier_and_every_allowed_value():
    with pytest.raises(SettingsError) as raised:
        build_tier("bulk", {"deployment": "blue_green"})
    message = str(raised.value)
    assert message.startswith("tier 'bulk': deployment 'blue_green' is not supported; use one of ")
    assert all(value in message for value in DEPLOYMENTS)
    assert build_tier("bulk", {}).deployment == ALL_AT_ONCE


@pytest.mark.parametrize("value", [v for v in DEPLOYMENTS if v != ALL_AT_ONCE])
def test_every_shifting_deployment_is_a_codedeploy_configuration_of_cdk(value):
    config = getattr(codedeploy.LambdaDeploymentConfig, value.upper())
    # CodeDeploy's own name of it: canary_10_percent_5_minutes is CodeDeployDefault.LambdaCanary10Percent5Minutes.
    expected = "CodeDeployDefault.Lambda" + "".join(part.capitalize() for part in value.split("_"))
    assert config.deployment_config_name == expected
    assert build_tier("critical", {"deployment": value}).deployment == value


# -- the template -------------------------------------------------------------------------------


def test_a_tier_that_does_not_opt_in_keeps_its_template(default_synth, custom_synth):
    """No alias, version or CodeDeploy anywhere in the default stage; in the custom one only the canary
    tier's, and every other tier's mapping invokes its function itself."""
    for kind in SHIFTING_TYPES:
        assert default_synth.resources(kind) == {}
        assert len(custom_synth.resources(kind)) == 1, kind
    for synth in (default_synth, custom_synth):
        tiers = [t for t in ("critical", "transactional", "bulk", CANARY) if synth is custom_synth or t != CANARY]
        for tier in tiers:
            consumer, _ = find_consumer(synth, synth.stage, tier)
            _, mapping = _mapping(synth, tier)
            invokes_function = mapping["Properties"]["FunctionName"] == {"Ref": consumer}
            assert invokes_function == (tier != CANARY), (synth.stage, tier)


def test_a_canary_tiers_mapping_invokes_an_alias_on_the_consumers_current_version(custom_synth):
    synth = custom_synth
    consumer, _ = find_consumer(synth, synth.stage, CANARY)
    alias_id, alias = _alias(synth, CANARY)
    assert alias["Properties"]["Name"] == ALIAS
    version = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"]
    assert version[1] == "Version"
    assert synth.raw["Resources"][version[0]]["Type"] == "AWS::Lambda::Version"
    assert synth.raw["Resources"][version[0]]["Properties"] == {"FunctionName": {"Ref": consumer}}
    mapping_id, mapping = _mapping(synth, CANARY)
    invoked = Concrete(synth.raw).value(mapping["Properties"]["FunctionName"])
    assert invoked == f"tiered-jobs-{synth.stage}-{CANARY}-consumer:{ALIAS}"
    # Pause, resume and the circuit breaker find this mapping by its UUID: the tier's SSM parameter names it;
    # the reservation stays the function's (a version or alias has none of its own).
    (parameter,) = [
        p
        for p in synth.resources("AWS::SSM::Parameter").values()
        if p["Properties"]["Name"] == Ssm.tier(synth.stage, CANARY, Ssm.TIER_MAPPING_UUID)
    ]
    assert parameter["Properties"]["Value"] == {"Ref": mapping_id}


def test_the_deployment_group_shifts_by_the_setting_and_rolls_back_on_failure_and_on_three_alarms(custom_synth):
    synth = custom_synth
    _, alias = _alias(synth, CANARY)
    _, group = _group(synth, alias)
    props = group["Properties"]
    assert props["DeploymentConfigName"] == CONFIG_NAME
    update = alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]
    assert props["ApplicationName"] == update["ApplicationName"]
    assert props["AutoRollbackConfiguration"] == {
        "Enabled": True,
        "Events": ["DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_ALARM"],
    }
    alarms = props["AlarmConfiguration"]
    assert alarms["Enabled"] is True and alarms["IgnorePollAlarmFailure"] is False
    assert alarms["Alarms"] == [{"Name": {"Ref": _alarm(synth, CANARY, kind)}} for kind in ROLLBACK_ALARMS]
    role = synth.raw["Resources"][props["ServiceRoleArn"]["Fn::GetAtt"][0]]["Properties"]
    managed = Concrete(synth.raw).value(role["ManagedPolicyArns"])
    assert managed == ["arn:aws:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited"]
    assert "Policies" not in role


def test_a_canary_rollback_in_the_template_walk(custom_synth):
    """From each rollback alarm of the canary tier to the traffic it moves back: the alarm is in the deployment
    group's alarms, the group rolls back when one fires, the group is the one the alias's update goes through,
    and the alias is what the tier's mapping invokes; CodeDeploy's role may read the alarm and move the alias."""
    synth = custom_synth
    t = Concrete(synth.raw)
    hops, problems = walk(synth.raw)
    assert problems == []
    alias_id, alias = _alias(synth, CANARY)
    group_id, group = _group(synth, alias)
    props = group["Properties"]
    _, mapping = _mapping(synth, CANARY)
    walked = []
    for kind in ROLLBACK_ALARMS:
        alarm = _alarm(synth, CANARY, kind)
        assert {"Name": {"Ref": alarm}} in props["AlarmConfiguration"]["Alarms"]
        assert props["AlarmConfiguration"]["Enabled"] is True
        assert "DEPLOYMENT_STOP_ON_ALARM" in props["AutoRollbackConfiguration"]["Events"]
        assert t.value(mapping["Properties"]["FunctionName"]) == t.arn(alias_id).split(":function:")[1]
        reads = [h for h in hops if h.target == alarm and h.actions == ALARM_READ_ACTIONS]
        moves = [h for h in hops if h.target == alias_id and h.actions == ALIAS_ACTIONS]
        assert len(reads) == 1 and len(moves) == 1
        assert reads[0].caller == moves[0].caller  # one role, the group's
        walked.append(f"{kind} alarm -> {group_id} rolls back -> alias {ALIAS} -> the {CANARY} mapping")
    assert len(walked) == len(ROLLBACK_ALARMS) == 3


def test_the_hop_walk_refuses_a_codedeploy_role_without_its_policy_or_its_trust(custom_synth):
    _, alias = _alias(custom_synth, CANARY)
    _, group = _group(custom_synth, alias)
    role = group["Properties"]["ServiceRoleArn"]["Fn::GetAtt"][0]

    bare = copy.deepcopy(custom_synth.raw)
    bare["Resources"][role]["Properties"]["ManagedPolicyArns"] = []
    _, problems = walk(bare)
    assert any("lambda:UpdateAlias" in p and role in p for p in problems)
    assert any("cloudwatch:DescribeAlarms" in p and role in p for p in problems)

    untrusted = copy.deepcopy(custom_synth.raw)
    statement = untrusted["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    statement["Principal"] = {"Service": "lambda.amazonaws.com"}
    _, problems = walk(untrusted)
    assert any("codedeploy.amazonaws.com may not assume role" in p for p in problems)
