"""Paging where the team lives: every alarm's page names its tier, what fired and a first command the CLI
really has; ``chat`` adds AWS Chatbot configurations on the alarm topic, with a read-only role and guardrail,
and the hop walk follows each page into them.

One synthesis holds every kind of alarm (a rate-limited tier, a circuit breaker, the schedules' alarm) and
a Slack and a Teams channel; the default stage's template is checked too (a cached synthesis).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from tests.cdk.hops import CHAT_CONFIGURATIONS, walk
from tests.cdk.infra_support import synthesize_once
from tests.support.commands import tiered_jobs_problems as resolve
from tiered_jobs.contract.names import Alarms, Schedules
from tiered_jobs.replay.breaker import closed_page

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

SLACK = {"workspace_id": "T07EA123LEP", "channel_id": "C07EZ1ABC23"}
TEAMS = {
    "team_id": "a1b2c3d4-0000-4000-8000-123456789abc",
    "channel_id": "19:b6ef35dc342d56ba5654e6fc6d25a071@thread.tacv2",
    "tenant_id": "a1b2c3d4-0000-4000-8000-123456789abd",
}
TIERS = {
    "critical": {},
    "transactional": {"rate_limit_per_second": 5},
    "bulk": {"circuit_breaker_percent": 40},
}
FIRST_RUN = re.compile(r" First run: (tiered-jobs [^\n]+)$")


@pytest.fixture(scope="module")
def paging_synth(tmp_path_factory):
    return synthesize_once(
        tmp_path_factory,
        "paging",
        stage="pager",
        tiers=TIERS,
        chat={"slack": [SLACK], "teams": [TEAMS]},
        schedules={"nightly": {"expression": "cron(0 3 * * ? *)", "job_type": "analytics.record_event", "payload": {}}},
    )


def page_problems(synth, tiers: list[str]) -> tuple[int, list[str]]:
    """Every alarm's description: its tier (or the schedules), something said of it, and a command that resolves."""
    problems: list[str] = []
    alarms = synth.resources("AWS::CloudWatch::Alarm")
    for props in (alarm["Properties"] for alarm in alarms.values()):
        name, description = props["AlarmName"], props.get("AlarmDescription", "")
        match = FIRST_RUN.search(description)
        if match is None:
            problems.append(f"{name}: no 'First run: tiered-jobs ...' in {description!r}")
            continue
        command = match.group(1)
        if not command.startswith(f"tiered-jobs --stage {synth.stage} "):
            problems.append(f"{name}: {command!r} is not for stage {synth.stage}")
        problems += [f"{name}: {problem}" for problem in resolve(command)]
        if name == Schedules.dlq_alarm_name(synth.stage):
            owner = "Schedules"
        else:
            (owner,) = [t for t in tiers if name.startswith(f"{Alarms.prefix(synth.stage)}{t}-")]
        said = description[: match.start()]
        if owner not in said or len(said.split()) < 8:
            problems.append(f"{name}: the page must name {owner!r} and what fired, got {said!r}")
    return len(alarms), problems


def test_every_alarm_names_its_tier_what_fired_and_a_first_command_the_cli_has(paging_synth, default_synth):
    count, problems = page_problems(paging_synth, list(TIERS))
    assert problems == []
    kinds = len(Alarms.KINDS)
    # Seven per tier, the limiter's, the breaker's two, the schedules'.
    assert count == kinds * len(TIERS) + 1 + 2 + 1
    default_count, default_problems = page_problems(default_synth, ["critical", "transactional", "bulk"])
    assert default_problems == [] and default_count == kinds * 3 + 1


def test_the_dlq_alarms_point_at_the_tiers_letters_and_the_throttles_at_the_accounts_limits(paging_synth):
    alarms = {
        a["Properties"]["AlarmName"]: a["Properties"] for a in paging_synth.resources("AWS::CloudWatch::Alarm").values()
    }
    for kind, command in (
        (Alarms.DLQ_DEPTH, "dlq inspect critical"),
        (Alarms.FAILURE_RATE, "dlq inspect critical"),
        (Alarms.THROTTLES, "doctor"),
        (Alarms.ERRORS, "status"),
    ):
        description = alarms[Alarms.name("pager", "critical", kind)]["AlarmDescription"]
        assert description.endswith(f"First run: tiered-jobs --stage pager {command}"), description


def test_the_command_check_fails_on_a_command_the_cli_does_not_have():
    assert resolve("tiered-jobs --stage dev dlq inspect critical") == []
    assert resolve("tiered-jobs --stage dev status") == []
    assert resolve("tiered-jobs --stage dev dlq peek critical")  # no such command
    assert resolve("tiered-jobs --stage dev dlq inspect")  # its TIER is missing
    assert resolve("tiered-jobs --stage dev status --verbose")  # no such option
    assert resolve("tiered-jobs --stages dev status")  # no such global option
    assert resolve("tiered-jobs --stage dev dlq")  # a group, not a command


def test_the_circuit_breakers_closing_page_has_the_same_shape():
    subject, message = closed_page("pager", "bulk", "5", "2026-12-02T11:00:00Z")
    page = json.loads(message)
    assert "bulk" in subject and page["Tier"] == "bulk" and "bulk" in page["Summary"]
    assert page["FirstCommand"].startswith("tiered-jobs --stage pager ") and resolve(page["FirstCommand"]) == []


def _configurations(synth) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for t in CHAT_CONFIGURATIONS for k, v in synth.resources(t).items()}


def test_each_chat_channel_is_a_chatbot_configuration_on_the_alarm_topic(paging_synth, default_synth):
    (topic,) = paging_synth.resources("AWS::SNS::Topic")
    (slack,) = paging_synth.resources("AWS::Chatbot::SlackChannelConfiguration").values()
    (teams,) = paging_synth.resources("AWS::Chatbot::MicrosoftTeamsChannelConfiguration").values()
    slack, teams = slack["Properties"], teams["Properties"]
    assert (slack["SlackWorkspaceId"], slack["SlackChannelId"]) == (SLACK["workspace_id"], SLACK["channel_id"])
    assert (teams["TeamId"], teams["TeamsTenantId"]) == (TEAMS["team_id"], TEAMS["tenant_id"])
    assert teams["TeamsChannelId"] == "19%3Ab6ef35dc342d56ba5654e6fc6d25a071%40thread.tacv2"  # CloudFormation's form
    for config in (slack, teams):
        assert config["SnsTopicArns"] == [{"Ref": topic}]
        assert config["ConfigurationName"].startswith("tiered-jobs-pager-")
        assert config["UserRoleRequired"] is False and len(config["GuardrailPolicies"]) == 1
    assert slack["IamRoleArn"] == teams["IamRoleArn"]
    assert _configurations(default_synth) == {}  # no chat setting, no configuration


def test_the_chat_role_and_guardrail_only_read_cloudwatch(paging_synth):
    (config,) = paging_synth.resources("AWS::Chatbot::SlackChannelConfiguration").values()
    role_id = config["Properties"]["IamRoleArn"]["Fn::GetAtt"][0]
    role = paging_synth.raw["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "chatbot.amazonaws.com"}
    (guardrail,) = config["Properties"]["GuardrailPolicies"]
    policy = paging_synth.raw["Resources"][guardrail["Ref"]]["Properties"]
    for document in [inline["PolicyDocument"] for inline in role["Policies"]] + [policy["PolicyDocument"]]:
        actions = [a for s in document["Statement"] for a in _list(s["Action"])]
        assert actions and all(re.fullmatch(r"cloudwatch:(Describe|Get|List)\w+", a) for a in actions), actions
        (alarms,) = [s for s in document["Statement"] if s["Action"] == "cloudwatch:DescribeAlarms"]
        assert "alarm:tiered-jobs-pager-*" in str(alarms["Resource"])  # the stage's alarms only


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_the_hop_walk_follows_every_page_into_each_chat_channel(paging_synth):
    hops, problems = walk(paging_synth.raw)
    assert problems == []
    chat = [h for h in hops if h.description.startswith("AWS::Chatbot::")]
    (topic,) = paging_synth.resources("AWS::SNS::Topic")
    paging = [
        a
        for a in paging_synth.resources("AWS::CloudWatch::Alarm").values()
        if {"Ref": topic} in a["Properties"].get("AlarmActions", [])
    ]
    # Every alarm that pages, into each of the two configurations (the probe alarm acts on the breaker only).
    assert len(chat) == 2 * len(paging)
    assert {h.caller.assumed_by for h in chat} == {"chatbot.amazonaws.com"}


def test_a_chat_role_that_cannot_read_the_alarms_or_be_assumed_is_reported(paging_synth):
    (config,) = paging_synth.resources("AWS::Chatbot::SlackChannelConfiguration").values()
    role_id = config["Properties"]["IamRoleArn"]["Fn::GetAtt"][0]
    blind = copy.deepcopy(paging_synth.raw)
    blind["Resources"][role_id]["Properties"]["Policies"] = []
    problems = walk(blind)[1]
    assert problems and all("cloudwatch:" in p and role_id in p for p in problems)
    foreign = copy.deepcopy(paging_synth.raw)
    foreign["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] = {
        "Service": "lambda.amazonaws.com"
    }
    assert any("chatbot.amazonaws.com may not assume" in p for p in walk(foreign)[1])
