"""Scheduled jobs in the template: settings validation, schedules, roles, DLQ, alarm, publisher policy."""

from __future__ import annotations

import json

import botocore.session
import pytest

from tests.cdk.infra_support import EXAMPLE_ROUTES, synthesize
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.names import PROJECT, STAGE_TAG, Outputs, Schedules, queue_name
from tiered_jobs.contract.schedules import (
    RETRY_MAX_ATTEMPTS,
    RETRY_MAX_EVENT_AGE_SECONDS,
)

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

SCHEDULES = {
    "nightly-report": {
        "expression": "cron(0 3 * * ? *)",
        "timezone": "Europe/Paris",
        "job_type": "analytics.record_event",
        "payload": {"event": "nightly"},
    },
    "settle": {
        "expression": "rate(15 minutes)",
        "job_type": "payments.settle",
        "payload": {},
        "flexible_window_minutes": 5,
    },
}


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    return synthesize(tmp_path_factory, "schedules", stage="sched", schedules=SCHEDULES)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """No periodic schedules, and disposable: nothing is retained."""
    return synthesize(tmp_path_factory, "no-schedules", stage="plain", disposable=True)


def _resources(synth, type_):
    return synth.resources(type_)


def _queue_ref(synth, tier, dlq=False):
    name = queue_name(synth.stage, tier, dlq=dlq)
    (key,) = [k for k, r in _resources(synth, "AWS::SQS::Queue").items() if r["Properties"].get("QueueName") == name]
    return {"Fn::GetAtt": [key, "Arn"]}


def _schedules_dlq(synth):
    (key,) = [
        k
        for k, r in _resources(synth, "AWS::SQS::Queue").items()
        if "QueueName" not in r["Properties"] and k.startswith("SchedulesDlq")
    ]
    return key


def _role_of(synth, schedule_name):
    (schedule,) = [
        r for r in _resources(synth, "AWS::Scheduler::Schedule").values() if r["Properties"]["Name"] == schedule_name
    ]
    return schedule["Properties"]["Target"]["RoleArn"]["Fn::GetAtt"][0]


def _attached(synth, role_key):
    """The ``AWS::IAM::Policy`` resources attached to the role (separate resources, with their own lifetime)."""
    return [
        policy
        for policy in _resources(synth, "AWS::IAM::Policy").values()
        if {"Ref": role_key} in policy["Properties"]["Roles"]
    ]


def _statements(synth, role_key):
    """Every statement the role is given: attached policies and its own inline ones."""
    found = [s for policy in _attached(synth, role_key) for s in policy["Properties"]["PolicyDocument"]["Statement"]]
    for inline in synth.raw["Resources"][role_key]["Properties"].get("Policies", []):
        found += inline["PolicyDocument"]["Statement"]
    return found


# -- template ---------------------------------------------------------------------------------


def test_each_schedule_targets_its_routed_tier_queue_in_the_stage_group(synth):
    schedules = {r["Properties"]["Name"]: r for r in _resources(synth, "AWS::Scheduler::Schedule").values()}
    (group,) = _resources(synth, "AWS::Scheduler::ScheduleGroup").values()
    assert group["Properties"]["Name"] == Schedules.group_name("sched")
    assert set(schedules) == set(SCHEDULES)
    nightly, settle = schedules["nightly-report"]["Properties"], schedules["settle"]["Properties"]
    assert nightly["GroupName"] == settle["GroupName"] == Schedules.group_name("sched")
    assert nightly["Target"]["Arn"] == _queue_ref(synth, "bulk")  # analytics.* -> bulk
    assert settle["Target"]["Arn"] == _queue_ref(synth, "critical")  # payments.* -> critical
    assert (nightly["ScheduleExpression"], nightly["ScheduleExpressionTimezone"]) == (
        "cron(0 3 * * ? *)",
        "Europe/Paris",
    )
    assert nightly["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert settle["FlexibleTimeWindow"] == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 5}
    for schedule in schedules.values():
        assert schedule["Properties"]["Target"]["DeadLetterConfig"] == {
            "Arn": {"Fn::GetAtt": [_schedules_dlq(synth), "Arn"]}
        }
        assert schedule["Properties"]["Target"]["RetryPolicy"] == {
            "MaximumEventAgeInSeconds": RETRY_MAX_EVENT_AGE_SECONDS,
            "MaximumRetryAttempts": RETRY_MAX_ATTEMPTS,
        }


def test_the_input_is_an_envelope_keyed_by_schedule_name_and_scheduled_time(synth):
    (nightly,) = [
        r["Properties"]
        for r in _resources(synth, "AWS::Scheduler::Schedule").values()
        if r["Properties"]["Name"] == "nightly-report"
    ]
    body = json.loads(nightly["Target"]["Input"])
    assert body == {
        "type": "analytics.record_event",
        "payload": {"event": "nightly"},
        "version": 1,
        "idempotency_key": "schedule:nightly-report:<aws.scheduler.scheduled-time>",
        "published_at": "<aws.scheduler.scheduled-time>",
    }


def test_schedule_properties_fit_schedulers_api_limits(synth):
    model = botocore.session.get_session().get_service_model("scheduler")
    retry = model.shape_for("RetryPolicy").members
    assert (
        retry["MaximumEventAgeInSeconds"].metadata["min"]
        <= RETRY_MAX_EVENT_AGE_SECONDS
        <= retry["MaximumEventAgeInSeconds"].metadata["max"]
    )
    assert (
        retry["MaximumRetryAttempts"].metadata["min"]
        <= RETRY_MAX_ATTEMPTS
        <= retry["MaximumRetryAttempts"].metadata["max"]
    )
    import re

    name = model.shape_for("Name").metadata
    for schedule in _resources(synth, "AWS::Scheduler::Schedule").values():
        assert re.fullmatch(name["pattern"], schedule["Properties"]["Name"])
        assert re.fullmatch(name["pattern"], schedule["Properties"]["GroupName"])


def test_the_periodic_role_may_send_only_to_its_schedules_queues_and_the_dlq(synth):
    role = _role_of(synth, "nightly-report")
    assert _role_of(synth, "settle") == role
    statements = _statements(synth, role)
    assert [s["Action"] for s in statements] == ["sqs:SendMessage"]
    expected = [
        _queue_ref(synth, "bulk"),
        _queue_ref(synth, "critical"),
        {"Fn::GetAtt": [_schedules_dlq(synth), "Arn"]},
    ]
    assert sorted(map(json.dumps, statements[0]["Resource"])) == sorted(map(json.dumps, expected))
    assert _queue_ref(synth, "transactional") not in statements[0]["Resource"]  # no schedule targets it


def test_the_scheduler_roles_trust_only_scheduler_for_this_account(synth):
    roles = {k: r for k, r in _resources(synth, "AWS::IAM::Role").items() if k.startswith("Schedules")}
    assert len(roles) == 2  # periodic + one-time
    for role in roles.values():
        (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert statement["Principal"] == {"Service": "scheduler.amazonaws.com"}
        assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}


def test_the_one_time_role_may_send_to_every_tier_queue_and_the_dlq_only(synth):
    (one_time,) = [k for k in _resources(synth, "AWS::IAM::Role") if k.startswith("SchedulesOneTimeRole")]
    (statement,) = _statements(synth, one_time)
    assert statement["Action"] == "sqs:SendMessage"
    expected = [_queue_ref(synth, t) for t in ("critical", "transactional", "bulk")]
    expected.append({"Fn::GetAtt": [_schedules_dlq(synth), "Arn"]})
    assert sorted(map(json.dumps, statement["Resource"])) == sorted(map(json.dumps, expected))


def test_the_schedules_dlq_is_encrypted_tls_only_and_alarmed_to_the_topic(synth):
    dlq = _schedules_dlq(synth)
    assert synth.raw["Resources"][dlq]["Properties"]["SqsManagedSseEnabled"] is True
    (policy,) = [
        p for p in _resources(synth, "AWS::SQS::QueuePolicy").values() if {"Ref": dlq} in p["Properties"]["Queues"]
    ]
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert (deny["Effect"], deny["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})
    (alarm,) = [
        a["Properties"]
        for a in _resources(synth, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == Schedules.dlq_alarm_name("sched")
    ]
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}}]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    topic = [k for k in _resources(synth, "AWS::SNS::Topic")]
    assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": topic[0]}]


def test_the_one_publisher_policy_creates_only_one_time_schedules_and_passes_only_the_one_time_role(synth):
    (policy,) = _resources(synth, "AWS::IAM::ManagedPolicy").values()  # the stage's one publisher policy
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    create, pass_role = statements["CreateAndCancelOneTimeJobs"], statements["PassTheOneTimeRoleToScheduler"]
    assert sorted(create["Action"]) == [
        "scheduler:CreateSchedule",
        "scheduler:DeleteSchedule",
        "scheduler:GetSchedule",
        "scheduler:UpdateSchedule",  # a debounced job's run, moved by each publish
    ]
    assert create["Resource"]["Fn::Join"][1][-1] == ":schedule/tiered-jobs-sched/once-*"
    (one_time,) = [k for k in _resources(synth, "AWS::IAM::Role") if k.startswith("SchedulesOneTimeRole")]
    assert pass_role["Action"] == "iam:PassRole"
    assert pass_role["Resource"] == {"Fn::GetAtt": [one_time, "Arn"]}
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}
    outputs = synth.raw["Outputs"]
    for key in (
        Schedules.OUTPUT_GROUP_NAME,
        Schedules.OUTPUT_ROLE_ARN,
        Schedules.OUTPUT_DLQ_ARN,
        Schedules.OUTPUT_DLQ_URL,
        Outputs.ROUTES,
        Outputs.PUBLISHER_POLICY_ARN,
    ):
        assert key in outputs
    parameters = {r["Properties"]["Name"] for r in _resources(synth, "AWS::SSM::Parameter").values()}
    assert {
        Schedules.ssm("sched", k) for k in (Schedules.SSM_GROUP_NAME, Schedules.SSM_ROLE_ARN, Schedules.SSM_DLQ_ARN)
    } <= parameters


def test_the_one_time_schedule_arn_reads_the_same_for_any_target(tmp_path_factory):
    """With a known region (``cdk synth`` sets one) the ``once-*`` ARN keeps its pseudo parameters, so
    the cdk-nag acknowledgment of its wildcard still matches (synthesis would fail otherwise)."""
    from infra.app import build_app, load_cdk_context

    app = build_app(
        load_cdk_context(stage="pinned"),
        outdir=str(tmp_path_factory.mktemp("pinned")),
        environ={"CDK_DEFAULT_ACCOUNT": "123456789012", "CDK_DEFAULT_REGION": "eu-west-1"},
    )
    template = app.synth().get_stack_by_name("TieredJobs-pinned").template
    (policy,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::IAM::ManagedPolicy"]
    (create,) = [
        s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Sid"] == "CreateAndCancelOneTimeJobs"
    ]
    assert {"Ref": "AWS::Region"} in create["Resource"]["Fn::Join"][1]


def test_without_schedules_there_is_no_periodic_role_but_one_time_jobs_work(plain):
    assert _resources(plain, "AWS::Scheduler::Schedule") == {}
    assert len(_resources(plain, "AWS::Scheduler::ScheduleGroup")) == 1
    roles = [k for k in _resources(plain, "AWS::IAM::Role") if k.startswith("Schedules")]
    assert len(roles) == 1 and roles[0].startswith("SchedulesOneTimeRole")


def _one_time_role(synth):
    (key,) = [k for k in _resources(synth, "AWS::IAM::Role") if k.startswith("SchedulesOneTimeRole")]
    return key


def test_the_one_time_role_and_the_dlq_live_as_long_as_the_group(synth, plain):
    """The group is retained (unless disposable) because it holds the pending one-time jobs; they fire with the
    one-time role and dead-letter to the schedules DLQ, so both must outlive a destroy as long as the group does."""
    for each, policy in ((synth, "Retain"), (plain, "Delete")):
        (group,) = _resources(each, "AWS::Scheduler::ScheduleGroup").values()
        role_key = _one_time_role(each)
        role = each.raw["Resources"][role_key]
        dlq = each.raw["Resources"][_schedules_dlq(each)]
        assert group.get("DeletionPolicy") == role.get("DeletionPolicy") == dlq.get("DeletionPolicy") == policy
        # Its permissions are in the role itself (what they are: the test below); an AWS::IAM::Policy would be
        # deleted with the stack, leaving the retained role unable to send.
        assert _attached(each, role_key) == [] and len(role["Properties"]["Policies"]) == 1
        # CloudFormation's name: a deploy after a destroy makes a new role beside the retained one, never
        # "already exists"; teardown finds them all by description and stage tag.
        assert "RoleName" not in role["Properties"] and "Path" not in role["Properties"]
        assert role["Properties"]["Description"] == {
            "Fn::Join": [
                "",
                [
                    f"EventBridge Scheduler: {PROJECT} stage {each.stage} in ",
                    {"Ref": "AWS::Region"},
                    ", one-time jobs, to any tier queue",
                ],
            ]
        }
        assert {"Key": STAGE_TAG, "Value": each.stage} in role["Properties"]["Tags"]


def test_the_one_time_roles_description_and_arn_fit_iam_and_scheduler():
    """The longest stage name in a long region name: IAM's description rule, and Scheduler's ``RoleArn``
    rule for the role's ARN (CloudFormation's name, no path)."""
    import re

    session = botocore.session.get_session()
    description = Schedules.one_time_role_description("s" * 20, "ap-southeast-4")
    rule = session.get_service_model("iam").shape_for("roleDescriptionType").metadata
    assert re.fullmatch(rule["pattern"], description) and len(description) <= rule["max"]
    arn = f"arn:aws:iam::123456789012:role/TieredJobs-{'s' * 20}-SchedulesOneTimeRoleC2DF5688-1A2B3C4D5E6F"
    assert re.fullmatch(session.get_service_model("scheduler").shape_for("RoleArn").metadata["pattern"], arn)


def test_the_one_time_role_sets_no_property_that_replaces_it(default_synth):
    """``Path`` and ``RoleName`` are replacement properties of ``AWS::IAM::Role``: setting either on a
    deployed stage makes a new role, and every pending one-time job (whose schedule names the old
    role's ARN) would fire into a role that lost its policy. Its description finds it instead."""
    roles = default_synth.resources("AWS::IAM::Role")
    [(logical_id, role)] = [(k, r) for k, r in roles.items() if k.startswith("SchedulesOneTimeRole")]
    assert logical_id == "SchedulesOneTimeRoleC2DF5688"  # the logical id a deployed stage has
    assert "Path" not in role["Properties"] and "RoleName" not in role["Properties"]
    assert role["DeletionPolicy"] == role["UpdateReplacePolicy"] == "Retain"


# -- settings validation ----------------------------------------------------------------------


def _settings(schedules):
    return AppSettings.from_context({"routes": EXAMPLE_ROUTES, "schedules": schedules})


def _one(**entry):
    return {"job": {"expression": "rate(1 hour)", "job_type": "demo.flaky", "payload": {"fail_times": 0}, **entry}}


def test_valid_schedules_are_read_with_their_routed_tier():
    settings = _settings(
        {
            **_one(),
            "other": {
                "expression": "cron(0 9 ? * MON-FRI *)",
                "timezone": "Asia/Kolkata",
                "job_type": "payments.settle",
                "tier": "bulk",
            },
        }
    )
    job, other = settings.schedules
    assert (job.name, job.tier, job.timezone, job.flexible_window_minutes) == ("job", "transactional", "UTC", None)
    assert (other.tier, other.timezone, other.payload) == ("bulk", "Asia/Kolkata", {})


@pytest.mark.parametrize(
    ("schedules", "message"),
    [
        (
            _one(expression="cron(0 9 * * *)"),
            "schedule 'job': 'cron(0 9 * * *)' has 5 field(s); EventBridge cron has 6",
        ),
        (_one(expression="cron(0 9 * * MON *)"), "exactly one of day-of-month and day-of-week must be '?'"),
        (_one(expression="cron(0 9 ? * ? *)"), "exactly one of day-of-month and day-of-week must be '?'"),
        (_one(expression="cron(60 9 * * ? *)"), "minutes: 60 is out of range 0-59"),
        (_one(expression="cron(0 24 * * ? *)"), "hours: 24 is out of range 0-23"),
        (_one(expression="cron(0 9 ? * FUNDAY *)"), "day-of-week: 'FUNDAY' is not a number 1-7 or SUN-SAT"),
        (_one(expression="cron(0 9 ? * 0 *)"), "day-of-week: 0 is out of range 1-7"),
        (_one(expression="cron(0 9 ? * FRI-MON *)"), "range 'FRI-MON' goes backwards"),
        (_one(expression="cron(0 9 ? * 2#1,3#1 *)"), "use one n#k term"),
        (_one(expression="cron(0 9 ? * 2/2 *)"), "'/' is not allowed in this field"),
        (_one(expression="cron(0 9 1,L * ? *)"), "L and nW must stand alone"),
        (_one(expression="cron(0 9 * * ? 1969)"), "year: 1969 is out of range 1970-2199"),
        (_one(expression="cron(0 0 30 2 ? *)"), "never fires again"),
        (_one(expression="cron(0 0 1 1 ? 2001)"), "never fires again"),
        (_one(expression="rate(0 minutes)"), "the value at least 1"),
        (_one(expression="rate(5 weeks)"), "the unit must be minute(s), hour(s) or day(s)"),
        (_one(expression="rate(1 minutes)"), "write rate(1 minute) (singular only for 1)"),
        (_one(expression="rate(5 minute)"), "write rate(5 minutes)"),
        (_one(expression="rate(1.5 hours)"), "is not a rate expression"),
        (_one(expression="at(2030-01-01T00:00:00)"), "at() is a one-time schedule"),
        (_one(expression="every day"), "is not a schedule expression"),
        (_one(timezone="Mars/Olympus"), "unknown time zone 'Mars/Olympus'; use an IANA name"),
        (_one(timezone="../etc/passwd"), "unknown time zone"),
        (_one(job_type="reports.build"), "job type 'reports.build' is unroutable (no route for job type"),
        (_one(tier="gold"), "tier 'gold' is unknown; use one of critical, transactional, bulk"),
        (_one(job_type="Bad Type"), "its jobs would be invalid envelopes: 'type' must match"),
        (_one(payload=[1, 2]), "'payload' must be a JSON object, got an array"),
        (_one(payload={"t": "<aws.scheduler.scheduled-time>"}), "which Scheduler would replace at each fire"),
        (_one(flexible_window_minutes=0), "flexible_window_minutes 0 is out of range; use a value between 1 and 1440"),
        (_one(every="day"), "schedule 'job': unknown key(s) 'every'"),
        ({"Nightly Report": {"expression": "rate(1 hour)", "job_type": "demo.flaky"}}, "invalid name"),
        ({"once-abc": {"expression": "rate(1 hour)", "job_type": "demo.flaky"}}, "reserved for one-time jobs"),
        ({"job": {"job_type": "demo.flaky"}}, "schedule 'job': expression is required"),
        ([], "schedules must be an object"),
    ],
)
def test_bad_schedules_are_refused_with_a_clear_message(schedules, message):
    with pytest.raises(SettingsError) as caught:
        _settings(schedules)
    assert message in str(caught.value)
