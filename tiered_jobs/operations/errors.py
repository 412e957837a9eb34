"""How a failure reaches an operator: one line and an exit status, never a traceback for what they can fix.

Every error the library raises on purpose is a :class:`~tiered_jobs.contract.errors.TieredJobsError`
with its exit status (2: a mistake in the request, 1: otherwise); :func:`explain` adds the AWS
failures an operator can act on (no credentials or region, an endpoint down, throttling, refused
credentials or requests). The CLI prints the line, the console shows it as a banner.
"""

from __future__ import annotations

from typing import Any

from ..contract import payloads
from ..contract.errors import FAILURE, TieredJobsError


class OperatorError(TieredJobsError):
    """A failure to report as one line; ``code`` 2 for a mistake in the request, 1 otherwise."""

    def __init__(self, message: str, code: int = FAILURE):
        super().__init__(message)
        self.code = code


#: Error codes AWS uses when it throttles a caller.
THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "RequestThrottled",
        "SlowDown",
    }
)
#: Error codes of credentials AWS does not accept (expired, unknown, malformed).
BAD_CREDENTIALS_CODES = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "InvalidSignatureException",
        "AuthFailure",
    }
)


def explain(exc: BaseException) -> tuple[str, int] | None:
    """``(message, code)`` for a failure an operator can act on; ``None`` for anything else (a bug)."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    cause: BaseException = exc
    while isinstance(cause, TieredJobsError) and cause.explained_by_cause and isinstance(cause.__cause__, Exception):
        cause = cause.__cause__
    if isinstance(cause, (NoCredentialsError, PartialCredentialsError)):
        return (
            "no AWS credentials found: configure them as for the AWS CLI "
            "(aws configure, AWS_PROFILE, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"
        ), 1
    if isinstance(cause, NoRegionError):
        return "no AWS region: pass --region or set AWS_REGION", 1
    if isinstance(cause, EndpointConnectionError):
        return f"cannot reach {cause.kwargs.get('endpoint_url')}: is the endpoint (or the local mode) up?", 1
    if isinstance(cause, payloads.SchemaError):  # a schema file of TIERED_JOBS_SCHEMA_DIRS
        return f"payload schema {cause}", cause.code
    if isinstance(cause, TieredJobsError):
        return str(cause), cause.code
    if isinstance(cause, ClientError):
        code = cause.response.get("Error", {}).get("Code", "")
        if code in THROTTLING_CODES:
            return f"AWS is throttling these requests, try again in a moment: {client_error_text(cause)}", 1
        if code in BAD_CREDENTIALS_CODES:
            return (f"AWS does not accept these credentials (expired or wrong account?): {client_error_text(cause)}"), 1
        return f"AWS refused the request: {client_error_text(cause)}", 1
    return None


def client_error_text(exc: Any) -> str:
    error = exc.response.get("Error", {})
    return f"{error.get('Code', 'Error')}: {error.get('Message', '')} ({exc.operation_name})"
