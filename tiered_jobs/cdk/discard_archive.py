"""The discard archive: the S3 bucket where the replay function keeps every letter it discards.

``discard`` writes each batch of letters here (``tiered_jobs/replay/archive.py``, ``S3Archive``)
and deletes them from the DLQ only once S3 has stored them. The bucket is private, TLS-only,
encrypted (SSE-S3) and versioned, so an archived letter is never overwritten or deleted silently;
S3's lifecycle expires a letter after ``discard_archive_days``. Its server access logs go to a
bucket of their own (private, TLS-only, SSE-S3, expired after as many days). Like the queues and
tables, both buckets and their policies are retained when the stack is deleted unless the stage is
disposable (``tiered-jobs teardown`` then finds them by the stage tag and empties them). No custom
resource empties them: a disposable stage's stack deletes them only when empty.
"""

from __future__ import annotations

from typing import cast

from aws_cdk import CfnElement, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from tiered_jobs.contract.names import discard_archive_prefix

from .buckets import private_bucket
from .nag import acknowledge, skip_checkov
from .settings import AppSettings

#: The one action ``S3Archive.write`` calls (``grant_put`` would add tagging, retention, legal hold, aborts).
ARCHIVE_WRITE_ACTIONS = ("s3:PutObject",)


#: Where the archive's server access logs go in the access-log bucket.
ACCESS_LOG_PREFIX = "discard-archive/"


class DiscardArchive(Construct):
    """The stage's bucket of discarded letters, each archived whole before the replay function deletes it."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: AppSettings) -> None:
        super().__init__(scope, construct_id)
        self.stage = settings.stage
        days = Duration.days(settings.discard_archive_days)
        # Who read, copied or deleted a discarded letter by hand: the replay function's logs show only
        # its own writes. Kept as long as the letters, retained and tagged like the archive.
        self.access_logs = private_bucket(
            self,
            "AccessLogs",
            lifecycle_rules=[s3.LifecycleRule(id="ExpireAccessLogs", expiration=days)],
            removal_policy=settings.removal_policy,
        )
        acknowledge(
            self.access_logs,
            "AwsSolutions-S1",
            "This is the access-log bucket of the discard archive: logging it as well would only record S3's own "
            "log deliveries.",
        )
        skip_checkov(
            self.access_logs,
            "CKV_AWS_18",
            "The access-log bucket of the discard archive and the large job bodies: logging it too would only "
            "record S3's own log deliveries.",
        )
        skip_checkov(
            self.access_logs,
            "CKV_AWS_21",
            "Server access logs: S3's logging service writes each object once under a new key and no role of "
            "the stack may reach the bucket, so no version is ever overwritten; the lifecycle expires them.",
        )
        self.bucket = private_bucket(
            self,
            "Bucket",
            versioned=True,  # an archived letter is never overwritten or deleted silently
            lifecycle_rules=[
                s3.LifecycleRule(id="ExpireDiscardedLetters", expiration=days),
                # A version overwritten or deleted by hand is kept as long again; then the marker goes too.
                s3.LifecycleRule(
                    id="ExpireReplacedVersions", noncurrent_version_expiration=days, expired_object_delete_marker=True
                ),
            ],
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix=ACCESS_LOG_PREFIX,
            removal_policy=settings.removal_policy,
        )
        # enforce_ssl's TLS-only statement lives in a BucketPolicy resource of its own, deleted with the
        # stack by default: a retained bucket must keep its policy, or it would serve plain HTTP.
        for bucket in (self.bucket, self.access_logs):
            assert bucket.policy is not None  # enforce_ssl made it
            bucket.policy.apply_removal_policy(settings.removal_policy)

    @property
    def bucket_name(self) -> str:
        return self.bucket.bucket_name

    def allow_writes(self, role: iam.IRole, tier: str | None = None) -> None:
        """``s3:PutObject`` under ``discarded/<stage>/`` (``tier``: under its own ``discarded/<stage>/<tier>/``, for
        a consumer archiving the jobs that end unrun) and nothing else: no read, list, delete or tagging."""
        objects = f"{discard_archive_prefix(self.stage, tier)}*"
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(ARCHIVE_WRITE_ACTIONS), resources=[self.bucket.arn_for_objects(objects)])
        )
        stack = Stack.of(self)
        # An L2 bucket's default child is its CfnBucket, a CfnElement.
        bucket_id = stack.resolve(stack.get_logical_id(cast(CfnElement, self.bucket.node.default_child)))
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{objects}]",
            "Each discard (and each job a consumer drops unrun) writes a new object (discarded/<stage>/<tier>/"
            "<time>-<id>.jsonl): the wildcard covers only new keys under this stage's (or tier's) prefix, for "
            "PutObject alone.",
        )
