"""``TieredJobs`` in someone else's stack: settings in code, what it exposes, ``grant_publish``, one per stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam

from infra.app import load_cdk_context
from tiered_jobs.cdk import AppSettings, JobsCode, SettingsError, TieredJobs, add_nag_checks
from tiered_jobs.cdk.settings import report as report_module
from tiered_jobs.contract.names import (
    CONTEXT_KEY,
    LOCAL_OVERRIDES_CONTEXT_KEY,
    TEMPLATE_METADATA_KEY,
    Env,
    Outputs,
)

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

RESOURCES = {
    "invoices": {
        "kind": "table",
        "partition_key": "invoice_id",
        "job_types": ["invoices.create"],
        "access": "read_write",
    }
}
ROUTES = {"invoices.*": "transactional", "*": "bulk"}


@pytest.fixture
def jobs(tmp_path) -> JobsCode:
    folder = tmp_path / "src" / "jobs"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from . import invoices  # noqa: F401\n")
    (folder / "invoices.py").write_text("from tiered_jobs.runtime import job\n")
    return JobsCode(folder)


ROOT = Path(__file__).resolve().parents[2]


def _flags() -> dict[str, Any]:
    """The feature flags of this repository's cdk.json, as a `cdk init` app has its own."""
    return {k: v for k, v in load_cdk_context().items() if k != CONTEXT_KEY}


def _app(tmp_path: Path, **context: Any) -> cdk.App:
    return cdk.App(outdir=str(tmp_path / "cdk.out"), context={**_flags(), **context})


def _template(app: cdk.App, stack: cdk.Stack) -> dict[str, Any]:
    assembly = app.synth()
    return json.loads(Path(assembly.get_stack_artifact(stack.artifact_id).template_full_path).read_text())


def _resolved(stack: cdk.Stack, value: Any) -> Any:
    return stack.resolve(value)


def test_settings_in_code_are_validated_like_cdk_json_with_the_same_message(tmp_path, jobs):
    bad = {"tiers": {"critical": {"max_attempts": 0}}, "routes": {"*": "critical"}}
    with pytest.raises(SettingsError) as from_json:
        AppSettings.from_context(bad)
    stack = cdk.Stack(_app(tmp_path), "Billing")
    with pytest.raises(SettingsError) as from_code:
        TieredJobs(stack, "Jobs", jobs=jobs, **bad)
    assert str(from_code.value) == str(from_json.value)  # a tier's message names the tier and the key
    with pytest.raises(SettingsError) as unknown:
        TieredJobs(cdk.Stack(_app(tmp_path), "Other"), "Jobs", jobs=jobs, stge="dev")
    assert str(unknown.value).startswith("TieredJobs('Jobs'): unknown key(s) 'stge'; allowed keys: ")
    with pytest.raises(SettingsError, match="give settings= or keyword settings"):
        TieredJobs(
            cdk.Stack(_app(tmp_path), "Both"), "Jobs", jobs=jobs, settings=AppSettings.from_context({}), stage="dev"
        )


def test_it_exposes_what_users_wire_and_keeps_the_documented_output_names(tmp_path, jobs):
    app = _app(tmp_path)
    stack = cdk.Stack(app, "Billing")
    tiered = TieredJobs(stack, "Jobs", jobs=jobs, stage="billing", routes=ROUTES, resources=RESOURCES)
    tiers = ["critical", "transactional", "bulk"]
    assert list(tiered.queues) == list(tiered.dlqs) == list(tiered.tiers) == tiers
    assert set(tiered.tables) == {"idempotency", "unique", "batches", "invoices"}
    assert _resolved(stack, tiered.tables["invoices"].table_name) == {
        "Ref": stack.get_logical_id(tiered.tables["invoices"].node.default_child)
    }
    template = _template(app, stack)
    assert template["Metadata"][TEMPLATE_METADATA_KEY]["stage"] == "billing"
    assert template["Metadata"][TEMPLATE_METADATA_KEY]["jobs"]["module"] == "jobs"
    outputs = template["Outputs"]
    for key in (
        Outputs.ROUTES,
        Outputs.REPLAY_FUNCTION_NAME,
        Outputs.ALARM_TOPIC_ARN,
        Outputs.PUBLISHER_POLICY_ARN,
        Outputs.tier("critical", Outputs.QUEUE_URL),
        Outputs.resource("invoices"),
    ):
        assert key in outputs, key
    refs = {
        _resolved(stack, tiered.replay_function.function_name)["Ref"],
        _resolved(stack, tiered.alarm_topic.topic_arn)["Ref"],
        _resolved(stack, tiered.publisher_policy.managed_policy_arn)["Ref"],
    }
    assert refs <= set(template["Resources"])
    consumers = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and Env.JOB_MODULES in r["Properties"]["Environment"]["Variables"]
    ]
    assert len(consumers) == 3
    assert {c["Properties"]["Environment"]["Variables"][Env.JOB_MODULES] for c in consumers} == {"jobs"}
    # Only the tier that runs invoices.create is told the table's name.
    told = [c for c in consumers if Env.resource_var("invoices") in c["Properties"]["Environment"]["Variables"]]
    assert [c["Properties"]["Environment"]["Variables"][Env.TIER] for c in told] == ["transactional"]


def _statements(template: dict[str, Any], logical_id: str) -> list[dict[str, Any]]:
    resource = template["Resources"][logical_id]
    document = resource["Properties"].get("PolicyDocument") or resource["Properties"]["PolicyDocument"]
    return document["Statement"]


def test_grant_publish_gives_a_role_exactly_the_publisher_policy_and_nag_stays_clean(tmp_path, jobs):
    app = _app(tmp_path)
    add_nag_checks(app)
    stack = cdk.Stack(app, "Billing")
    tiered = TieredJobs(stack, "Jobs", jobs=jobs, stage="billing", routes=ROUTES, resources=RESOURCES)
    role = iam.Role(stack, "ApiRole", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    tiered.grant_publish(role)
    template = _template(app, stack)  # cdk-nag runs here: an unacknowledged finding raises
    (policy_id,) = [
        k
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy"
        and {"Ref": stack.get_logical_id(role.node.default_child)} in r["Properties"]["Roles"]
    ]
    (managed_id,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::IAM::ManagedPolicy"]
    granted, managed = _statements(template, policy_id), _statements(template, managed_id)
    assert granted == managed
    actions_granted = sorted(
        {a for s in granted for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    )
    assert actions_granted == [
        "dynamodb:DeleteItem",  # a unique job's lock given back when its send failed
        "dynamodb:GetItem",  # get_status: a job's state, progress and result from its record
        "dynamodb:PutItem",  # a unique job's lock; a queued job's cancel marker
        "dynamodb:UpdateItem",  # a running job asked to stop
        "iam:PassRole",
        "scheduler:CreateSchedule",
        "scheduler:DeleteSchedule",
        "scheduler:GetSchedule",
        "scheduler:UpdateSchedule",  # a debounced job's schedule moved to its last publish
        "sqs:SendMessage",
        "ssm:GetParameters",
    ]
    (send,) = [s for s in granted if s["Action"] == "sqs:SendMessage"]
    queue_arns = [_resolved(stack, q.queue_arn) for q in tiered.queues.values()]
    assert sorted(map(str, send["Resource"])) == sorted(map(str, queue_arns))  # the tier queues, never the DLQs


def test_grant_publish_to_a_principal_that_takes_no_policy_is_refused(tmp_path, jobs):
    stack = cdk.Stack(_app(tmp_path), "Billing")
    tiered = TieredJobs(stack, "Jobs", jobs=jobs, routes=ROUTES)
    with pytest.raises(ValueError, match="grant_publish needs a role, user or group"):
        tiered.grant_publish(iam.ServicePrincipal("sns.amazonaws.com"))


def test_one_construct_per_stack(tmp_path, jobs):
    stack = cdk.Stack(_app(tmp_path), "Billing")
    TieredJobs(stack, "Jobs", jobs=jobs, routes=ROUTES)
    with pytest.raises(SettingsError, match="already holds TieredJobs 'Billing/Jobs'; use one per stack"):
        TieredJobs(stack, "More", jobs=jobs, stage="other", routes=ROUTES)


def test_a_users_own_alarm_added_later_may_notify_the_alarm_topic(tmp_path, jobs):
    app = _app(tmp_path)
    stack = cdk.Stack(app, "Billing")
    tiered = TieredJobs(stack, "Jobs", jobs=jobs, routes=ROUTES)
    mine = cloudwatch.Alarm(
        stack,
        "InvoicesLate",
        metric=cloudwatch.Metric(namespace="Billing", metric_name="Late"),
        threshold=1,
        evaluation_periods=1,
    )
    mine.add_alarm_action(actions.SnsAction(tiered.alarm_topic))
    template = _template(app, stack)
    (topic_policy,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SNS::TopicPolicy"]
    (allow,) = [
        s
        for s in topic_policy["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "AllowThisStagesAlarmsToPublish"
    ]
    arns = allow["Condition"]["ArnEquals"]["aws:SourceArn"]
    assert _resolved(stack, mine.alarm_arn) in arns
    alarms = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert len(arns) == len(alarms)


def test_local_modes_overrides_apply_to_settings_given_in_code(tmp_path, jobs):
    app = _app(
        tmp_path,
        **{
            LOCAL_OVERRIDES_CONTEXT_KEY: {
                "settings": {"stage": "local", "disposable": True},
                "tier_settings": {"timeout_seconds": 5},
            }
        },
    )
    tiered = TieredJobs(
        cdk.Stack(app, "Billing"), "Jobs", jobs=jobs, stage="prod", tiers={"critical": {}}, routes={"*": "critical"}
    )
    assert (tiered.settings.stage, tiered.settings.disposable) == ("local", True)
    assert tiered.settings.tier("critical").timeout_seconds == 5


def test_local_modes_profile_keeps_what_the_app_set_and_the_template_lists_what_it_changed(tmp_path, jobs):
    """Local mode prints the list (emulator/deploy.py ``Assembly.profile_changes``); a real synthesis has none."""
    from types import SimpleNamespace

    from emulator.deploy import Assembly, local_overrides

    app = _app(tmp_path, **{LOCAL_OVERRIDES_CONTEXT_KEY: local_overrides()})
    stack = cdk.Stack(app, "Billing")
    own = {"critical": {"timeout_seconds": 20, "max_attempts": 2}}
    tiered = TieredJobs(stack, "Jobs", jobs=jobs, tiers=own, routes={"*": "critical"})
    critical = tiered.settings.tier("critical")
    assert (critical.timeout_seconds, critical.max_attempts, critical.max_concurrency) == (20, 2, 2)
    template = _template(app, stack)
    assert Assembly.profile_changes.fget(SimpleNamespace(template=template)) == [  # type: ignore[attr-defined]
        "tier critical: retry_schedule_seconds [5, 30, 120, 600] -> [1, 2, 3]",
        "tier critical: max_concurrency 20 -> 2",
    ]
    deployed = _app(tmp_path / "aws")
    real = cdk.Stack(deployed, "Billing")
    TieredJobs(real, "Jobs", jobs=jobs, tiers={"critical": {}}, routes={"*": "critical"})
    assert "local_profile" not in _template(deployed, real)["Metadata"][TEMPLATE_METADATA_KEY]


def test_a_job_folder_that_cannot_become_code_fails_when_declared(tmp_path):
    (tmp_path / "loose").mkdir()
    with pytest.raises(ValueError, match="has no __init__.py"):
        JobsCode(tmp_path / "loose")


BAD_SCHEMA = '{"type": "object", "properties": {"amount_cents": {"type": "integer"}}, "oneOf": [{}]}'
#: A library user's app.py (docs/library.md's shape): no try/except of its own around the construct.
USER_APP = """\
import aws_cdk as cdk
from tiered_jobs.cdk import JobsCode, TieredJobs

app = cdk.App()
TieredJobs(cdk.Stack(app, "Billing"), "Jobs", jobs=JobsCode("src/jobs"), stage="prod",
           routes={"invoices.*": "transactional", "*": "bulk"})
app.synth()
"""


def test_a_payload_schema_the_consumer_cannot_check_fails_synthesis_naming_the_file(tmp_path, jobs):
    (jobs.source().directory / "schemas").mkdir()
    (jobs.source().directory / "schemas" / "invoices.create.schema.json").write_text(BAD_SCHEMA)
    with pytest.raises(
        SettingsError,
        match=r"payload schema schemas/invoices\.create\.schema\.json: "
        r"unsupported keyword\(s\) oneOf; .* validate= hook$",
    ):
        TieredJobs(cdk.Stack(_app(tmp_path), "Billing"), "Jobs", jobs=jobs, stage="prod", routes=ROUTES)


def test_an_apps_uncaught_settings_error_is_one_line_at_synthesis(tmp_path, jobs):
    """As the CDK CLI runs an app (``CDK_OUTDIR`` set, stderr shown): one line, the fix in it, exit 1."""
    (jobs.source().directory / "schemas").mkdir()
    (jobs.source().directory / "schemas" / "invoices.create.schema.json").write_text(BAD_SCHEMA)
    (tmp_path / "app.py").write_text(USER_APP)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CDK_OUTDIR": str(tmp_path / "cdk.out"),
        "CDK_CONTEXT_JSON": json.dumps(_flags()),
    }
    result = subprocess.run(
        [sys.executable, "app.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(
        f"tiered_jobs settings: job folder {str(jobs.source().directory)!r}: payload schema "
        "schemas/invoices.create.schema.json: unsupported keyword(s) oneOf; supported: "
    ), line
    assert not (tmp_path / "cdk.out" / "manifest.json").exists()


def test_the_hook_prints_only_settings_errors_and_leaves_others_their_traceback(capsys):
    seen: list[type[BaseException]] = []
    hook = report_module._hook(lambda kind, error, traceback: seen.append(kind))
    hook(SettingsError, SettingsError("tier 'bulk': max_attempts 0 is out of range;\nuse 1..100"), None)
    assert capsys.readouterr().err == "tiered_jobs settings: tier 'bulk': max_attempts 0 is out of range; use 1..100\n"
    hook(RuntimeError, RuntimeError("a bug"), None)
    assert seen == [RuntimeError] and capsys.readouterr().err == ""
    assert getattr(sys.excepthook, report_module.MARK)  # importing tiered_jobs.cdk installed it
