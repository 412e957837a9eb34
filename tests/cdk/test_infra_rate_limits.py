"""Rate limits in the template: the bucket table, exactly the access each consumer needs, the
settings the consumer reads, the SSM parameter ``status`` reads, the dashboard; and the settings'
guardrails."""

from __future__ import annotations

import json

import pytest

from tests.cdk.infra_support import (
    find_consumer,
    policy_statements,
    referenced_ids,
    synthesize,
)
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.names import Alarms, Env, Metrics, Ssm
from tiered_jobs.contract.rate_limits import BUCKET_KEY_ATTRIBUTE, RateLimits

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

LIMITED = {
    "critical": {},
    "transactional": {"rate_limits": {"notifications.send_email": {"per_second": 14, "burst": 14}}},
    "bulk": {"rate_limit_per_second": 5},
}


@pytest.fixture(scope="module")
def limited_synth(tmp_path_factory):
    return synthesize(tmp_path_factory, "rate-limited", tiers=LIMITED)


def bucket_table(synth) -> str:
    (key,) = [
        k
        for k, r in synth.resources("AWS::DynamoDB::Table").items()
        if r["Properties"]["KeySchema"][0]["AttributeName"] == BUCKET_KEY_ATTRIBUTE
    ]
    return key


def test_no_rate_limit_no_bucket_table(tmp_path_factory):
    from tests.cdk.infra_support import synthesize_once

    tables = synthesize_once(tmp_path_factory, "default").resources("AWS::DynamoDB::Table").values()
    assert all(t["Properties"]["KeySchema"][0]["AttributeName"] != BUCKET_KEY_ATTRIBUTE for t in tables)


@pytest.mark.parametrize("tier", ["transactional", "bulk"])
def test_a_limited_consumer_may_read_and_update_only_its_own_tiers_buckets(limited_synth, tier):
    table = bucket_table(limited_synth)
    key, _ = find_consumer(limited_synth, "dev", tier)
    on_table = [s for s in policy_statements(limited_synth, key) if table in referenced_ids(s["Resource"])]
    assert on_table == [
        {
            "Action": ["dynamodb:GetItem", "dynamodb:UpdateItem"],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [table, "Arn"]},
            "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{tier}#*"]}},
        }
    ]


def test_the_bucket_actions_are_the_ones_the_limiter_calls(limited_synth):
    """The IAM actions match botocore's operations the runtime module calls (no more, no less)."""
    import ast
    from pathlib import Path

    import tiered_jobs.runtime.ratelimit as module

    tree = ast.parse(Path(module.__file__).read_text())
    called = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "dynamodb"
    }
    import botocore.session

    model = botocore.session.get_session().get_service_model("dynamodb")
    granted = {f"dynamodb:{op}" for op in model.operation_names if _snake(op) in called}
    assert granted == {"dynamodb:GetItem", "dynamodb:UpdateItem"}


def _snake(name: str) -> str:
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def alarm_names(synth) -> set[str]:
    return {a["Properties"]["AlarmName"] for a in synth.resources("AWS::CloudWatch::Alarm").values()}


def test_an_unlimited_tier_never_touches_the_buckets(limited_synth):
    table = bucket_table(limited_synth)
    key, consumer = find_consumer(limited_synth, "dev", "critical")
    statements = policy_statements(limited_synth, key)
    assert not any(table in referenced_ids(s["Resource"]) for s in statements)
    assert Env.RATE_LIMITS not in consumer["Properties"]["Environment"]["Variables"]
    assert Alarms.name("dev", "critical", Alarms.RATE_LIMITER) not in alarm_names(limited_synth)


def test_a_limited_consumer_reads_its_limits_and_pages_when_its_limiter_fails_for_three_minutes(limited_synth):
    key, consumer = find_consumer(limited_synth, "dev", "bulk")
    (alarm,) = [
        a
        for a in limited_synth.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == Alarms.name("dev", "bulk", Alarms.RATE_LIMITER)
    ]
    props = alarm["Properties"]
    assert (
        props["MetricName"],
        props["Statistic"],
        props["Period"],
        props["EvaluationPeriods"],
        props["Threshold"],
        props["ComparisonOperator"],
    ) == (Metrics.RATE_LIMITER_ERRORS, "Sum", 60, 3, 0, "GreaterThanThreshold")
    env = consumer["Properties"]["Environment"]["Variables"]
    assert RateLimits.from_json(env[Env.RATE_LIMITS]).describe() == "5/s (burst 5)"
    assert env[Env.RATE_LIMIT_TABLE] == {"Ref": bucket_table(limited_synth)}


def test_status_finds_the_limits_in_ssm(limited_synth):
    params = {
        p["Properties"]["Name"]: p["Properties"]["Value"]
        for p in limited_synth.resources("AWS::SSM::Parameter").values()
    }
    email = RateLimits.from_json(params[Ssm.tier("dev", "transactional", Ssm.TIER_RATE_LIMITS)])
    assert email.describe() == "notifications.send_email: 14/s (burst 14)"
    assert Ssm.tier("dev", "critical", Ssm.TIER_RATE_LIMITS) not in params


def test_the_dashboard_graphs_held_jobs_and_the_limit(limited_synth):
    (dashboard,) = limited_synth.resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert Metrics.RATE_LIMITED in body
    assert "bulk: rate limit 5/s (burst 5)" in body and "tier rate limit" in body


# --- settings ------------------------------------------------------------------------------


def tier_settings(**values):
    return AppSettings.from_context({"tiers": {"t": values}, "routes": {"*": "t"}}).tier("t")


def test_defaults_and_shapes():
    tier = tier_settings(rate_limit_per_second=2.5, rate_limits={"x.*": {"per_second": 14}})
    assert (tier.rate_limit_burst, tier.rate_limit_max_wait_seconds) == (3, 1.0)  # one second's worth; min(1, 30/2)
    assert tier.limits.bucket_for("t", "x.y").limit.burst == 14
    assert tier.limits.bucket_for("t", "other").name == "tier"
    assert tier_settings().limits is None
    assert tier_settings(rate_limit_per_second=5, timeout_seconds=1).rate_limit_max_wait_seconds == 0.5
    # a batch the wait bound cannot admit is fine: the jobs beyond it are held in SQS with their tokens
    assert tier_settings(rate_limit_per_second=0.5, rate_limit_burst=1, timeout_seconds=10).limits is not None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"rate_limit_burst": 5}, "rate_limit_burst needs rate_limit_per_second; set rate_limit_per_second"),
        ({"rate_limit_per_second": 0}, "per_second 0 is out of range; use 0.001111"),
        ({"rate_limit_per_second": 2000}, "to 1000 (what one DynamoDB item takes in writes per second)"),
        ({"rate_limit_per_second": "5"}, "per_second must be a number"),
        ({"rate_limit_per_second": 5, "rate_limit_burst": 0}, "burst must be a whole number of jobs from 1"),
        ({"rate_limit_per_second": 5, "rate_limit_burst": 2.5}, "burst must be a whole number"),
        ({"rate_limits": {"Email Sends": {"per_second": 1}}}, "is not a job type or glob"),
        ({"rate_limits": {"x.*": {"rate": 1}}}, "unknown key(s) 'rate'"),
        ({"rate_limits": {"x.*": {"burst": 1}}}, "per_second is required"),
        ({"rate_limits": ["x.*"]}, "rate_limits must be an object"),
        ({"rate_limit_max_wait_seconds": 2}, "has no effect without a rate limit"),
        ({"rate_limit_per_second": 5, "rate_limit_max_wait_seconds": 16}, "from 0 to timeout_seconds / 2 (15)"),
    ],
)
def test_impossible_combinations_fail_synthesis_naming_the_fix(values, message):
    with pytest.raises(SettingsError) as error:
        tier_settings(**values)
    assert str(error.value).startswith("tier 't': ")
    assert message in str(error.value)
