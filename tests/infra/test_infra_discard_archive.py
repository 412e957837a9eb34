"""The replay function's discard archive: a private, TLS-only, encrypted, versioned S3 bucket of the
stage that expires letters after ``discard_archive_days``, retained like the queues, written by the
replay function alone (``s3:PutObject`` under ``discarded/<stage>/``), and found by its output,
its SSM parameter and the function's environment."""

from __future__ import annotations

import pytest

from tests.infra.infra_support import logical_id
from tiered_jobs.cdk.settings import AppSettings
from tiered_jobs.contract.names import (
    STAGE_TAG,
    Env,
    Outputs,
    Ssm,
    discard_archive_prefix,
    function_name,
)

#: AWS's four public access switches (``PutPublicAccessBlock``): all on blocks every public ACL and policy.
PUBLIC_ACCESS_SWITCHES = ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")


def _bucket(synth) -> tuple[str, dict]:
    ((key, bucket),) = synth.resources("AWS::S3::Bucket").items()
    return key, bucket


def test_the_default_keeps_letters_a_year():
    assert AppSettings.from_context(None).discard_archive_days == 365
    assert AppSettings.from_context({"discard_archive_days": 30}).discard_archive_days == 30


@pytest.mark.parametrize("synth_name, days, policy", [("default_synth", 365, "Retain"), ("custom_synth", 30, "Delete")])
def test_the_bucket_is_private_encrypted_versioned_expiring_and_retained_unless_disposable(request, synth_name,
                                                                                            days, policy):
    synth = request.getfixturevalue(synth_name)
    key, bucket = _bucket(synth)
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == dict.fromkeys(PUBLIC_ACCESS_SWITCHES, True)
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]  # SSE-S3: no key policy for the role to need
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    rules = {rule["Id"]: rule for rule in props["LifecycleConfiguration"]["Rules"]}
    assert all(rule["Status"] == "Enabled" and "Prefix" not in rule and "Filter" not in rule for rule in rules.values())
    assert rules["ExpireDiscardedLetters"]["ExpirationInDays"] == days
    assert rules["ExpireReplacedVersions"]["NoncurrentVersionExpiration"] == {"NoncurrentDays": days}
    assert rules["ExpireReplacedVersions"]["ExpiredObjectDeleteMarker"] is True
    assert "BucketName" not in props  # CloudFormation names it TieredJobs-<stage>-..., lower-cased
    assert {"Key": STAGE_TAG, "Value": synth.stage} in props["Tags"]
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == (policy, policy)
    assert not [k for k, r in synth.raw["Resources"].items() if r["Type"].startswith("Custom::")
                or r["Type"] == "AWS::CloudFormation::CustomResource"], "no auto-delete custom resource"
    (bucket_policy,) = synth.resources("AWS::S3::BucketPolicy").values()
    assert bucket_policy["Properties"]["Bucket"] == {"Ref": key}


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_the_replay_function_may_only_put_objects_under_its_stage(request, synth_name):
    synth = request.getfixturevalue(synth_name)
    key, _ = _bucket(synth)
    replay = synth.raw["Resources"][logical_id(synth, "AWS::Lambda::Function",
                                               FunctionName=function_name(synth.stage, "replay"))]
    assert replay["Properties"]["Environment"]["Variables"][Env.DISCARD_ARCHIVE_BUCKET] == {"Ref": key}
    role = replay["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = [s for p in synth.resources("AWS::IAM::Policy").values() if {"Ref": role} in p["Properties"]["Roles"]
                  for s in p["Properties"]["PolicyDocument"]["Statement"] if key in str(s["Resource"])]
    assert statements == [{"Action": "s3:PutObject", "Effect": "Allow", "Resource": {"Fn::Join": ["", [
        {"Fn::GetAtt": [key, "Arn"]}, f"/{discard_archive_prefix(synth.stage)}*"]]}}]


def test_the_bucket_is_discoverable_by_output_and_ssm_parameter(default_synth):
    key, _ = _bucket(default_synth)
    assert default_synth.raw["Outputs"][Outputs.DISCARD_ARCHIVE_BUCKET]["Value"] == {"Ref": key}
    (parameter,) = [p for p in default_synth.resources("AWS::SSM::Parameter").values()
                    if p["Properties"]["Name"] == Ssm.discard_archive_bucket("dev")]
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
    for text in (f"output `{Outputs.DISCARD_ARCHIVE_BUCKET}`", Ssm.discard_archive_bucket("prod"),
                 f"s3://<bucket>/{discard_archive_prefix('<stage>', '<tier>')}", Env.DISCARD_ARCHIVE_BUCKET,
                 f"$BUCKET/{discard_archive_prefix('prod', 'critical')}", "aws s3 cp", "read_archive(path)",
                 "`discard_archive_days`", "tiered-jobs teardown"):
        assert text in discard, text
    assert "does not create that bucket" not in replay
