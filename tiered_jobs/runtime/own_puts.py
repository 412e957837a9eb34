"""The DynamoDB client that Powertools writes a job's idempotency record through, which knows its own puts.

Powertools saves a job's ``INPROGRESS`` record with one conditional ``PutItem`` (no record, or one
past its window or lease). When that put is applied and its answer is lost, botocore sends it again,
and the retry meets the record it wrote itself: Powertools reads that as "already in progress" and
the job is held until its own lease ends; a job whose attempts run out first is dead-lettered
without its last attempt having run. ``PutItem`` takes no idempotency token, so each put carries
one of its own (:data:`~tiered_jobs.contract.job_ends.WRITER_TOKEN`, an attribute Powertools never
reads), and a refusal that gives back (``ALL_OLD``) an item holding this put's token is this put's
success. Every other call passes through unchanged.
"""

from __future__ import annotations

import uuid
from typing import Any

from tiered_jobs.contract.job_ends import WRITER_TOKEN


class OwnPuts:
    """A boto3 DynamoDB client whose ``put_item`` knows its own item again after a lost answer."""

    def __init__(self, client: Any):
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def put_item(self, **kwargs: Any) -> Any:
        from botocore.exceptions import ClientError

        token = {"S": uuid.uuid4().hex}
        try:
            return self._client.put_item(**{**kwargs, "Item": {**kwargs["Item"], WRITER_TOKEN: token}})
        except ClientError as exc:
            found = exc.response.get("Item") or {}
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException" and (
                found.get(WRITER_TOKEN) == token
            ):
                return {}  # its own item: the first try was applied, botocore's retry met it
            raise
