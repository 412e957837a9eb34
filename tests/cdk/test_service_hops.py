"""Every service-to-service hop of the template is allowed by its policies (moto checks none of them).

The walker (``hops.py``) is proven both ways: the real templates pass, and each way a hop breaks on
AWS -- the policy the stack used to ship (Deny statements only), a key without CloudWatch, an
unconditional Deny, an Allow for another stage's alarms, a role without rights -- is reported.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.cdk.hops import (
    ESM_QUEUE_ACTIONS,
    HOPS,
    MAPPING_ACTIONS,
    Hop,
    Request,
    RoleCaller,
    ServiceCaller,
    conditions_hold,
    evaluate,
    role_hops,
    walk,
)
from tests.cdk.infra_support import find_consumer, find_queue
from tests.cdk.template_values import ACCOUNT, Concrete
from tiered_jobs.contract.names import DEFAULT_TIERS, Alarms

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

ALARM_HOPS_PER_ALARM = 2  # AlarmActions and OKActions


def _topic(raw: dict) -> str:
    (key,) = [k for k, r in raw["Resources"].items() if r["Type"] == "AWS::SNS::Topic"]
    return key


def _topic_policy(raw: dict) -> dict:
    (policy,) = [r for r in raw["Resources"].values() if r["Type"] == "AWS::SNS::TopicPolicy"]
    return policy["Properties"]["PolicyDocument"]


def _key_policy(raw: dict) -> dict:
    key = raw["Resources"][_topic(raw)]["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
    return raw["Resources"][key]["Properties"]["KeyPolicy"]


def _alarm_problems(problems: list[str]) -> list[str]:
    return [p for p in problems if p.startswith("AWS::CloudWatch::Alarm")]


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_every_service_to_service_hop_is_allowed(request, synth_name):
    synth = request.getfixturevalue(synth_name)
    hops, problems = walk(synth.raw)
    assert problems == []
    kinds: dict[str, int] = {}
    for hop in hops:
        kinds[hop.description.split()[0]] = kinds.get(hop.description.split()[0], 0) + 1
    alarms = len(synth.resources("AWS::CloudWatch::Alarm"))
    tiers = len(synth.resources("AWS::Lambda::EventSourceMapping"))
    assert kinds["AWS::CloudWatch::Alarm"] == ALARM_HOPS_PER_ALARM * alarms
    assert kinds["AWS::Lambda::EventSourceMapping"] == tiers  # consumers read their queue
    # ...dead-letter into their DLQ, send copies to their queue, release unique jobs' locks and archive the jobs
    # that end unrun; replay archives per tier and pauses its mapping; consumers count batch members in the
    # batches table and send a batch's callback or a chain's next link to every tier's queue
    assert kinds["AWS::Lambda::Function"] == (6 + 1 + tiers) * tiers
    counted = [h for h in hops if "(Environment.Variables.TIERED_JOBS_BATCH_TABLE)" in h.description]
    assert len(counted) == tiers and {synth.raw["Resources"][h.target]["Type"] for h in counted} == {
        "AWS::DynamoDB::Table"
    }
    callbacks = [h for h in hops if "(a batch's callback to" in h.description]
    assert len(callbacks) == tiers * tiers and {h.actions for h in callbacks} == {("sqs:SendMessage",)}
    assert {synth.raw["Resources"][h.target]["Type"] for h in callbacks} == {"AWS::SQS::Queue"}
    unique = [h for h in hops if "(Environment.Variables.TIERED_JOBS_UNIQUE_TABLE)" in h.description]
    assert len(unique) == tiers and {h.actions for h in unique} == {("dynamodb:DeleteItem",)}
    assert {synth.raw["Resources"][h.target]["Type"] for h in unique} == {"AWS::DynamoDB::Table"}
    assert kinds.get("AWS::SNS::Subscription", 0) == len(synth.resources("AWS::SNS::Subscription"))
    # Each schedule sends to its queue and, a fire undeliverable, to its DLQ (the stack's schedules all have one).
    assert kinds.get("AWS::Scheduler::Schedule", 0) == 2 * len(synth.resources("AWS::Scheduler::Schedule"))


def test_the_custom_stage_walks_its_periodic_schedule_to_its_queue(custom_synth):
    """The stack's own schedule (``cdk.json``'s ``schedules``): Scheduler sends to the routed tier queue
    with the periodic role, which may do exactly that."""
    hops, problems = walk(custom_synth.raw)
    hop, dead_letter = _schedule_hops(hops)
    assert problems == []
    assert hop.caller.assumed_by == "scheduler.amazonaws.com" and hop.caller.role.startswith("SchedulesPeriodicRole")
    assert hop.target == find_queue(custom_synth, "qa", "reports")[0] and hop.actions == ("sqs:SendMessage",)
    assert dead_letter.caller == hop.caller and dead_letter.target.startswith("SchedulesDlq")


def _schedule_hops(hops: list[Hop]) -> tuple[Hop, Hop]:
    """A template's one schedule: its hop to the target queue and the one to its DLQ."""
    (hop,) = [
        h for h in hops if h.description.startswith("AWS::Scheduler::Schedule") and "(Target.Arn)" in h.description
    ]
    (dead_letter,) = [
        h
        for h in hops
        if h.description.startswith("AWS::Scheduler::Schedule") and "(Target.DeadLetterConfig.Arn)" in h.description
    ]
    return hop, dead_letter


def _with_one_time_jobs(raw: dict[str, Any]) -> dict[str, Any]:
    """The template plus, per tier, a one-time schedule as the publisher creates it (``OneTimeJobs.create``): to the
    tier queue, with the one-time role, dead-lettering to the schedules DLQ."""
    raw = copy.deepcopy(raw)
    resources = raw["Resources"]
    (role,) = [
        k for k, r in resources.items() if r["Type"] == "AWS::IAM::Role" and k.startswith("SchedulesOneTimeRole")
    ]
    (dlq,) = [k for k, r in resources.items() if r["Type"] == "AWS::SQS::Queue" and k.startswith("SchedulesDlq")]
    for tier in DEFAULT_TIERS:
        queue = next(
            k
            for k, r in resources.items()
            if r["Type"] == "AWS::SQS::Queue" and r["Properties"].get("QueueName") == f"tiered-jobs-dev-{tier}"
        )
        resources[f"OneTime{tier}"] = {
            "Type": "AWS::Scheduler::Schedule",
            "Properties": {
                "ScheduleExpression": "at(2030-05-01T09:00:00)",
                "FlexibleTimeWindow": {"Mode": "OFF"},
                "Target": {
                    "Arn": {"Fn::GetAtt": [queue, "Arn"]},
                    "RoleArn": {"Fn::GetAtt": [role, "Arn"]},
                    "Input": "{}",
                    "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [dlq, "Arn"]}},
                },
            },
        }
    return raw


def test_one_time_jobs_reach_every_tier_and_dead_letter_with_the_one_time_role(default_synth):
    """What a pending one-time job needs when it fires (after a destroy too: the role is retained with its
    permissions inline): send to its tier queue and, undeliverable, to the schedules DLQ."""
    raw = _with_one_time_jobs(default_synth.raw)
    hops, problems = walk(raw)
    one_time = [h for h in hops if " OneTime" in h.description]
    assert problems == [] and len(one_time) == 2 * len(DEFAULT_TIERS)
    assert {h.caller.role for h in one_time} == {k for k in raw["Resources"] if k.startswith("SchedulesOneTimeRole")}
    role = next(r for k, r in raw["Resources"].items() if k.startswith("SchedulesOneTimeRole"))
    (send,) = role["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    send["Resource"] = [arn for arn in send["Resource"] if not arn["Fn::GetAtt"][0].startswith("SchedulesDlq")]
    problems = walk(raw)[1]
    assert len(problems) == len(DEFAULT_TIERS) and all("(Target.DeadLetterConfig.Arn)" in p for p in problems)


def test_the_custom_stage_walks_its_subscription_dead_letter_queues(custom_synth):
    hops, _ = walk(custom_synth.raw)
    subscriptions = [h for h in hops if h.description.startswith("AWS::SNS::Subscription")]
    assert len(subscriptions) == 2  # e-mail and HTTPS
    for hop in subscriptions:
        assert hop.caller == ServiceCaller(
            "sns.amazonaws.com", Concrete(custom_synth.raw).arn(_topic(custom_synth.raw))
        )
        assert hop.actions == ("sqs:SendMessage",)


def test_the_topic_admits_exactly_this_stages_alarms(default_synth):
    """``aws:SourceAccount`` is this account and ``aws:SourceArn`` lists every alarm of the stack, nothing else."""
    t = Concrete(default_synth.raw)
    (allow,) = [s for s in t.value(_topic_policy(default_synth.raw))["Statement"] if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": ACCOUNT}
    alarm_arns = {t.arn(k) for k, _ in t.resources("AWS::CloudWatch::Alarm")}
    assert set(allow["Condition"]["ArnEquals"]["aws:SourceArn"]) == alarm_arns
    assert {Alarms.name("dev", tier, Alarms.FAILURE_RATE) for tier in DEFAULT_TIERS} <= {
        arn.rsplit(":", 1)[1] for arn in alarm_arns
    }


# -- the walker catches what AWS would refuse ----------------------------------------------


def test_the_topic_policy_the_stack_used_to_ship_fails_every_alarm_hop(default_synth):
    """Only the two TLS Deny statements: SNS's default policy is replaced, so nothing allows CloudWatch."""
    raw = copy.deepcopy(default_synth.raw)
    document = _topic_policy(raw)
    document["Statement"] = [s for s in document["Statement"] if s["Effect"] == "Deny"]
    assert {s["Sid"] for s in document["Statement"]} == {"AllowPublishThroughSSLOnly", "DenyEveryActionWithoutTls"}
    hops, problems = walk(raw)
    alarm_problems = _alarm_problems(problems)
    assert len(alarm_problems) == ALARM_HOPS_PER_ALARM * len(default_synth.resources("AWS::CloudWatch::Alarm"))
    assert all("does not allow cloudwatch.amazonaws.com to sns:Publish" in p for p in alarm_problems)
    assert problems == alarm_problems  # nothing else is affected


def test_a_key_policy_without_cloudwatch_fails_every_alarm_hop(default_synth):
    raw = copy.deepcopy(default_synth.raw)
    policy = _key_policy(raw)
    policy["Statement"] = [
        s for s in policy["Statement"] if s.get("Principal") != {"Service": "cloudwatch.amazonaws.com"}
    ]
    _, problems = walk(raw)
    assert problems and all("key policy" in p and "cloudwatch.amazonaws.com" in p for p in problems)
    assert {p.split(" to ")[1].split()[0] for p in problems} == {"kms:Decrypt", "kms:GenerateDataKey*"}


def test_an_unconditional_deny_blocks_the_hop_but_a_tls_deny_does_not(default_synth):
    raw = copy.deepcopy(default_synth.raw)
    topic = {"Ref": _topic(raw)}
    _topic_policy(raw)["Statement"].append(
        {"Sid": "DenyAll", "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "sns:*", "Resource": topic}
    )
    _, problems = walk(raw)
    assert problems and all("denies cloudwatch.amazonaws.com sns:Publish (statement DenyAll)" in p for p in problems)


def test_an_allow_for_another_stages_alarms_does_not_count(default_synth):
    raw = copy.deepcopy(default_synth.raw)
    (allow,) = [s for s in _topic_policy(raw)["Statement"] if s["Effect"] == "Allow"]
    allow["Condition"]["ArnEquals"]["aws:SourceArn"] = (
        "arn:aws:cloudwatch:us-east-1:123456789012:alarm:tiered-jobs-qa-*"
    )
    assert len(_alarm_problems(walk(raw)[1])) == ALARM_HOPS_PER_ALARM * len(
        default_synth.resources("AWS::CloudWatch::Alarm")
    )
    allow["Condition"]["ArnEquals"]["aws:SourceArn"] = "*"
    allow["Condition"]["StringEquals"]["aws:SourceAccount"] = "999999999999"
    assert _alarm_problems(walk(raw)[1])


@pytest.mark.parametrize("action", ESM_QUEUE_ACTIONS)
def test_a_consumer_role_without_a_queue_right_is_reported(default_synth, action):
    raw = copy.deepcopy(default_synth.raw)
    key, consumer = find_consumer(default_synth, "dev", "critical")
    role = consumer["Properties"]["Role"]["Fn::GetAtt"][0]
    for policy in raw["Resources"].values():
        if policy["Type"] == "AWS::IAM::Policy" and {"Ref": role} in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                if isinstance(statement["Action"], list) and action in statement["Action"]:
                    statement["Action"] = [a for a in statement["Action"] if a != action]
    _, problems = walk(raw)
    assert len(problems) == 1 and "EventSourceMapping" in problems[0] and action in problems[0]
    assert find_queue(default_synth, "dev", "critical")[0] not in problems[0] or "does not allow" in problems[0]


def test_a_consumer_that_may_not_send_to_its_dlq_is_reported(default_synth):
    raw = copy.deepcopy(default_synth.raw)
    dlq_key = find_queue(default_synth, "dev", "bulk", dlq=True)[0]
    for policy in raw["Resources"].values():
        if policy["Type"] == "AWS::IAM::Policy":
            statements = policy["Properties"]["PolicyDocument"]["Statement"]
            policy["Properties"]["PolicyDocument"]["Statement"] = [
                s for s in statements if not ("sqs:SendMessage" in s["Action"] and dlq_key in str(s["Resource"]))
            ]
    problems = [p for p in walk(raw)[1] if p.startswith("AWS::Lambda::Function")]
    assert len(problems) == 1 and "sqs:SendMessage" in problems[0]


def test_a_subscription_dlq_without_its_queue_policy_is_reported(custom_synth):
    raw = copy.deepcopy(custom_synth.raw)
    for resource in raw["Resources"].values():
        if resource["Type"] == "AWS::SQS::QueuePolicy":
            document = resource["Properties"]["PolicyDocument"]
            document["Statement"] = [s for s in document["Statement"] if s["Effect"] == "Deny"]
    problems = walk(raw)[1]
    subscriptions = [p for p in problems if p.startswith("AWS::SNS::Subscription")]
    assert len(subscriptions) == 2
    assert all("does not allow sns.amazonaws.com to sqs:SendMessage" in p for p in subscriptions)
    # The custom stage's triggers lose their queues' statements too: each rule's tier queue and the triggers' DLQ.
    others = [p for p in problems if p not in subscriptions]
    assert len(others) == 4 and all("does not allow events.amazonaws.com to sqs:SendMessage" in p for p in others)


def test_a_dlq_that_does_not_admit_its_queue_is_reported(default_synth):
    raw = copy.deepcopy(default_synth.raw)
    dlq = find_queue(default_synth, "dev", "critical", dlq=True)[0]
    raw["Resources"][dlq]["Properties"]["RedriveAllowPolicy"]["sourceQueueArns"] = ["arn:aws:sqs:us-east-1:1:other"]
    (problem,) = walk(raw)[1]
    assert "RedriveAllowPolicy" in problem and dlq in problem


# -- the replay function's discard archive ----------------------------------------------------


def _bucket(raw: dict) -> str:
    """The discard archive: the bucket whose server access logs go to the other one."""
    (key,) = [
        k
        for k, r in raw["Resources"].items()
        if r["Type"] == "AWS::S3::Bucket" and "LoggingConfiguration" in r["Properties"]
    ]
    return key


def _log_bucket(raw: dict) -> str:
    return raw["Resources"][_bucket(raw)]["Properties"]["LoggingConfiguration"]["DestinationBucketName"]["Ref"]


def _bucket_policy(raw: dict, bucket: str | None = None) -> dict:
    bucket = bucket or _bucket(raw)
    (policy,) = [
        r
        for r in raw["Resources"].values()
        if r["Type"] == "AWS::S3::BucketPolicy" and r["Properties"]["Bucket"] == {"Ref": bucket}
    ]
    return policy["Properties"]["PolicyDocument"]


def _archive_problems(problems: list[str]) -> list[str]:
    return [p for p in problems if "s3:PutObject" in p and "logging.s3.amazonaws.com" not in p]


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_the_replay_function_may_archive_each_tiers_letters_over_tls(request, synth_name):
    """PutObject of a batch under ``discarded/<stage>/<tier>/``: the role allows it, and the bucket
    policy's TLS-only Deny (``aws:SecureTransport: false``) does not apply to the function's HTTPS call."""
    synth = request.getfixturevalue(synth_name)
    hops, problems = walk(synth.raw)
    archive = [h for h in hops if h.actions == ("s3:PutObject",) and isinstance(h.caller, RoleCaller)]
    tiers = len(synth.resources("AWS::Lambda::EventSourceMapping"))
    assert len(archive) == 2 * tiers and {h.target for h in archive} == {_bucket(synth.raw)}
    assert all(h.subresource.startswith(f"/discarded/{synth.stage}/") for h in archive)
    replay = [h for h in archive if h.caller.role.startswith("ReplayFunctionRole")]
    # ...and each consumer its own tier's jobs that end unrun (expired, cancelled), with its own role
    consumers = [h for h in archive if h not in replay]
    assert len(replay) == len(consumers) == tiers
    assert all(h.caller.role.startswith("Tier") and "ConsumerRole" in h.caller.role for h in consumers)
    assert problems == []
    (deny,) = _bucket_policy(synth.raw)["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_an_unconditional_deny_on_the_bucket_blocks_the_archive(default_synth):
    raw = copy.deepcopy(default_synth.raw)
    _bucket_policy(raw)["Statement"].append(
        {"Sid": "DenyAll", "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*", "Resource": "*"}
    )
    problems = walk(raw)[1]
    assert len(problems) == 2 * len(DEFAULT_TIERS)  # the replay function's and the consumers'
    assert all("s3:PutObject (statement DenyAll)" in p for p in problems)
    assert sum("denies role ReplayFunctionRole" in p for p in problems) == len(DEFAULT_TIERS)


def test_a_grant_on_another_stages_prefix_does_not_count(default_synth):
    raw = copy.deepcopy(default_synth.raw)
    for policy in raw["Resources"].values():
        if policy["Type"] != "AWS::IAM::Policy":
            continue
        for statement in policy.get("Properties", {}).get("PolicyDocument", {}).get("Statement", []):
            if statement.get("Action") == "s3:PutObject":
                statement["Resource"]["Fn::Join"][1][1] = "/discarded/prod/*"
    problems = walk(raw)[1]
    assert len(problems) == 2 * len(DEFAULT_TIERS) == len(_archive_problems(problems))
    assert all("the role's policy does not allow" in p for p in problems)


# -- the archive's server access logs -------------------------------------------------------------


def test_s3_may_deliver_the_archives_access_logs_over_tls_on_its_behalf_only(default_synth):
    """S3's log delivery (``logging.s3.amazonaws.com``) writes under the prefix, for the archive bucket alone."""
    hops, problems = walk(default_synth.raw)
    (hop,) = [
        h for h in hops if isinstance(h.caller, ServiceCaller) and h.caller.principal == "logging.s3.amazonaws.com"
    ]
    t = Concrete(default_synth.raw)
    assert (hop.target, hop.caller.source_arn) == (_log_bucket(default_synth.raw), t.arn(_bucket(default_synth.raw)))
    assert hop.subresource.startswith("/discard-archive/") and problems == []
    statements = _bucket_policy(default_synth.raw, _log_bucket(default_synth.raw))["Statement"]
    assert [s["Effect"] for s in statements].count("Deny") == 1  # the TLS-only one

    # Another bucket's logs (a SourceArn it does not name) or another account's are refused.
    raw = copy.deepcopy(default_synth.raw)
    raw["Resources"]["Other"] = {
        "Type": "AWS::S3::Bucket",
        "Properties": {
            "LoggingConfiguration": {
                "DestinationBucketName": {"Ref": _log_bucket(raw)},
                "LogFilePrefix": "discard-archive/",
            }
        },
    }
    (problem,) = walk(raw)[1]
    assert problem.startswith("AWS::S3::Bucket Other") and "does not allow logging.s3.amazonaws.com" in problem


def test_the_access_log_policy_without_its_allow_fails_the_delivery(default_synth):
    raw = copy.deepcopy(default_synth.raw)
    policy = _bucket_policy(raw, _log_bucket(raw))
    policy["Statement"] = [s for s in policy["Statement"] if s["Effect"] == "Deny"]
    (problem,) = walk(raw)[1]
    assert "logging.s3.amazonaws.com" in problem and "s3:PutObject" in problem


# -- a scheduler hop is one line -------------------------------------------------------------


def _with_schedule(raw: dict[str, Any], *, allow: bool) -> dict[str, Any]:
    """The template plus an EventBridge Scheduler schedule sending to the bulk queue with its own role."""
    raw = copy.deepcopy(raw)
    queue = next(
        k
        for k, r in raw["Resources"].items()
        if r["Type"] == "AWS::SQS::Queue" and r["Properties"].get("QueueName") == "tiered-jobs-dev-bulk"
    )
    raw["Resources"]["ScheduleRole"] = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "scheduler.amazonaws.com"}}
                ],
            }
        },
    }
    statements = [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": {"Fn::GetAtt": [queue, "Arn"]}}]
    raw["Resources"]["SchedulePolicy"] = {
        "Type": "AWS::IAM::Policy",
        "Properties": {
            "PolicyName": "p",
            "Roles": [{"Ref": "ScheduleRole"}],
            "PolicyDocument": {"Version": "2012-10-17", "Statement": statements if allow else []},
        },
    }
    raw["Resources"]["Nightly"] = {
        "Type": "AWS::Scheduler::Schedule",
        "Properties": {
            "ScheduleExpression": "cron(0 3 * * ? *)",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Target": {
                "Arn": {"Fn::GetAtt": [queue, "Arn"]},
                "RoleArn": {"Fn::GetAtt": ["ScheduleRole", "Arn"]},
                "Input": "{}",
            },
        },
    }
    return raw


def test_a_schedule_sending_to_a_queue_is_walked(default_synth):
    hops, problems = walk(_with_schedule(default_synth.raw, allow=True))
    (hop,) = [h for h in hops if h.description.startswith("AWS::Scheduler::Schedule")]
    assert hop.caller == RoleCaller("ScheduleRole", "scheduler.amazonaws.com") and hop.actions == ("sqs:SendMessage",)
    assert problems == []
    (problem,) = walk(_with_schedule(default_synth.raw, allow=False))[1]
    assert problem.startswith("AWS::Scheduler::Schedule Nightly") and "sqs:SendMessage" in problem


def test_a_hop_kind_is_one_line(default_synth):
    """A new kind of hop is one ``role_hops`` / ``service_hops`` entry; without it nothing is walked."""
    raw = _with_schedule(default_synth.raw, allow=False)
    without = tuple(source for source in HOPS if source is not HOPS[-1])
    assert walk(raw, without)[1] == []
    line = role_hops(
        "AWS::Scheduler::Schedule",
        "scheduler.amazonaws.com",
        role=("Target", "RoleArn"),
        target=("Target", "Arn"),
        actions=("sqs:SendMessage",),
    )
    assert len(walk(raw, (*without, line))[1]) == 1


# -- the evaluation rules themselves ---------------------------------------------------------


def test_conditions_are_proven_or_not():
    context = {
        "aws:securetransport": "true",
        "aws:sourceaccount": "1",
        "aws:sourcearn": "arn:aws:cloudwatch:r:1:alarm:a",
    }
    assert conditions_hold({"Bool": {"aws:SecureTransport": "false"}}, context) is False
    assert conditions_hold({"ArnLike": {"aws:SourceArn": "arn:aws:cloudwatch:r:1:alarm:*"}}, context) is True
    assert conditions_hold({"StringEquals": {"aws:SourceAccount": ["2", "1"]}}, context) is True
    assert conditions_hold({"StringEquals": {"aws:RequestedRegion": "r"}}, context) is None  # not modelled
    # a service principal belongs to no organization (a publisher in another account does: its own hop walk)
    assert conditions_hold({"StringEquals": {"aws:PrincipalOrgID": "o-1"}}, context) is False
    assert conditions_hold({"StringEquals": {"aws:PrincipalOrgID": "o-1"}}, {"aws:principalorgid": "o-1"}) is True
    assert conditions_hold({"StringEquals": {"aws:PrincipalArn": "x"}}, context) is False  # absent from the call
    assert conditions_hold({"StringNotEquals": {"aws:PrincipalArn": "x"}}, context) is True
    assert conditions_hold({"StringEqualsIfExists": {"aws:PrincipalArn": "x"}}, context) is True


def test_a_deny_on_a_key_the_walker_does_not_model_counts_as_applying():
    request = Request("sns:Publish", "arn:aws:sns:r:1:t", "service:cloudwatch.amazonaws.com", {})
    deny = {
        "Sid": "D",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sns:Publish",
        "Resource": "*",
        "Condition": {"StringNotEquals": {"aws:PrincipalOrgID": "o-1"}},
    }
    assert evaluate([deny], request, "arn:aws:iam::1:root").denied_by == ("D",)


def test_hops_describe_what_they_walk(default_synth):
    hops, _ = walk(default_synth.raw)
    assert all(isinstance(h, Hop) for h in hops)
    alarm_hop = next(h for h in hops if h.description.startswith("AWS::CloudWatch::Alarm"))
    assert alarm_hop.caller.principal == "cloudwatch.amazonaws.com"
    assert alarm_hop.caller.source_arn.startswith(f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:tiered-jobs-dev-")
    assert alarm_hop.target == _topic(default_synth.raw)


def test_the_replay_function_may_pause_each_tiers_mapping_and_without_its_statement_may_not(default_synth):
    hops, problems = walk(default_synth.raw)
    mapping_hops = [hop for hop in hops if "TIERED_JOBS_REPLAY_MAPPINGS" in hop.description]
    mappings = {lid for lid, _ in Concrete(default_synth.raw).resources("AWS::Lambda::EventSourceMapping")}
    assert {hop.target for hop in mapping_hops} == mappings and problems == []

    broken = copy.deepcopy(default_synth.raw)
    for resource in broken["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
            statements[:] = [s for s in statements if "lambda:UpdateEventSourceMapping" not in _as_list(s["Action"])]
    _, problems = walk(broken)
    # Every action on every mapping, and nothing else, is refused without that statement.
    assert len(problems) == len(mappings) * len(MAPPING_ACTIONS)
    assert all("TIERED_JOBS_REPLAY_MAPPINGS" in p for p in problems)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
