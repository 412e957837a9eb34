"""``tiered-jobs teardown`` and a stage's large-payload bucket (``large_payloads``): found by its stack's name and the
stage tag like the discard archive, emptied (unversioned job bodies) and deleted; a user's own bucket of the same
stack, without the tag, is never touched."""

from __future__ import annotations

import boto3

from tests.cli.test_teardown import _buckets
from tiered_jobs.contract.names import STAGE_TAG, stack_name


def _bucket(name: str, tags: dict[str, str] | None, bodies: int) -> str:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=name)
    if tags:
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in tags.items()]})
    for n in range(bodies):
        s3.put_object(Bucket=name, Key=f"critical/body-{n}", Body=b'{"type": "a.b"}')
    return name


def test_the_stages_large_payload_bucket_is_emptied_and_deleted_a_users_own_bucket_kept(run):
    prefix = stack_name("dev").lower()
    ours = _bucket(f"{prefix}-largepayloadsbucket3bd3e6d8-1a2b3c4d5e6f", {STAGE_TAG: "dev"}, bodies=3)
    theirs = _bucket(f"{prefix}-uploadsbucket3a4b5c6d-jkl", None, bodies=1)

    listed = run("--stage", "dev", "teardown", input="n\n")
    assert ours in listed.output and "3 object versions" in listed.output and theirs not in listed.output

    done = run("--stage", "dev", "teardown", input="y\n")
    assert done.exit_code == 0, done.output
    assert f"deleted bucket {ours} and its 3 object versions" in done.output
    assert _buckets("dev") == [theirs]
    assert boto3.client("s3").list_objects_v2(Bucket=theirs)["KeyCount"] == 1
