"""The stage's bucket of job bodies past SQS's limit (a tier's ``large_payloads``), made only when a tier opts in.

One bucket for the stage, shared by the tiers that opt in: the publisher stores a body over its tier's
threshold under ``<tier>/`` and sends the pointer of AWS's SQS extended clients
(``tiered_jobs.contract.large_payloads``); the tier's consumer reads it back.

- **Lifecycle, never a delete.** Nothing of the stack deletes an object: a pointer may be in the
  queue, in a held copy, in a letter and in a replayed copy at once (and SQS may deliver a message
  twice), so deleting it when one of them ends could strand another. The lifecycle expires an object
  once no message can still point at it: ``lifecycle_days`` of the longest-lived opted-in tier. So a
  letter's object is never deleted before the letter is.
- Private, TLS-only, encrypted with S3-managed keys (as the queues use SQS-managed ones), its access
  logged to the discard archive's log bucket, retained with its policy like every stateful resource
  (``tiered-jobs teardown`` finds it by the stage tag and empties it).
- Least privilege: the publisher may ``PutObject`` under the opted-in tiers' folders only; a consumer
  may ``GetObject`` anywhere in the bucket, because a Java or Python extended client writes a bare
  UUID key (no folder), and reads nothing but its stage's bucket whatever a pointer names; it may also
  ``ListBucket`` that bucket (and no other), because S3 answers a reader without it ``AccessDenied``
  for a missing object, so an expired body would be dead-lettered as an IAM problem. The replay
  function may ``GetObject`` too (``show`` and the discard archive read a letter's body back; a
  missing object there says it may be gone; a native replay asks each body's age first).
- **Native replay.** SQS's move task restarts a letter's retention, so the replay function gets each
  opted-in tier's bound (:func:`~tiered_jobs.contract.large_payloads.native_replay_days`, in seconds,
  in ``NATIVE_REPLAY_BOUNDS_ENV``) and refuses to move an offloaded letter older than it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import cast

from aws_cdk import CfnElement, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from tiered_jobs.contract.large_payloads import (
    NATIVE_REPLAY_BOUNDS_ENV,
    Offload,
    lifecycle_days,
    native_replay_days,
    object_key,
)
from tiered_jobs.contract.names import Env

from .buckets import private_bucket
from .nag import acknowledge, skip_checkov
from .settings import AppSettings
from .tier import Tier

#: What the consumer calls (a fetch of the stored body), and the publisher (a store).
READ_ACTIONS = ("s3:GetObject",)
#: What a reader of bodies needs on the bucket itself so that a missing object answers ``NoSuchKey``:
#: without it S3 answers ``AccessDenied`` (its documented rule), and an expired body reads as a refusal.
LIST_ACTIONS = ("s3:ListBucket",)
WRITE_ACTIONS = ("s3:PutObject",)
#: Where the bucket's server access logs go in the discard archive's log bucket.
ACCESS_LOG_PREFIX = "large-payloads/"


def opted_in(tiers: Sequence[Tier]) -> list[Tier]:
    return [tier for tier in tiers if tier.settings.large_payloads]


def expiration_days(tiers: Sequence[Tier]) -> int:
    """The bucket's lifecycle: the longest any opted-in tier's message can still point at a body."""
    return max(
        lifecycle_days(
            tier.settings.retention_days,
            tier.settings.dlq_retention_days,
            tier.settings.idempotency_ttl_seconds or 0,
        )
        for tier in opted_in(tiers)
    )


class LargePayloads(Construct):
    """The stage's bucket of job bodies past SQS's size limit, and who may read and write it."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: AppSettings,
        tiers: Sequence[Tier],
        access_logs: s3.IBucket,
        replay_role: iam.IRole,
        replay_function: lambda_.Function,
    ) -> None:
        super().__init__(scope, construct_id)
        self.tiers = opted_in(tiers)
        if not self.tiers:
            raise ValueError("LargePayloads needs a tier with large_payloads")
        self.days = expiration_days(self.tiers)
        self.bucket = private_bucket(
            self,
            "Bucket",
            lifecycle_rules=[s3.LifecycleRule(id="ExpireJobBodies", expiration=Duration.days(self.days))],
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix=ACCESS_LOG_PREFIX,
            removal_policy=settings.removal_policy,
        )
        skip_checkov(
            self.bucket,
            "CKV_AWS_21",
            "Job bodies: each is written once under a new key by a publisher (PutObject alone) and only read "
            "after; none is overwritten, and the lifecycle expires them, so a version would keep nothing more.",
        )
        # enforce_ssl's statement is a BucketPolicy of its own: a retained bucket keeps it, or it would serve HTTP.
        assert self.bucket.policy is not None
        self.bucket.policy.apply_removal_policy(settings.removal_policy)
        stack = Stack.of(self)
        bucket_id = stack.resolve(stack.get_logical_id(cast(CfnElement, self.bucket.node.default_child)))
        for tier in self.tiers:
            role = tier.consumer.role
            assert role is not None  # LambdaPlatform gives every function its own role
            tier.consumer.add_environment(Env.LARGE_PAYLOADS, self.offload(tier).to_json())
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=list(READ_ACTIONS), resources=[self.bucket.arn_for_objects("*")])
            )
            # So that an expired body answers NoSuchKey (OffloadedBodyMissing), not AccessDenied: the bucket only.
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=list(LIST_ACTIONS), resources=[self.bucket.bucket_arn])
            )
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]",
                "The consumer reads the job bodies of its stage's bucket, whose keys a Java or Python extended "
                "client names with a bare UUID: GetObject alone, on this bucket alone.",
            )
        # A native replay restarts a letter's retention: the replay function refuses to move an offloaded letter
        # whose body the lifecycle could delete before the moved copy ends (tiered_jobs.replay.native).
        replay_function.add_environment(
            NATIVE_REPLAY_BOUNDS_ENV,
            json.dumps(self.native_replay_bounds(), sort_keys=True, separators=(",", ":")),
        )
        # The replay function reads a letter's stored body for show and the discard archive (never to replay),
        # and asks its LastModified (HeadObject, allowed by GetObject) before a native replay.
        replay_role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(READ_ACTIONS), resources=[self.bucket.arn_for_objects("*")])
        )
        acknowledge(
            replay_role,
            f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]",
            "show and discard read a letter's stored body, whatever key its producer chose: GetObject alone, on "
            "this bucket alone.",
        )
        self._bucket_id = bucket_id

    def native_replay_bounds(self) -> dict[str, int]:
        """Each opted-in tier's :func:`native_replay_days`, in seconds, against the bucket's lifecycle."""
        return {
            tier.name: 86_400
            * native_replay_days(self.days, tier.settings.retention_days, tier.settings.dlq_retention_days)
            for tier in self.tiers
        }

    def offload(self, tier: Tier) -> Offload:
        return Offload(self.bucket.bucket_name, tier.settings.large_payload_threshold)

    def publisher_statements(self) -> list[iam.PolicyStatement]:
        """``PutObject`` under each opted-in tier's folder, and nothing else."""
        return [
            iam.PolicyStatement(
                sid="StoreLargeJobBodies",
                actions=list(WRITE_ACTIONS),
                resources=[self.bucket.arn_for_objects(object_key(tier.name, "*")) for tier in self.tiers],
            )
        ]

    def acknowledge_publisher(self, scope: Construct) -> None:
        for tier in self.tiers:
            acknowledge(
                scope,
                f"AwsSolutions-IAM5[Resource::<{self._bucket_id}.Arn>/{object_key(tier.name, '*')}]",
                "Each large job body is a new object under its tier's folder: PutObject alone, on new keys there.",
            )
