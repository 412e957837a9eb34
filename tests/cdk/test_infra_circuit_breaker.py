"""The circuit breaker on the template: off by default; on a tier that sets it, its two alarms, their
Lambda actions on the replay function with a permission per alarm (least privilege), one page when the
opening alarm fires (none at its OK, the probe's start), the probe alarm only signalling, the right to
reset that alarm only, and the right to publish the closing page to the alarm topic only; the reconcile rule
that invokes the replay function every five minutes (and its rights: to invoke, to read these alarms only);
and the function's failed asynchronous events sent to the alarm topic."""

from __future__ import annotations

import copy
import json

import pytest

from tests.cdk.hops import EVENTS_PRINCIPAL, Hop, RoleCaller, ServiceCaller, walk
from tests.cdk.infra_support import logical_id, policy_statements, synthesize_once
from tests.cdk.template_values import Concrete
from tiered_jobs.cdk.circuit_breaker import ASYNC_RETRY_ATTEMPTS, RECONCILE_SCHEDULE
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.names import Alarms, Env, Metrics, function_name
from tiered_jobs.replay.reconcile import GRACE, reconcile

pytestmark = pytest.mark.synth

ALARMS_PRINCIPAL = "lambda.alarms.cloudwatch.amazonaws.com"
BREAKER = {"circuit_breaker_percent": 40, "circuit_breaker_min_jobs": 25, "circuit_breaker_minutes": 2}


@pytest.fixture(scope="module")
def breaker_synth(tmp_path_factory):
    return synthesize_once(
        tmp_path_factory, "circuit-breaker", tiers={"critical": {}, "transactional": {}, "bulk": BREAKER}
    )


def _alarm(synth, tier: str, kind: str) -> tuple[str, dict]:
    key = logical_id(synth, "AWS::CloudWatch::Alarm", AlarmName=Alarms.name(synth.stage, tier, kind))
    return key, synth.raw["Resources"][key]["Properties"]


def _replay(synth) -> str:
    return logical_id(synth, "AWS::Lambda::Function", FunctionName=function_name(synth.stage, "replay"))


def test_off_by_default(default_synth):
    names = {a["Properties"]["AlarmName"] for a in default_synth.resources("AWS::CloudWatch::Alarm").values()}
    assert not {n for n in names if "circuit" in n}
    assert not default_synth.resources("AWS::Lambda::Permission")
    statements = policy_statements(default_synth, _replay(default_synth))
    assert not [s for s in statements if "cloudwatch:SetAlarmState" in str(s["Action"])]
    # No breaker, no closing page: the replay function may not publish to the alarm topic.
    assert not [s for s in statements if "sns:" in str(s["Action"])]
    variables = default_synth.raw["Resources"][_replay(default_synth)]["Properties"]["Environment"]["Variables"]
    assert Env.BREAKER_PAGE_TOPIC not in variables
    # No breaker, nothing to reconcile and no asynchronous invoker: no rule, no destination.
    assert not default_synth.resources("AWS::Events::Rule")
    assert not default_synth.resources("AWS::Lambda::EventInvokeConfig")


def test_the_opening_alarm_is_the_transient_failure_share_over_the_window_with_a_minimum_volume(breaker_synth):
    _, alarm = _alarm(breaker_synth, "bulk", Alarms.CIRCUIT_BREAKER)
    returned = next(q for q in alarm["Metrics"] if q.get("ReturnData", True))
    assert returned["Expression"] == "IF(attempts >= 25, 100 * FILL(retried, 0) / attempts, 0)"
    stats = {q["Id"]: q["MetricStat"] for q in alarm["Metrics"] if "MetricStat" in q}
    assert {i: (s["Metric"]["MetricName"], s["Period"], s["Stat"]) for i, s in stats.items()} == {
        "attempts": (Metrics.PROCESSED, 120, "Sum"),
        "retried": (Metrics.RETRIED, 120, "Sum"),
    }
    assert {d["Name"]: d["Value"] for d in stats["attempts"]["Metric"]["Dimensions"]} == {
        Metrics.DIM_SERVICE: Metrics.SERVICE,
        Metrics.DIM_STAGE: breaker_synth.stage,
        Metrics.DIM_TIER: "bulk",
    }
    assert (alarm["Threshold"], alarm["ComparisonOperator"], alarm["EvaluationPeriods"]) == (
        40,
        "GreaterThanThreshold",
        1,
    )
    # No attempt while it is open: no datapoint, which must read as OK so that the probe starts.
    assert alarm["TreatMissingData"] == "notBreaching"


def test_only_the_tier_that_sets_it_has_a_breaker(breaker_synth):
    names = {a["Properties"]["AlarmName"] for a in breaker_synth.resources("AWS::CloudWatch::Alarm").values()}
    circuit = {n for n in names if "circuit" in n}
    assert circuit == {
        Alarms.name(breaker_synth.stage, "bulk", k) for k in (Alarms.CIRCUIT_BREAKER, Alarms.CIRCUIT_PROBE)
    }


def test_it_pages_when_it_opens_not_when_its_probe_starts_and_every_change_invokes_the_replay_function(
    breaker_synth,
):
    t = Concrete(breaker_synth.raw)
    replay, topic = (
        {"Fn::GetAtt": [_replay(breaker_synth), "Arn"]},
        next(iter(breaker_synth.resources("AWS::SNS::Topic"))),
    )
    _, breaker = _alarm(breaker_synth, "bulk", Alarms.CIRCUIT_BREAKER)
    assert breaker["AlarmActions"] == [{"Ref": topic}, replay]  # opens: one page
    assert breaker["OKActions"] == [replay]  # the probe starts: no page (the replay function pages at the close)
    _, probe = _alarm(breaker_synth, "bulk", Alarms.CIRCUIT_PROBE)
    assert probe["AlarmActions"] == [replay]  # never pages
    assert "OKActions" not in probe
    assert (probe["MetricName"], probe["Period"], probe["Threshold"]) == (Metrics.SUCCEEDED, 60, 0)
    assert t.value(probe["AlarmName"]) == Alarms.name(breaker_synth.stage, "bulk", Alarms.CIRCUIT_PROBE)


def _permissions(synth, principal: str = ALARMS_PRINCIPAL) -> list[dict]:
    return [p for p in synth.resources("AWS::Lambda::Permission").values() if p["Properties"]["Principal"] == principal]


def test_each_alarm_may_invoke_the_replay_function_and_nothing_else_may(breaker_synth):
    permissions = _permissions(breaker_synth)
    (rule,) = breaker_synth.resources("AWS::Events::Rule")
    assert len(permissions) + len(_permissions(breaker_synth, EVENTS_PRINCIPAL)) == len(
        breaker_synth.resources("AWS::Lambda::Permission")
    )
    assert [p["Properties"]["SourceArn"] for p in _permissions(breaker_synth, EVENTS_PRINCIPAL)] == [
        {"Fn::GetAtt": [rule, "Arn"]}
    ]
    alarms = {_alarm(breaker_synth, "bulk", k)[0] for k in (Alarms.CIRCUIT_BREAKER, Alarms.CIRCUIT_PROBE)}
    assert {p["Properties"]["SourceArn"]["Fn::GetAtt"][0] for p in permissions} == alarms
    for permission in permissions:
        props = permission["Properties"]
        assert props["Principal"] == "lambda.alarms.cloudwatch.amazonaws.com"
        assert props["Action"] == "lambda:InvokeFunction"
        assert props["FunctionName"] == {"Fn::GetAtt": [_replay(breaker_synth), "Arn"]}
        assert props["SourceAccount"] == {"Ref": "AWS::AccountId"}


def test_the_replay_function_may_reset_the_probe_alarm_only_and_read_the_breakers_alarms_only(breaker_synth):
    t = Concrete(breaker_synth.raw)
    granted = [s for s in policy_statements(breaker_synth, _replay(breaker_synth)) if "cloudwatch:" in str(s["Action"])]
    by_action = {s["Action"]: s for s in granted}
    assert len(granted) == 2 and set(by_action) == {"cloudwatch:SetAlarmState", "cloudwatch:DescribeAlarms"}
    assert t.value(by_action["cloudwatch:SetAlarmState"]["Resource"]).endswith(
        f":alarm:{Alarms.name(breaker_synth.stage, 'bulk', Alarms.CIRCUIT_PROBE)}"
    )
    # The reconciler reads the breaker's two alarms by ARN, never "*".
    read = {t.value(r).rsplit(":alarm:", 1)[1] for r in by_action["cloudwatch:DescribeAlarms"]["Resource"]}
    assert read == {Alarms.name(breaker_synth.stage, "bulk", k) for k in (Alarms.CIRCUIT_BREAKER, Alarms.CIRCUIT_PROBE)}


def test_the_replay_function_may_publish_the_closing_page_to_the_alarm_topic_only(breaker_synth):
    t = Concrete(breaker_synth.raw)
    topic = next(iter(breaker_synth.resources("AWS::SNS::Topic")))
    replay = breaker_synth.raw["Resources"][_replay(breaker_synth)]["Properties"]
    assert replay["Environment"]["Variables"][Env.BREAKER_PAGE_TOPIC] == {"Ref": topic}
    statements = policy_statements(breaker_synth, _replay(breaker_synth))
    publish = [s for s in statements if "sns:" in str(s["Action"])]
    assert [(s["Action"], t.value(s["Resource"])) for s in publish] == [("sns:Publish", t.value({"Ref": topic}))]
    # The topic is encrypted: its key, for the messages it publishes, and no other key.
    key = breaker_synth.raw["Resources"][topic]["Properties"]["KmsMasterKeyId"]
    kms = [s for s in statements if "kms:" in str(s["Action"])]
    assert [t.value(s["Resource"]) for s in kms] == [t.value(key)]
    assert set(kms[0]["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"}


def _page_hops(raw: dict) -> tuple[list[Hop], list[str]]:
    hops, problems = walk(raw)
    return [
        h
        for h in hops
        if h.actions == ("sns:Publish",)
        and isinstance(h.caller, RoleCaller)
        and Env.BREAKER_PAGE_TOPIC in h.description
    ], problems


def test_the_hop_walk_lets_the_replay_function_publish_the_closing_page(breaker_synth):
    hops, problems = _page_hops(breaker_synth.raw)
    assert problems == []
    topic = next(iter(breaker_synth.resources("AWS::SNS::Topic")))
    assert [(h.target, h.key_actions) for h in hops] == [(topic, ("kms:GenerateDataKey", "kms:Decrypt"))]


def test_the_hop_walk_fails_a_replay_function_that_may_not_publish_the_page(breaker_synth):
    raw = copy.deepcopy(breaker_synth.raw)
    role = raw["Resources"][_replay(breaker_synth)]["Properties"]["Role"]["Fn::GetAtt"][0]
    for resource in raw["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role} in resource["Properties"].get("Roles", []):
            document = resource["Properties"]["PolicyDocument"]
            document["Statement"] = [s for s in document["Statement"] if "sns:" not in str(s["Action"])]
    problems = [p for p in _page_hops(raw)[1] if "sns:Publish" in p]
    # Neither the closing page nor the failed events' destination (the same right) can reach the topic.
    assert len(problems) == 2 and all("does not allow" in p for p in problems), problems
    assert [p for p in problems if "DestinationConfig.OnFailure" in p] and [
        p for p in problems if Env.BREAKER_PAGE_TOPIC in p
    ]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"circuit_breaker_percent": 0}, "circuit_breaker_percent 0.0 must be a percentage"),
        ({"circuit_breaker_percent": 101}, "circuit_breaker_percent 101.0 must be a percentage"),
        ({"circuit_breaker_percent": 50, "circuit_breaker_minutes": 0}, "circuit_breaker_minutes 0 is out of range"),
        ({"circuit_breaker_percent": 50, "circuit_breaker_min_jobs": 0}, "circuit_breaker_min_jobs 0 is out of range"),
        ({"circuit_breaker_percnt": 50}, "circuit_breaker_percnt"),
    ],
)
def test_bad_settings_name_the_setting(setting, message):
    with pytest.raises(SettingsError, match=message):
        AppSettings.from_context({"tiers": {"bulk": setting}, "routes": {"*": "bulk"}})


def _lambda_action_hops(raw: dict) -> tuple[list[Hop], list[str]]:
    hops, problems = walk(raw)
    return [h for h in hops if isinstance(h.caller, ServiceCaller) and h.caller.principal == ALARMS_PRINCIPAL], problems


def test_the_hop_walk_lets_each_alarm_invoke_the_replay_function(breaker_synth):
    hops, problems = _lambda_action_hops(breaker_synth.raw)
    assert problems == []
    replay = _replay(breaker_synth)
    # The opening alarm on ALARM and on OK, the probe alarm on ALARM: each a hop to the replay function.
    assert sorted((h.target, h.description.split(" (")[1].split(")")[0]) for h in hops) == [
        (replay, "AlarmActions"),
        (replay, "AlarmActions"),
        (replay, "OKActions"),
    ]
    assert all(h.actions == ("lambda:InvokeFunction",) for h in hops)


def test_the_hop_walk_fails_a_permission_for_another_alarm_or_none(breaker_synth):
    raw = copy.deepcopy(breaker_synth.raw)
    breaker, _ = _alarm(breaker_synth, "bulk", Alarms.CIRCUIT_BREAKER)
    probe, _ = _alarm(breaker_synth, "bulk", Alarms.CIRCUIT_PROBE)
    permissions = {
        k: r
        for k, r in raw["Resources"].items()
        if r["Type"] == "AWS::Lambda::Permission" and r["Properties"]["Principal"] == ALARMS_PRINCIPAL
    }
    for permission in permissions.values():  # both name the probe alarm: the opening alarm may not invoke
        permission["Properties"]["SourceArn"] = {"Fn::GetAtt": [probe, "Arn"]}
    problems = _lambda_action_hops(raw)[1]
    assert len(problems) == 2 and all(breaker in p and "lambda:InvokeFunction" in p for p in problems), problems
    for key in permissions:
        del raw["Resources"][key]
    assert len(_lambda_action_hops(raw)[1]) == 3  # no permission: no alarm may invoke it


def test_a_rule_invokes_the_replay_function_every_five_minutes_to_reconcile_the_breakers(breaker_synth):
    ((rule, props),) = breaker_synth.resources("AWS::Events::Rule").items()
    rule_props = props["Properties"]
    assert (rule_props["ScheduleExpression"], rule_props["State"]) == (RECONCILE_SCHEDULE, "ENABLED")
    assert RECONCILE_SCHEDULE == f"rate({int(GRACE.total_seconds() // 60)} minutes)"  # the reconciler's grace
    ((target),) = rule_props["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [_replay(breaker_synth), "Arn"]}
    event = json.loads(target["Input"])
    assert event == {"action": "reconcile", "tiers": ["bulk"]}  # the tiers with a breaker, nothing else

    # The event is one the reconciler takes (a refused one would fail every five minutes).
    class Alarmless:
        def describe_alarms(self, AlarmNames):
            return {"MetricAlarms": []}

    done = reconcile(
        event, stage=breaker_synth.stage, mappings={"bulk": "u"}, lambda_client=None, cloudwatch=Alarmless()
    )
    assert done["tiers"] == {"bulk": {"outcome": "no circuit breaker alarms"}}


def _rule_hops(raw: dict) -> tuple[list[Hop], list[str]]:
    hops, problems = walk(raw)
    return [h for h in hops if h.description.startswith("AWS::Events::Rule")], problems


def test_the_hop_walk_lets_the_rule_invoke_the_replay_function(breaker_synth):
    hops, problems = _rule_hops(breaker_synth.raw)
    assert problems == []
    assert [(h.target, h.actions, h.caller.principal) for h in hops] == [
        (_replay(breaker_synth), ("lambda:InvokeFunction",), EVENTS_PRINCIPAL)
    ]


def test_the_hop_walk_fails_a_rule_without_its_permission_or_with_another_rules(breaker_synth):
    raw = copy.deepcopy(breaker_synth.raw)
    (key,) = [
        k
        for k, r in raw["Resources"].items()
        if r["Type"] == "AWS::Lambda::Permission" and r["Properties"]["Principal"] == EVENTS_PRINCIPAL
    ]
    raw["Resources"][key]["Properties"]["SourceArn"] = "arn:aws:events:us-east-1:123456789012:rule/another"
    problems = [p for p in _rule_hops(raw)[1] if p.startswith("AWS::Events::Rule")]
    assert len(problems) == 1 and "lambda:InvokeFunction" in problems[0], problems
    del raw["Resources"][key]
    assert len([p for p in _rule_hops(raw)[1] if p.startswith("AWS::Events::Rule")]) == 1


def test_asynchronous_events_that_fail_every_try_go_to_the_alarm_topic(breaker_synth):
    ((config_id, config),) = breaker_synth.resources("AWS::Lambda::EventInvokeConfig").items()
    props = config["Properties"]
    topic = next(iter(breaker_synth.resources("AWS::SNS::Topic")))
    assert props["FunctionName"] == {"Ref": _replay(breaker_synth)} and props["Qualifier"] == "$LATEST"
    assert props["MaximumRetryAttempts"] == ASYNC_RETRY_ATTEMPTS == 2
    assert props["DestinationConfig"] == {"OnFailure": {"Destination": {"Ref": topic}}}
    # Lambda checks the role's right to the destination when it is set: the function (which the config
    # references) is created after its role's policy.
    replay = breaker_synth.raw["Resources"][_replay(breaker_synth)]
    policy = next(
        k
        for k, r in breaker_synth.raw["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy"
        and "sns:Publish" in json.dumps(r["Properties"]["PolicyDocument"])
        and {"Ref": replay["Properties"]["Role"]["Fn::GetAtt"][0]} in r["Properties"]["Roles"]
    )
    assert policy in replay["DependsOn"]
    hops, problems = walk(breaker_synth.raw)
    (hop,) = [h for h in hops if h.description.startswith("AWS::Lambda::EventInvokeConfig")]
    assert problems == [] and (hop.target, hop.actions) == (topic, ("sns:Publish",))
    assert hop.key_actions == ("kms:GenerateDataKey", "kms:Decrypt")  # the topic's key, which the role may use
