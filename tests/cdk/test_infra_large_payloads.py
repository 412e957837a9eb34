"""``large_payloads``: one private, TLS-only, encrypted, retained bucket for the stage, made only when a tier
opts in, whose lifecycle outlives every message that may point into it; the publisher may write under the
opted-in tiers' folders, their consumers read, and every tier tells publishers whether it offloads."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest

from tests.cdk.hops import HOPS, Hop, RoleCaller, _role_of, walk
from tests.cdk.infra_support import Synth, find_consumer, logical_id, policy_statements, synthesize_once
from tests.cdk.template_values import Concrete
from tiered_jobs.cdk.large_payloads import LIST_ACTIONS, READ_ACTIONS
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.large_payloads import NATIVE_REPLAY_BOUNDS_ENV, OFF, lifecycle_days, native_replay_days
from tiered_jobs.contract.names import Env, Outputs, Ssm, function_name
from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

PUBLIC_ACCESS_SWITCHES = ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")
#: critical with the defaults, bulk with its own threshold and a longer retention (its window the longest).
TIERS = {
    "critical": {"large_payloads": True},
    "transactional": {},
    "bulk": {"large_payloads": True, "large_payload_threshold_bytes": 262_144, "retention_days": 7},
}


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Synth:
    return synthesize_once(tmp_path_factory, "large-payloads", tiers=TIERS)


def _bucket(synth: Synth) -> tuple[str, dict]:
    ((key, bucket),) = [
        (k, b)
        for k, b in synth.resources("AWS::S3::Bucket").items()
        if any(
            rule["Id"] == "ExpireJobBodies"
            for rule in b["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])
        )
    ]
    return key, bucket


def _joined(value: object) -> str:
    """A value CloudFormation joins, with each reference written as its logical id."""
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_joined(part) for part in parts)
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return ".".join(value["Fn::GetAtt"])
    return str(value)


def _parameters(synth: Synth) -> dict[str, object]:
    return {p["Properties"]["Name"]: p["Properties"]["Value"] for p in synth.resources("AWS::SSM::Parameter").values()}


def test_the_setting_is_off_by_default_and_its_threshold_checked_early():
    tier = AppSettings.from_context(None).tiers[0]
    assert tier.large_payloads is False and tier.large_payload_threshold == MAX_JOB_MESSAGE_BYTES
    on = AppSettings.from_context({"tiers": {"bulk": {"large_payloads": True, "large_payload_threshold_bytes": 0}}})
    assert on.tiers[0].large_payload_threshold == 0  # every body through S3, as the clients' alwaysThroughS3
    with pytest.raises(SettingsError, match="large_payload_threshold_bytes is set but large_payloads is not"):
        AppSettings.from_context({"tiers": {"bulk": {"large_payload_threshold_bytes": 1000}}})
    with pytest.raises(SettingsError, match=f"large_payload_threshold_bytes .* between 0 and {MAX_JOB_MESSAGE_BYTES}"):
        AppSettings.from_context(
            {"tiers": {"bulk": {"large_payloads": True, "large_payload_threshold_bytes": MAX_JOB_MESSAGE_BYTES + 1}}}
        )


def test_no_tier_opts_in_no_bucket_and_every_tier_says_off(default_synth):
    names = _parameters(default_synth)
    assert not [
        b
        for b in default_synth.resources("AWS::S3::Bucket").values()
        if "ExpireJobBodies" in json.dumps(b["Properties"].get("LifecycleConfiguration"))
    ]
    for tier in ("critical", "transactional", "bulk"):
        assert names[Ssm.tier(default_synth.stage, tier, Ssm.TIER_LARGE_PAYLOADS)] == OFF


def test_one_private_encrypted_tls_only_retained_bucket_expiring_after_the_longest_window(synth):
    key, bucket = _bucket(synth)
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == dict.fromkeys(PUBLIC_ACCESS_SWITCHES, True)
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    settings = {tier.name: tier for tier in AppSettings.from_context({"tiers": TIERS}).tiers}
    expected = max(
        lifecycle_days(t.retention_days, t.dlq_retention_days, t.idempotency_ttl_seconds or 0)
        for t in settings.values()
        if t.large_payloads
    )
    assert rule["ExpirationInDays"] == expected == 2 * 7 + 14 + 21  # bulk: 7 + 14 days' window
    assert props["LoggingConfiguration"]["LogFilePrefix"] == "large-payloads/"
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == ("Retain", "Retain")
    (policy,) = [
        p for p in synth.resources("AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": key}
    ]
    assert policy["DeletionPolicy"] == "Retain"
    (deny,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_opted_in_consumers_read_the_bucket_and_know_their_setting_the_others_neither(synth):
    key, _ = _bucket(synth)
    for tier, threshold in (("critical", MAX_JOB_MESSAGE_BYTES), ("bulk", 262_144), ("transactional", None)):
        function_key, function = find_consumer(synth, synth.stage, tier)
        env = function["Properties"]["Environment"]["Variables"]
        reads = [
            s
            for s in policy_statements(synth, function_key)
            if s["Action"] == "s3:GetObject" and key in json.dumps(s["Resource"])
        ]
        if threshold is None:
            assert Env.LARGE_PAYLOADS not in env and reads == []
            continue
        assert json.loads(_joined(env[Env.LARGE_PAYLOADS])) == {"bucket": key, "threshold_bytes": threshold}
        assert len(reads) == 1


def test_publishers_write_only_under_the_opted_in_tiers_folders_and_read_every_tiers_setting(synth):
    key, _ = _bucket(synth)
    (policy,) = synth.resources("AWS::IAM::ManagedPolicy").values()
    (store,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s.get("Sid") == "StoreLargeJobBodies"]
    assert store["Action"] == "s3:PutObject"
    assert sorted(_joined(resource) for resource in store["Resource"]) == [f"{key}.Arn/bulk/*", f"{key}.Arn/critical/*"]
    names = _parameters(synth)
    assert names[Ssm.tier(synth.stage, "transactional", Ssm.TIER_LARGE_PAYLOADS)] == OFF
    bulk = json.loads(_joined(names[Ssm.tier(synth.stage, "bulk", Ssm.TIER_LARGE_PAYLOADS)]))
    assert bulk == {"bucket": key, "threshold_bytes": 262_144}
    assert Outputs.LARGE_PAYLOAD_BUCKET in synth.raw["Outputs"]


def test_the_replay_function_reads_a_letters_stored_body_and_deletes_none(synth):
    key, _ = _bucket(synth)
    function_key = logical_id(synth, "AWS::Lambda::Function", FunctionName=function_name(synth.stage, "replay"))
    on_the_bucket = [s for s in policy_statements(synth, function_key) if key in json.dumps(s["Resource"])]
    assert [s["Action"] for s in on_the_bucket] == ["s3:GetObject"]
    every_action = json.dumps([p["Properties"]["PolicyDocument"] for p in synth.resources("AWS::IAM::Policy").values()])
    assert "s3:DeleteObject" not in every_action  # only the lifecycle deletes a body (docs/publishing.md)


def test_the_replay_function_knows_each_opted_in_tiers_native_replay_bound(synth):
    """The lifecycle (49 days: bulk's 2 x 7 + 14 + 21) less each tier's retention and its DLQ's: the most
    days after its body was stored that a letter may be moved back by SQS, whose move restarts retention."""
    function_key = logical_id(synth, "AWS::Lambda::Function", FunctionName=function_name(synth.stage, "replay"))
    variables = synth.raw["Resources"][function_key]["Properties"]["Environment"]["Variables"]
    bounds = json.loads(variables[NATIVE_REPLAY_BOUNDS_ENV])
    assert bounds == {"critical": (49 - 4 - 14) * 86_400, "bulk": (49 - 7 - 14) * 86_400}
    assert bounds["critical"] == native_replay_days(49, 4, 14) * 86_400


# -- the hop walk -----------------------------------------------------------------------------------------


def large_payload_hops(t: Concrete) -> Iterator[Hop]:
    """Each opted-in consumer reads a body its publisher stored (``<tier>/<uuid>``) and one a Java or Python
    extended client stored (a bare UUID); the replay function reads one back for show and discard."""
    bucket = t.logical_id(t.template["Outputs"][Outputs.LARGE_PAYLOAD_BUCKET]["Value"])
    for function, props in t.resources("AWS::Lambda::Function"):
        variables = props.get("Environment", {}).get("Variables", {})
        if Env.LARGE_PAYLOADS in variables:
            tier = variables[Env.TIER]
            keys = [f"/{tier}/0a1b2c3d-uuid", "/9f2c4e6a-java-uuid"]
        elif Env.REPLAY_TIERS in variables:
            keys = ["/bulk/0a1b2c3d-uuid"]
        else:
            continue
        role = _role_of(t, function)
        assert role is not None
        for key in keys:
            yield Hop(
                f"{function} reads {key}", RoleCaller(role, "lambda.amazonaws.com"), bucket, READ_ACTIONS, (), key
            )


def listing_hops(t: Concrete) -> Iterator[Hop]:
    """Each opted-in consumer may list the bucket itself (no key): without it S3 answers a missing object with
    ``AccessDenied``, not ``NoSuchKey`` (S3's documented rule), and an expired body reads as a refusal."""
    bucket = t.logical_id(t.template["Outputs"][Outputs.LARGE_PAYLOAD_BUCKET]["Value"])
    for function, props in t.resources("AWS::Lambda::Function"):
        if Env.LARGE_PAYLOADS in props.get("Environment", {}).get("Variables", {}):
            role = _role_of(t, function)
            assert role is not None
            yield Hop(
                f"{function} lists the bucket", RoleCaller(role, "lambda.amazonaws.com"), bucket, LIST_ACTIONS, ()
            )


def test_every_hop_of_a_stage_with_large_payloads_is_allowed(synth):
    hops, problems = walk(synth.raw, sources=(*HOPS, large_payload_hops, listing_hops))
    reads = [hop for hop in hops if hop.actions == READ_ACTIONS]
    assert len(reads) == 2 * 2 + 1  # critical's and bulk's consumers, two keys each; the replay function
    assert len([hop for hop in hops if hop.actions == LIST_ACTIONS]) == 2  # critical's and bulk's consumers
    assert problems == []


def test_only_the_opted_in_consumers_may_list_and_only_the_stages_bucket(synth):
    """Least privilege: ``s3:ListBucket`` on the bucket's own ARN (never its objects, never ``*``), granted to
    the consumers that read bodies; the transactional consumer and the publisher get none."""
    key, _ = _bucket(synth)
    listing = {
        name: [
            s
            for s in policy_statements(synth, find_consumer(synth, synth.stage, name)[0])
            if "s3:ListBucket" in s["Action"]
        ]
        for name in ("critical", "bulk", "transactional")
    }
    for name in ("critical", "bulk"):
        (statement,) = listing[name]
        assert statement["Action"] == "s3:ListBucket" and _joined(statement["Resource"]) == f"{key}.Arn"
    assert listing["transactional"] == []
    every = json.dumps(
        [
            p["Properties"]["PolicyDocument"]
            for t in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
            for p in synth.resources(t).values()
        ]
    )
    assert every.count("s3:ListBucket") == 2  # the two consumers' statements, nothing else of the stack


def test_a_consumer_without_its_read_right_is_reported(synth):
    raw = copy.deepcopy(synth.raw)
    for policy in raw["Resources"].values():
        if policy["Type"] == "AWS::IAM::Policy":
            statements = policy["Properties"]["PolicyDocument"]["Statement"]
            statements[:] = [s for s in statements if s.get("Action") != "s3:GetObject"]
    problems = walk(raw, sources=(large_payload_hops,))[1]
    assert len(problems) == 5 and all("the role's policy does not allow" in p for p in problems)
