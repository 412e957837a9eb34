"""The ``dev`` profile: a lighter stage (DLQ alarms only, no dashboard, no parameter nothing reads,
disposable) with the same data path, cdk-nag clean, and its fixed cost in docs/deploy.md from its template."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from bench import fixed_cost
from infra.app import PROFILE_OVERRIDE_KEY, load_cdk_context, settings_of
from tiered_jobs.cdk import JobsCode, TieredJobs, add_nag_checks
from tiered_jobs.cdk.deployment import ROLLBACK_ALARMS
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.names import Alarms, Outputs, PublisherParameters, Schedules, Ssm

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

DEPLOY = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")
#: What a dev stage drops: it observes and keeps less, and nothing else may differ.
OBSERVING = {"AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard", "AWS::SSM::Parameter"}


@pytest.fixture(scope="module")
def dev() -> dict[str, Any]:
    """``cdk.json``'s stage as ``npx cdk deploy -c profile=dev`` makes it; synthesis runs cdk-nag (a finding fails)."""
    return fixed_cost.synthesized_template(profile="dev")


@pytest.fixture(scope="module")
def full() -> dict[str, Any]:
    return fixed_cost.synthesized_template()


def _of(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def _block(text: str, name: str) -> str:
    match = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert match, f"no {name} block"
    return match.group(1)


# -- the setting --------------------------------------------------------------------------------


def test_the_profile_is_full_unless_dev_is_asked_for():
    assert AppSettings.from_context(None).profile == "full"
    dev = AppSettings.from_context({"profile": "dev"})
    assert (dev.profile, dev.disposable, dev.profile_rules.dashboard) == ("dev", True, False)


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"profile": "staging"}, "context 'tiered_jobs': profile 'staging' is not supported; use one of full, dev"),
        ({"profile": None}, "profile None is not supported; use one of full, dev"),
        (
            {"profile": "dev", "disposable": False},
            "profile 'dev' is disposable (a developer's stage keeps nothing when deleted), so 'disposable': false "
            "contradicts it; remove 'disposable' or use profile 'full'",
        ),
    ],
)
def test_a_profile_it_does_not_have_or_contradicts_is_refused_before_anything_is_built(raw, message):
    with pytest.raises(SettingsError) as error:
        AppSettings.from_context(raw)
    assert message in str(error.value)


def test_the_command_lines_profile_wins_over_cdk_json_and_its_disposable():
    """``-c profile=dev`` makes a developer's stage of an app whose cdk.json writes ``"disposable": false``."""
    context = {**load_cdk_context(), "stage": "dev-ana", PROFILE_OVERRIDE_KEY: "dev"}
    assert context["tiered_jobs"]["disposable"] is False

    settings = settings_of(cdk.App(context=context))

    assert (settings.stage, settings.profile, settings.disposable) == ("dev-ana", "dev", True)
    with pytest.raises(SettingsError, match="profile 'test' is not supported"):
        settings_of(cdk.App(context={**context, PROFILE_OVERRIDE_KEY: "test"}))


# -- the template -------------------------------------------------------------------------------


def test_a_dev_stage_has_no_dashboard(dev):
    assert _of(dev, "AWS::CloudWatch::Dashboard") == {}
    assert Outputs.DASHBOARD_NAME not in dev["Outputs"]


def test_a_dev_stage_keeps_the_alarms_that_protect_data_only(dev):
    tiers = AppSettings.from_context(load_cdk_context()["tiered_jobs"]).tier_names
    names = {r["Properties"]["AlarmName"] for r in _of(dev, "AWS::CloudWatch::Alarm").values()}

    assert names == {Alarms.name("dev", tier, Alarms.DLQ_DEPTH) for tier in tiers} | {Schedules.dlq_alarm_name("dev")}


def test_a_dev_stage_destroys_everything_with_its_stack(dev):
    kept = {k: r["Type"] for k, r in dev["Resources"].items() if r.get("DeletionPolicy", "Delete") != "Delete"}
    assert kept == {}


def test_a_dev_stage_writes_every_parameter_a_publisher_or_the_cli_reads_and_no_other(dev, full):
    tiers = AppSettings.from_context(load_cdk_context()["tiered_jobs"]).tier_names
    written = {r["Properties"]["Name"] for r in _of(dev, "AWS::SSM::Parameter").values()}
    unread = {Ssm.tier("dev", t, Ssm.TIER_DLQ_ARN) for t in tiers}
    unread |= {Ssm.publisher_policy_arn("dev"), Ssm.discard_archive_bucket("dev")}

    assert set(PublisherParameters.every("dev", tiers)) <= written
    assert {Ssm.tier("dev", t, Ssm.TIER_MAPPING_UUID) for t in tiers} <= written  # pause, resume, status
    assert written == {r["Properties"]["Name"] for r in _of(full, "AWS::SSM::Parameter").values()} - unread
    # ...and their values are still outputs.
    assert {Outputs.PUBLISHER_POLICY_ARN, Outputs.DISCARD_ARCHIVE_BUCKET} <= set(dev["Outputs"])


def test_the_data_path_is_the_full_stages(dev, full):
    """Queues, DLQs, functions, mappings, tables, roles and policies: the same resources with the same
    properties; only what observes (alarms, dashboard, parameters) and what deleting the stack keeps differ."""

    def data_path(template: dict[str, Any]) -> dict[str, Any]:
        return {
            k: {key: value for key, value in r.items() if key not in ("DeletionPolicy", "UpdateReplacePolicy")}
            for k, r in template["Resources"].items()
            if r["Type"] not in OBSERVING and r["Type"] != "AWS::SNS::TopicPolicy"  # it lists the alarms
        }

    assert data_path(dev) == data_path(full)


def test_alarms_that_act_stay_on_a_dev_stage_built_in_code(tmp_path):
    """A canary rolls back on its alarms and a circuit breaker opens on its own: a dev stage keeps both."""
    folder = tmp_path / "src" / "jobs"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    flags = {k: v for k, v in load_cdk_context().items() if k != "tiered_jobs"}
    app = cdk.App(outdir=str(tmp_path / "cdk.out"), context=flags)
    stack = cdk.Stack(app, "Billing")
    breaker = {"circuit_breaker_percent": 40, "circuit_breaker_min_jobs": 25, "circuit_breaker_minutes": 2}
    TieredJobs(
        stack,
        "Jobs",
        jobs=JobsCode(folder),
        stage="ana",
        profile="dev",
        tiers={"critical": {"deployment": "canary_10_percent_5_minutes", **breaker}, "bulk": {}},
        routes={"*": "critical"},
    )
    add_nag_checks(app)
    template = app.synth().get_stack_by_name("Billing").template  # cdk-nag runs: a finding fails here

    names = {r["Properties"]["AlarmName"] for r in _of(template, "AWS::CloudWatch::Alarm").values()}
    acting = {*ROLLBACK_ALARMS, Alarms.CIRCUIT_BREAKER, Alarms.CIRCUIT_PROBE}
    assert names == {Alarms.name("ana", "critical", kind) for kind in acting} | {
        Alarms.name("ana", "bulk", Alarms.DLQ_DEPTH),
        Schedules.dlq_alarm_name("ana"),
    }
    assert _of(template, "AWS::CloudWatch::Dashboard") == {}


# -- the cost -----------------------------------------------------------------------------------


def test_the_documented_dev_cost_is_the_scripts_output_on_the_dev_template(dev, full):
    costs = fixed_cost.fixed_costs(dev)

    assert _block(DEPLOY, "fixed-cost-dev") == fixed_cost.markdown(costs)
    full_total = fixed_cost.fixed_costs(full)["total_usd"]
    assert costs["total_usd"] < full_total
    assert f"**${costs['total_usd']:.2f}** a month before its first job, against **${full_total:.2f}**" in DEPLOY
    assert not [row for row in costs["fixed"] if row["item"] == "CloudWatch dashboard"]


def test_the_script_synthesizes_the_profile_it_is_given(monkeypatch, capsys):
    monkeypatch.setattr(fixed_cost, "synthesized_template", lambda profile=None: {"Resources": {}, "profile": profile})
    seen: list[Any] = []
    monkeypatch.setattr(fixed_cost, "fixed_costs", lambda template: seen.append(template["profile"]) or {"x": 1})

    assert fixed_cost.main(["--profile", "dev", "--json"]) == 0
    assert seen == ["dev"]
