"""The replay function's discard archive: a private, TLS-only, encrypted, versioned S3 bucket of the
stage that expires letters after ``discard_archive_days``, retained like the queues (its TLS-only
policy too), written by the replay function alone (``s3:PutObject`` under ``discarded/<stage>/``),
its accesses logged to a bucket of the same kind, and found by its output, its SSM parameter and
the function's environment."""

from __future__ import annotations

import pytest

from tests.cdk.infra_support import logical_id
from tiered_jobs.cdk.settings import AppSettings
from tiered_jobs.contract.names import (
    STAGE_TAG,
    Env,
    Outputs,
    Ssm,
    discard_archive_prefix,
    function_name,
)

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

#: AWS's four public access switches (``PutPublicAccessBlock``): all on blocks every public ACL and policy.
PUBLIC_ACCESS_SWITCHES = ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")


def _bucket(synth) -> tuple[str, dict]:
    """The archive: the bucket that logs its accesses to the other one."""
    ((key, bucket),) = [
        (k, b) for k, b in synth.resources("AWS::S3::Bucket").items() if "LoggingConfiguration" in b["Properties"]
    ]
    return key, bucket


def _log_bucket(synth) -> tuple[str, dict]:
    key = _bucket(synth)[1]["Properties"]["LoggingConfiguration"]["DestinationBucketName"]["Ref"]
    return key, synth.raw["Resources"][key]


def _policy_of(synth, bucket: str) -> dict:
    (policy,) = [
        p for p in synth.resources("AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": bucket}
    ]
    return policy


def test_the_default_keeps_letters_a_year():
    assert AppSettings.from_context(None).discard_archive_days == 365
    assert AppSettings.from_context({"discard_archive_days": 30}).discard_archive_days == 30


@pytest.mark.parametrize("synth_name, days, policy", [("default_synth", 365, "Retain"), ("custom_synth", 30, "Delete")])
def test_the_bucket_is_private_encrypted_versioned_expiring_and_retained_unless_disposable(
    request, synth_name, days, policy
):
    synth = request.getfixturevalue(synth_name)
    key, bucket = _bucket(synth)
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == dict.fromkeys(PUBLIC_ACCESS_SWITCHES, True)
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]  # SSE-S3: no key policy for the role to need
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    rules = {rule["Id"]: rule for rule in props["LifecycleConfiguration"]["Rules"]}
    assert all(rule["Status"] == "Enabled" and "Prefix" not in rule and "Filter" not in rule for rule in rules.values())
    assert rules["ExpireDiscardedLetters"]["ExpirationInDays"] == days
    assert rules["ExpireReplacedVersions"]["NoncurrentVersionExpiration"] == {"NoncurrentDays": days}
    assert rules["ExpireReplacedVersions"]["ExpiredObjectDeleteMarker"] is True
    assert "BucketName" not in props  # CloudFormation names it TieredJobs-<stage>-..., lower-cased
    assert {"Key": STAGE_TAG, "Value": synth.stage} in props["Tags"]
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == (policy, policy)
    assert not [
        k
        for k, r in synth.raw["Resources"].items()
        if r["Type"].startswith("Custom::") or r["Type"] == "AWS::CloudFormation::CustomResource"
    ], "no auto-delete custom resource"
    assert len(synth.resources("AWS::S3::Bucket")) == 2  # the archive and its access-log bucket


@pytest.mark.parametrize("synth_name, policy", [("default_synth", "Retain"), ("custom_synth", "Delete")])
def test_each_buckets_tls_only_policy_is_retained_with_it(request, synth_name, policy):
    """enforce_ssl's statement is a BucketPolicy resource of its own: deleted with the stack while the bucket
    stays, the retained bucket would accept plain HTTP."""
    synth = request.getfixturevalue(synth_name)
    for key, bucket in (_bucket(synth), _log_bucket(synth)):
        bucket_policy = _policy_of(synth, key)
        assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == (policy, policy), key
        assert (bucket_policy.get("DeletionPolicy"), bucket_policy.get("UpdateReplacePolicy")) == (policy, policy), key
        (deny,) = [s for s in bucket_policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} and deny["Action"] == "s3:*"


@pytest.mark.parametrize("synth_name, days", [("default_synth", 365), ("custom_synth", 30)])
def test_the_archives_access_logs_go_to_a_private_encrypted_tagged_expiring_bucket(request, synth_name, days):
    """Who read, copied or deleted a discarded letter by hand (checkov CKV_AWS_18, cdk-nag AwsSolutions-S1)."""
    synth = request.getfixturevalue(synth_name)
    key, archive = _bucket(synth)
    log_key, logs = _log_bucket(synth)
    assert archive["Properties"]["LoggingConfiguration"] == {
        "DestinationBucketName": {"Ref": log_key},
        "LogFilePrefix": "discard-archive/",
    }
    props = logs["Properties"]
    assert props["PublicAccessBlockConfiguration"] == dict.fromkeys(PUBLIC_ACCESS_SWITCHES, True)
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]  # log delivery writes to SSE-S3 targets only
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    assert (rule["Status"], rule["ExpirationInDays"]) == ("Enabled", days) and "Filter" not in rule
    assert {"Key": STAGE_TAG, "Value": synth.stage} in props["Tags"]  # tiered-jobs teardown finds it
    assert "BucketName" not in props and "LoggingConfiguration" not in props  # logging the logs would recurse
    # Delivery by bucket policy, not by ACL: only S3's logging service, for the archive, in this account.
    (allow,) = [
        s for s in _policy_of(synth, log_key)["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"
    ]
    assert allow["Principal"] == {"Service": "logging.s3.amazonaws.com"} and allow["Action"] == "s3:PutObject"
    assert allow["Condition"]["ArnLike"] == {"aws:SourceArn": {"Fn::GetAtt": [key, "Arn"]}}
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert "AccessControl" not in props


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_the_replay_function_may_only_put_objects_under_its_stage(request, synth_name):
    synth = request.getfixturevalue(synth_name)
    key, _ = _bucket(synth)
    replay = synth.raw["Resources"][
        logical_id(synth, "AWS::Lambda::Function", FunctionName=function_name(synth.stage, "replay"))
    ]
    assert replay["Properties"]["Environment"]["Variables"][Env.DISCARD_ARCHIVE_BUCKET] == {"Ref": key}
    role = replay["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = [
        s
        for p in synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if key in str(s["Resource"])
    ]
    assert statements == [
        {
            "Action": "s3:PutObject",
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": [key, "Arn"]}, f"/{discard_archive_prefix(synth.stage)}*"]]},
        }
    ]


def test_the_bucket_is_discoverable_by_output_and_ssm_parameter(default_synth):
    key, _ = _bucket(default_synth)
    assert default_synth.raw["Outputs"][Outputs.DISCARD_ARCHIVE_BUCKET]["Value"] == {"Ref": key}
    (parameter,) = [
        p
        for p in default_synth.resources("AWS::SSM::Parameter").values()
        if p["Properties"]["Name"] == Ssm.discard_archive_bucket("dev")
    ]
    assert parameter["Properties"]["Value"] == {"Ref": key}
    assert Ssm.discard_archive_bucket("dev") == "/tiered-jobs/dev/discard-archive-bucket"


def test_the_archive_prefix_is_the_one_the_function_writes_under():
    from tiered_jobs.replay.archive import archive_from_env

    archive = archive_from_env("critical", s3=None, environ={Env.DISCARD_ARCHIVE_BUCKET: "b", Env.STAGE: "dev"})
    assert archive.prefix == discard_archive_prefix("dev", "critical") == "discarded/dev/critical/"
    assert archive.prefix.startswith(discard_archive_prefix("dev"))


def test_the_replay_guide_names_where_the_letters_go_and_how_to_read_them_back():
    from pathlib import Path

    replay = (Path(__file__).resolve().parents[2] / "docs" / "replay.md").read_text(encoding="utf-8")
    discard = replay.split("## Discard", 1)[1].split("\n## ", 1)[0]
    for text in (
        f"output `{Outputs.DISCARD_ARCHIVE_BUCKET}`",
        Ssm.discard_archive_bucket("prod"),
        f"s3://<bucket>/{discard_archive_prefix('<stage>', '<tier>')}",
        Env.DISCARD_ARCHIVE_BUCKET,
        f"$BUCKET/{discard_archive_prefix('prod', 'critical')}",
        "aws s3 cp",
        "read_archive(path)",
        "`discard_archive_days`",
        "tiered-jobs teardown",
    ):
        assert text in discard, text
    assert "does not create that bucket" not in replay
