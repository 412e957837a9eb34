"""The stack's S3 buckets (the discard archive, its access logs, large job bodies) share their defaults."""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct


def private_bucket(scope: Construct, construct_id: str, *, removal_policy: RemovalPolicy, **props: Any) -> s3.Bucket:
    """A bucket no one reaches but through the stack's grants: encrypted with S3-managed keys (server
    access logging delivers only to such targets), TLS only, every public access blocked."""
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        removal_policy=removal_policy,
        **props,
    )
