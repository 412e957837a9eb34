"""Security review of the synthesized template, as an allow-list (issue: proof of effectively-once).

Each function's IAM may name only the resources it needs -- anything else fails, whatever it
is; every queue, topic and bucket refuses non-TLS access; everything at rest is encrypted.
"""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from functions.jobs.payments import TABLE as PAYMENTS_TABLE
from tests.cdk.infra_support import (
    find_consumer,
    find_queue,
    logical_id,
    policy_statements,
    referenced_ids,
    synthesize_once,
)
from tests.cdk.test_infra_large_payloads import TIERS as LARGE_PAYLOAD_TIERS
from tiered_jobs.cdk.nag import skip_checkov
from tiered_jobs.contract.names import Env, function_name

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

#: Actions AWS only grants on ``*`` (X-Ray has no resource-level permissions).
WILDCARD_ONLY_ACTIONS = {"xray:PutTelemetryRecords", "xray:PutTraceSegments"}


def _actions(statement: dict) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def _table(synth, key_name: str) -> str:
    (key,) = [
        k
        for k, r in synth.resources("AWS::DynamoDB::Table").items()
        if r["Properties"]["KeySchema"][0]["AttributeName"] == key_name
    ]
    return key


def _log_group(synth, function_key: str) -> str:
    return synth.raw["Resources"][function_key]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]


def _assert_allow_list(synth, function_key: str, allowed: set[str]) -> None:
    statements = policy_statements(synth, function_key)
    assert statements, "no policy found for the function's role"
    for statement in statements:
        assert statement["Effect"] == "Allow"
        for action in _actions(statement):
            assert action != "*" and not action.endswith(":*"), f"wildcard action {action}"
        if statement["Resource"] == "*":
            assert set(_actions(statement)) <= WILDCARD_ONLY_ACTIONS, statement
            continue
        extra = referenced_ids(statement["Resource"]) - allowed
        assert not extra, f"{function_key} may reach {sorted(extra)} via {statement}"
    role = synth.raw["Resources"][synth.raw["Resources"][function_key]["Properties"]["Role"]["Fn::GetAtt"][0]]
    assert "ManagedPolicyArns" not in role["Properties"], "an AWS-managed policy where a scoped one does"
    assert "Policies" not in role["Properties"]


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_each_consumer_reaches_only_its_queues_the_idempotency_table_and_its_logs(request, synth_name):
    """...and the unique jobs' table, where it only deletes a finished job's lock (test_infra_unique.py), the batches
    table, where it counts its finished batch members, and the other tiers' queues, where it only sends a batch's
    callback or a chain's next link."""
    synth = request.getfixturevalue(synth_name)
    routed_to_payments = {"dev": {"critical"}, "qa": {"transactional"}}
    tiers = [
        f["Properties"]["Environment"]["Variables"]["TIERED_JOBS_TIER"]
        for f in synth.resources("AWS::Lambda::Function").values()
        if "TIERED_JOBS_TIER" in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert len(tiers) >= 3
    for tier in tiers:
        key, consumer = find_consumer(synth, synth.stage, tier)
        allowed = {
            find_queue(synth, synth.stage, tier)[0],
            find_queue(synth, synth.stage, tier, dlq=True)[0],
            _table(synth, "id"),
            _table(synth, "lock"),
            _log_group(synth, key),
            _archive(synth),  # PutObject of the jobs that end unrun, under its tier's prefix (below)
            _table(synth, "batch"),
        }
        others = {find_queue(synth, synth.stage, other)[0] for other in tiers if other != tier}
        allowed |= others
        env = consumer["Properties"]["Environment"]["Variables"]
        if Env.resource_var(PAYMENTS_TABLE) in env:
            allowed.add(_table(synth, "account_id"))
        _assert_allow_list(synth, key, allowed)
        on_others = [s for s in policy_statements(synth, key) if others & set(referenced_ids(s["Resource"]))]
        assert {action for s in on_others for action in _actions(s)} == {"sqs:SendMessage"}
        assert (Env.resource_var(PAYMENTS_TABLE) in env) == (tier in routed_to_payments[synth.stage])
        on_bucket = [s for s in policy_statements(synth, key) if _archive(synth) in referenced_ids(s["Resource"])]
        assert [(s["Action"], s["Resource"]["Fn::Join"][1][1]) for s in on_bucket] == [
            ("s3:PutObject", f"/discarded/{synth.stage}/{tier}/*")
        ]


def _archive(synth) -> str:
    """The discard archive (the bucket that logs to the other: its access-log bucket)."""
    (bucket,) = [k for k, b in synth.resources("AWS::S3::Bucket").items() if "LoggingConfiguration" in b["Properties"]]
    return bucket


def test_replay_reaches_only_the_queues_it_serves_its_logs_its_archive_and_its_stages_mappings(default_synth):
    key = logical_id(default_synth, "AWS::Lambda::Function", FunctionName=function_name("dev", "replay"))
    queues = set(default_synth.resources("AWS::SQS::Queue"))
    bucket = _archive(default_synth)
    # Pause and resume: the stage's mappings, named by an ARN built from the account, region and partition.
    mappings = set(default_synth.resources("AWS::Lambda::EventSourceMapping"))
    pseudo = {"AWS::AccountId", "AWS::Partition", "AWS::Region"}
    _assert_allow_list(default_synth, key, queues | {_log_group(default_synth, key), bucket} | mappings | pseudo)
    on_bucket = [s for s in policy_statements(default_synth, key) if bucket in referenced_ids(s["Resource"])]
    assert [(_actions(s), s["Resource"]) for s in on_bucket] == [
        (["s3:PutObject"], {"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, "/discarded/dev/*"]]})
    ]


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_only_the_replay_function_and_the_consumers_may_reach_the_archive_bucket_and_no_role_its_access_logs(
    request, synth_name
):
    """The consumers only write there (the jobs that end unrun: test above); nobody else reaches it."""
    synth = request.getfixturevalue(synth_name)
    bucket = _archive(synth)
    (log_bucket,) = set(synth.resources("AWS::S3::Bucket")) - {bucket}
    functions = synth.resources("AWS::Lambda::Function").values()
    roles = {
        f["Properties"]["Role"]["Fn::GetAtt"][0]
        for f in functions
        if f["Properties"]["FunctionName"] == function_name(synth.stage, "replay")
        or "TIERED_JOBS_TIER" in f["Properties"].get("Environment", {}).get("Variables", {})
    }
    reaching = []
    for policy in (*synth.resources("AWS::IAM::Policy").values(), *synth.resources("AWS::IAM::ManagedPolicy").values()):
        if bucket in referenced_ids(policy["Properties"]["PolicyDocument"]):
            ((role,),) = [[r["Ref"] for r in policy["Properties"]["Roles"]]]
            assert role in roles
            reaching.append(role)
        assert log_bucket not in referenced_ids(policy["Properties"]["PolicyDocument"])  # S3 delivers; nobody else
    assert set(reaching) == roles


@pytest.mark.parametrize(
    "resource_type, policy_type, ref_key, must_deny",
    [
        ("AWS::SQS::Queue", "AWS::SQS::QueuePolicy", "Queues", {"sqs:*"}),
        (
            "AWS::SNS::Topic",
            "AWS::SNS::TopicPolicy",
            "Topics",
            {"sns:Publish", "sns:Subscribe", "sns:GetTopicAttributes", "sns:SetTopicAttributes", "sns:DeleteTopic"},
        ),
        ("AWS::S3::Bucket", "AWS::S3::BucketPolicy", "Bucket", {"s3:*"}),
    ],
)
@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_every_queue_topic_and_bucket_denies_non_tls_access(
    request, synth_name, resource_type, policy_type, ref_key, must_deny
):
    synth = request.getfixturevalue(synth_name)
    denied: dict[str, set[str]] = {}
    for policy in synth.resources(policy_type).values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if (
                statement["Effect"] == "Deny"
                and statement.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
                and statement["Principal"] in ("*", {"AWS": "*"})
            ):
                for ref in referenced_ids(policy["Properties"][ref_key]):
                    denied.setdefault(ref, set()).update(_actions(statement))
    for key in synth.resources(resource_type):
        assert must_deny <= denied.get(key, set()), f"{key} does not deny {must_deny - denied.get(key, set())}"


def test_everything_at_rest_is_encrypted(default_synth):
    for key, queue in default_synth.resources("AWS::SQS::Queue").items():
        props = queue["Properties"]
        assert props.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in props, key
    for key, table in default_synth.resources("AWS::DynamoDB::Table").items():
        assert table["Properties"]["SSESpecification"]["SSEEnabled"] is True, key
    for key, topic in default_synth.resources("AWS::SNS::Topic").items():
        assert "KmsMasterKeyId" in topic["Properties"], key
    for key, k in default_synth.resources("AWS::KMS::Key").items():
        assert k["Properties"]["EnableKeyRotation"] is True, key
    for key, bucket in default_synth.resources("AWS::S3::Bucket").items():
        (rule,) = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms"), key


#: checkov's S3 checks the buckets meet or justify (CKV_AWS_18: access logging, CKV_AWS_21: versioning).
S3_CHECKS = {"CKV_AWS_18": "LoggingConfiguration", "CKV_AWS_21": "VersioningConfiguration"}


@pytest.fixture(scope="module")
def large_payloads_synth(tmp_path_factory):
    """The large payloads' module's synthesis (the same name and settings: one synthesis per process)."""
    return synthesize_once(tmp_path_factory, "large-payloads", tiers=LARGE_PAYLOAD_TIERS)


@pytest.mark.parametrize("synth_name", ["default_synth", "large_payloads_synth"])
def test_every_bucket_is_logged_and_versioned_or_says_why_not_where_checkov_reads_it(request, synth_name):
    """A bucket without access logging or versioning carries checkov's skip of the check, with its reason, in
    its own metadata: checkov then reports it as justified, and nothing goes unexplained."""
    synth = request.getfixturevalue(synth_name)
    buckets = synth.resources("AWS::S3::Bucket")
    assert len(buckets) == (2 if synth_name == "default_synth" else 3)
    for key, bucket in buckets.items():
        skips = {skip["id"]: skip["comment"] for skip in bucket.get("Metadata", {}).get("checkov", {}).get("skip", [])}
        for check, prop in S3_CHECKS.items():
            met = prop in bucket["Properties"] and (
                prop != "VersioningConfiguration" or bucket["Properties"][prop]["Status"] == "Enabled"
            )
            assert met != (check in skips), f"{key}: {check} {'met and skipped' if met else 'neither met nor skipped'}"
            if check in skips:
                assert len(skips[check]) > 40, f"{key}: {check}'s skip says too little: {skips[check]!r}"


def test_a_checkov_skip_needs_a_reason_and_a_second_one_for_a_check_replaces_the_first():
    stack = Stack(App(), "Skips")
    bucket = s3.Bucket(stack, "Bucket")
    with pytest.raises(ValueError, match=r"Skips/Bucket: a checkov skip of CKV_AWS_21 needs a comment"):
        skip_checkov(bucket, "CKV_AWS_21", "  ")
    skip_checkov(bucket, "CKV_AWS_21", "first")
    skip_checkov(bucket, "CKV_AWS_18", "logs")
    skip_checkov(bucket, "CKV_AWS_21", "second")
    (resource,) = Template.from_stack(stack).find_resources("AWS::S3::Bucket").values()
    assert resource["Metadata"]["checkov"] == {
        "skip": [{"id": "CKV_AWS_18", "comment": "logs"}, {"id": "CKV_AWS_21", "comment": "second"}]
    }
