"""The discard archive: the S3 bucket where the replay function keeps every letter it discards.

``discard`` writes each batch of letters here (``tiered_jobs/replay/archive.py``, ``S3Archive``)
and deletes them from the DLQ only once S3 has stored them. The bucket is private, TLS-only,
encrypted (SSE-S3) and versioned, so an archived letter is never overwritten or deleted silently;
S3's lifecycle expires a letter after ``discard_archive_days``. Like the queues and tables, it is
retained when the stack is deleted unless the stage is disposable (``tiered-jobs teardown`` then
finds it by the stage tag and empties it). No custom resource empties it: a disposable stage's
stack deletes it only when empty.
"""

from __future__ import annotations

from typing import cast

from aws_cdk import CfnElement, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from tiered_jobs.contract.names import discard_archive_prefix

from .nag import acknowledge
from .settings import AppSettings

#: The one action ``S3Archive.write`` calls (``grant_put`` would add tagging, retention, legal hold, aborts).
ARCHIVE_WRITE_ACTIONS = ("s3:PutObject",)


class DiscardArchive(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: AppSettings) -> None:
        super().__init__(scope, construct_id)
        self.stage = settings.stage
        days = Duration.days(settings.discard_archive_days)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            versioned=True,  # an archived letter is never overwritten or deleted silently
            lifecycle_rules=[
                s3.LifecycleRule(id="ExpireDiscardedLetters", expiration=days),
                # A version overwritten or deleted by hand is kept as long again; then the marker goes too.
                s3.LifecycleRule(id="ExpireReplacedVersions", noncurrent_version_expiration=days,
                                 expired_object_delete_marker=True),
            ],
            removal_policy=settings.removal_policy,
        )
        acknowledge(
            self.bucket, "AwsSolutions-S1",
            "Only the replay function's role may write here, and only under its stage's prefix; every discard is "
            "logged by that function (the request, the letters' count and this archive's location) and versioning "
            "keeps every object ever written. An access-log bucket would be one more retained bucket per stage "
            "recording only those same writes.",
        )

    @property
    def bucket_name(self) -> str:
        return self.bucket.bucket_name

    def allow_writes(self, role: iam.IRole) -> None:
        """``s3:PutObject`` under ``discarded/<stage>/`` and nothing else: no read, list, delete or tagging."""
        objects = f"{discard_archive_prefix(self.stage)}*"
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(ARCHIVE_WRITE_ACTIONS), resources=[self.bucket.arn_for_objects(objects)])
        )
        stack = Stack.of(self)
        # An L2 bucket's default child is its CfnBucket, a CfnElement.
        bucket_id = stack.resolve(stack.get_logical_id(cast(CfnElement, self.bucket.node.default_child)))
        acknowledge(
            role, f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{objects}]",
            "Each discard writes a new object per batch (discarded/<stage>/<tier>/<time>-<id>.jsonl): the wildcard "
            "covers only new keys under this stage's prefix, for PutObject alone.",
        )
