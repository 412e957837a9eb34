"""The dashboard per job type: each tier's busiest job types (completed, failed for good, retried) as
Metrics Insights queries and their duration p50 / p99 as sorted searches, all on the dimension set the
consumer really emits; ``JobsEnvelopeTooNew`` beside the other outcomes; CloudWatch's dashboard limits."""

from __future__ import annotations

import json
import re

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_cloudwatch as cloudwatch

from tests.cdk.template_values import Concrete
from tiered_jobs.cdk.dashboard import TOP_JOB_TYPES, alarm_widgets
from tiered_jobs.contract.names import Metrics
from tiered_jobs.runtime.metrics import BatchMetrics

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

#: CloudWatch's documented dashboard quotas (CloudWatch service quotas, "Dashboards").
MAX_WIDGETS_PER_DASHBOARD = 500
MAX_METRICS_PER_WIDGET = 500
#: An alarm status widget's ``alarms``: 1 to 100 ARNs (CloudWatch API reference, "Dashboard Body Structure").
MAX_ALARMS_PER_WIDGET = 100
QUERY = re.compile(
    r"SELECT SUM\((?P<metric>\w+)\) FROM SCHEMA\((?P<namespace>\w+), (?P<dims>[\w, ]+)\) "
    r"WHERE Stage = '(?P<stage>[\w-]+)' AND Tier = '(?P<tier>[\w-]+)' "
    r"GROUP BY JobType ORDER BY SUM\(\) DESC LIMIT (?P<limit>\d+)"
)
SEARCH = re.compile(
    r"SORT\(SEARCH\('\{(?P<schema>[\w,]+)\} MetricName=\"(?P<metric>\w+)\" Stage=\"(?P<stage>[\w-]+)\" "
    r"Tier=\"(?P<tier>[\w-]+)\"', '(?P<statistic>p\d+)', (?P<period>\d+)\), MAX, DESC, (?P<limit>\d+)\)"
)


def widgets(synth) -> list[dict]:
    (dashboard,) = synth.resources("AWS::CloudWatch::Dashboard").values()
    return json.loads(Concrete(synth.raw).value(dashboard["Properties"]["DashboardBody"]))["widgets"]


def tiers(synth) -> list[str]:
    return sorted(
        f["Properties"]["Environment"]["Variables"]["TIERED_JOBS_TIER"]
        for f in synth.resources("AWS::Lambda::Function").values()
        if "TIERED_JOBS_TIER" in f["Properties"].get("Environment", {}).get("Variables", {})
        and f["Properties"]["Handler"].endswith("consumer.handler")
    )


def expressions(widget: dict) -> list[str]:
    return [m[-1]["expression"] for m in widget["properties"].get("metrics", []) if "expression" in m[-1]]


def emitted_dimension_sets(capsys) -> list[set[str]]:
    """The dimension sets of the EMF documents the consumer's metrics write for one job."""
    metrics = BatchMetrics("dev", "bulk")
    metrics.record("invoices.send", "succeeded", duration_ms=12.5)
    metrics.flush()
    (document,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    return [set(dims) for directive in document["_aws"]["CloudWatchMetrics"] for dims in directive["Dimensions"]]


def test_every_tier_shows_its_busiest_job_types_completed_failed_and_retried(default_synth, capsys):
    per_type = {dims for dims in map(frozenset, emitted_dimension_sets(capsys)) if Metrics.DIM_JOB_TYPE in dims}
    assert per_type == {frozenset({Metrics.DIM_STAGE, Metrics.DIM_TIER, Metrics.DIM_JOB_TYPE})}
    found: dict[str, set[str]] = {}
    for widget in widgets(default_synth):
        for expression in expressions(widget):
            if (query := QUERY.fullmatch(expression)) is not None:
                assert query["namespace"] == Metrics.NAMESPACE and int(query["limit"]) == TOP_JOB_TYPES
                # SCHEMA matches metrics with exactly these dimensions: the runtime's per-type set.
                assert {d.strip() for d in query["dims"].split(",")} == set(next(iter(per_type)))
                assert query["stage"] == default_synth.stage and query["tier"] in widget["properties"]["title"]
                assert widget["properties"]["metrics"][0][-1]["label"] == "${LABEL}"  # the job type, not the query
                found.setdefault(query["tier"], set()).add(query["metric"])
    assert found == {tier: {Metrics.SUCCEEDED, Metrics.FAILED, Metrics.RETRIED} for tier in tiers(default_synth)}


def test_every_tier_shows_the_duration_p50_and_p99_of_its_slowest_job_types(default_synth):
    found: dict[str, set[str]] = {}
    for widget in widgets(default_synth):
        for expression in expressions(widget):
            if (search := SEARCH.fullmatch(expression)) is not None:
                schema = (Metrics.NAMESPACE, Metrics.DIM_STAGE, Metrics.DIM_TIER, Metrics.DIM_JOB_TYPE)
                assert search["schema"].split(",") == list(schema) and search["metric"] == Metrics.DURATION
                assert search["stage"] == default_synth.stage and int(search["limit"]) == TOP_JOB_TYPES
                found.setdefault(search["tier"], set()).add(search["statistic"])
    assert found == {tier: {"p50", "p99"} for tier in tiers(default_synth)}


def test_envelopes_too_new_are_graphed_with_each_tiers_outcomes(default_synth):
    outcomes = [
        w for w in widgets(default_synth) if w["properties"].get("title", "").endswith(": jobs, and failure rate (%)")
    ]
    assert len(outcomes) == len(tiers(default_synth))
    for widget in outcomes:
        names = {m[1] for m in widget["properties"]["metrics"] if isinstance(m[0], str)}
        assert Metrics.TOO_NEW in names and Metrics.SUCCEEDED in names


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_the_dashboard_stays_within_cloudwatch_limits(request, synth_name):
    synth = request.getfixturevalue(synth_name)
    shown = widgets(synth)
    rate_limited = sum(1 for w in shown if ": rate limit " in w["properties"].get("title", ""))
    alarm_widgets = sum(1 for w in shown if w["type"] == "alarm")
    assert alarm_widgets == len(tiers(synth))  # fewer than 100 alarms a tier: one widget each
    assert len(shown) == 11 * len(tiers(synth)) + rate_limited <= MAX_WIDGETS_PER_DASHBOARD
    # A query or a sorted search shows at most TOP_JOB_TYPES series; every other entry is one metric.
    assert max(len(w["properties"].get("metrics", [])) for w in shown) * TOP_JOB_TYPES <= MAX_METRICS_PER_WIDGET


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_each_tier_shows_its_own_alarms_and_every_tier_alarm_is_shown_once(request, synth_name):
    synth = request.getfixturevalue(synth_name)
    alarms = synth.resources("AWS::CloudWatch::Alarm")
    shown: dict[str, list[str]] = {}
    for widget in widgets(synth):
        if widget["type"] == "alarm":
            arns = widget["properties"]["alarms"]
            assert 1 <= len(arns) <= MAX_ALARMS_PER_WIDGET
            tier = widget["properties"]["title"].removesuffix(": alarms")
            shown.setdefault(tier, []).extend(arns)
    assert sorted(shown) == tiers(synth)
    concrete = Concrete(synth.raw)
    for tier, arns in shown.items():
        # The ARN of each alarm of the tier (``Tier-<name>/Alarm-<kind>``), each once, no other tier's.
        owners = [key for key in alarms if key.startswith(f"Tier{tier.replace('-', '')}Alarm")]
        assert len(owners) >= 7
        assert sorted(arns) == sorted(concrete.value({"Fn::GetAtt": [key, "Arn"]}) for key in owners), tier


def test_more_alarms_than_a_widget_holds_are_split_and_numbered():
    stack = Stack(App(), "Alarms")
    metric = cloudwatch.Metric(namespace="Test", metric_name="Errors")
    alarms = [metric.create_alarm(stack, f"A{i}", threshold=1, evaluation_periods=1) for i in range(201)]
    shown = [body for widget in alarm_widgets("bulk", alarms) for body in stack.resolve(widget.to_json())]
    assert [len(w["properties"]["alarms"]) for w in shown] == [100, 100, 1]
    assert [w["properties"]["title"] for w in shown] == [
        "bulk: alarms (1 of 3)",
        "bulk: alarms (2 of 3)",
        "bulk: alarms (3 of 3)",
    ]
    assert [w["width"] for w in shown] == [24, 24, 24]
