"""AWS error codes, each decided transient or permanent, from AWS's own catalogue.

Every error shape that botocore's service models list for the services the runtime and the
example jobs call (DynamoDB, SQS, SNS, KMS, STS, Lambda, and S3 for the replay's discard archive)
is decided here, by its shape name and
by its wire code where the model gives another one (SNS's ``Throttled`` for
``ThrottledException``). SQS speaks JSON with query-compatible codes: botocore puts the legacy
code (``AWS.SimpleQueueService.NonExistentQueue``) in ``Error.Code`` and the shape name in
``Error.QueryErrorCode``; :func:`kind_of_error` reads both. ``COMMON`` holds the codes any AWS
API may answer (AWS's "common errors" and botocore's own retry lists).

``tests/runtime/test_aws_errors.py`` fails when an installed botocore knows a code of these
services that is not decided here, so upgrading boto3 forces a decision.

``TransactionCanceledException`` is decided by its ``CancellationReasons`` (botocore puts them in
``error.response["CancellationReasons"]``): a conflict or throttling reason is transient; a
failed condition, a validation error or a full item collection is permanent -- unless the job
handles it first (an idempotent payment job treats a failed condition on its marker as "already
applied"). Reasons mixed with a transient one are transient: the next attempt sees the real state.

Nothing here imports botocore: the consumer's cold start does not pay for the catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

Kind = Literal["permanent", "transient"]
TRANSIENT: Kind = "transient"
PERMANENT: Kind = "permanent"

#: The error code whose class depends on its cancellation reasons.
TRANSACTION_CANCELED = "TransactionCanceledException"


def _decide(transient: Iterable[str], permanent: Iterable[str]) -> dict[str, Kind]:
    table: dict[str, Kind] = {code: TRANSIENT for code in transient}
    overlap = table.keys() & set(permanent)
    if overlap:  # a programming error in this module: fail at import, loudly
        raise ValueError(f"error codes decided both ways: {sorted(overlap)}")
    table.update({code: PERMANENT for code in permanent})
    return table


#: Codes any AWS API may answer (AWS's common errors; botocore's throttling and transient lists).
COMMON: dict[str, Kind] = _decide(
    transient=(
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "SlowDown",
        "PriorRequestNotComplete",
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalFailure",
        "InternalError",
        "InternalServerError",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "LimitExceededException",
        "EC2ThrottledException",
        # The function's temporary credentials or the request's signature time ran out: the next
        # attempt signs again with refreshed credentials.
        "ExpiredToken",
        "ExpiredTokenException",
        "RequestExpired",
    ),
    permanent=(
        "AccessDenied",
        "AccessDeniedException",
        "IncompleteSignature",
        "InvalidAction",
        "InvalidClientTokenId",
        "InvalidParameterCombination",
        "InvalidParameterValue",
        "InvalidQueryParameter",
        "MalformedQueryString",
        "MissingAction",
        "MissingAuthenticationToken",
        "MissingParameter",
        "NotAuthorized",
        "OptInRequired",
        "ValidationError",
        "ValidationException",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
        "InvalidSignatureException",
        "UnknownOperationException",
        "SerializationException",
    ),
)

#: Per service, every error code of its botocore model (shape names and wire codes), decided.
CATALOGUE: dict[str, dict[str, Kind]] = {
    "dynamodb": _decide(
        transient=(
            "InternalServerError",
            "LimitExceededException",
            "ProvisionedThroughputExceededException",
            "ReplicatedWriteConflictException",
            "RequestLimitExceeded",
            "ThrottlingException",
            "TransactionConflictException",
            "TransactionInProgressException",
            # "wait for the ongoing update to complete and attempt the request again"
            "ResourceInUseException",
            "TableInUseException",
            "BackupInUseException",
            "ExportConflictException",
            # decided by its cancellation reasons (see transaction_kind); transient when they say nothing
            TRANSACTION_CANCELED,
        ),
        permanent=(
            "BackupNotFoundException",
            "ConditionalCheckFailedException",
            "ContinuousBackupsUnavailableException",
            "DuplicateItemException",
            "ExportNotFoundException",
            "GlobalTableAlreadyExistsException",
            "GlobalTableNotFoundException",
            "IdempotentParameterMismatchException",
            "ImportConflictException",
            "ImportNotFoundException",
            "IndexNotFoundException",
            "InvalidExportTimeException",
            "InvalidRestoreTimeException",
            "ItemCollectionSizeLimitExceededException",
            "PolicyNotFoundException",
            "PointInTimeRecoveryUnavailableException",
            "ReplicaAlreadyExistsException",
            "ReplicaNotFoundException",
            "ResourceNotFoundException",
            "TableAlreadyExistsException",
            "TableNotFoundException",
        ),
    ),
    "sqs": _decide(
        transient=(
            "KmsThrottled",
            "RequestThrottled",
            "OverLimit",
            "PurgeQueueInProgress",
            "QueueDeletedRecently",
        ),
        permanent=(
            "BatchEntryIdsNotDistinct",
            "BatchRequestTooLong",
            "EmptyBatchRequest",
            "InvalidAddress",
            "InvalidAttributeName",
            "InvalidAttributeValue",
            "InvalidBatchEntryId",
            "InvalidIdFormat",
            "InvalidMessageContents",
            "InvalidSecurity",
            "KmsAccessDenied",
            "KmsDisabled",
            "KmsInvalidKeyUsage",
            "KmsInvalidState",
            "KmsNotFound",
            "KmsOptInRequired",
            "MessageNotInflight",
            "QueueDoesNotExist",
            "QueueNameExists",
            "ReceiptHandleIsInvalid",
            "ResourceNotFoundException",
            "TooManyEntriesInBatchRequest",
            "UnsupportedOperation",
        ),
    ),
    "sns": _decide(
        transient=(
            "ConcurrentAccessException",
            "ConcurrentAccess",
            "InternalErrorException",
            "InternalError",
            "KMSThrottlingException",
            "KMSThrottling",
            "ThrottledException",
            "Throttled",
            # "Wait a short while and then retry the operation."
            "StaleTagException",
            "StaleTag",
        ),
        permanent=(
            "AuthorizationErrorException",
            "AuthorizationError",
            "BatchEntryIdsNotDistinctException",
            "BatchEntryIdsNotDistinct",
            "BatchRequestTooLongException",
            "BatchRequestTooLong",
            "EmptyBatchRequestException",
            "EmptyBatchRequest",
            "EndpointDisabledException",
            "EndpointDisabled",
            "FilterPolicyLimitExceededException",
            "FilterPolicyLimitExceeded",
            "InvalidBatchEntryIdException",
            "InvalidBatchEntryId",
            "InvalidParameterException",
            "InvalidParameter",
            "InvalidParameterValueException",
            "ParameterValueInvalid",
            "InvalidSecurityException",
            "InvalidSecurity",
            "InvalidStateException",
            "InvalidState",
            "KMSAccessDeniedException",
            "KMSAccessDenied",
            "KMSDisabledException",
            "KMSDisabled",
            "KMSInvalidStateException",
            "KMSInvalidState",
            "KMSNotFoundException",
            "KMSNotFound",
            "KMSOptInRequired",
            "NotFoundException",
            "NotFound",
            "OptedOutException",
            "OptedOut",
            "PlatformApplicationDisabledException",
            "PlatformApplicationDisabled",
            "ReplayLimitExceededException",
            "ReplayLimitExceeded",
            "ResourceNotFoundException",
            "ResourceNotFound",
            "SubscriptionLimitExceededException",
            "SubscriptionLimitExceeded",
            "TagLimitExceededException",
            "TagLimitExceeded",
            "TagPolicyException",
            "TagPolicy",
            "TooManyEntriesInBatchRequestException",
            "TooManyEntriesInBatchRequest",
            "TopicLimitExceededException",
            "TopicLimitExceeded",
            "UserErrorException",
            "UserError",
            "ValidationException",
            "VerificationException",
        ),
    ),
    "kms": _decide(
        transient=(
            "DependencyTimeoutException",
            "KMSInternalException",
            "KeyUnavailableException",
            "LimitExceededException",
            "ConflictException",
            "XksProxyUriUnreachableException",
        ),
        permanent=(
            "AlreadyExistsException",
            "CloudHsmClusterInUseException",
            "CloudHsmClusterInvalidConfigurationException",
            "CloudHsmClusterNotActiveException",
            "CloudHsmClusterNotFoundException",
            "CloudHsmClusterNotRelatedException",
            "CustomKeyStoreHasCMKsException",
            "CustomKeyStoreInvalidStateException",
            "CustomKeyStoreNameInUseException",
            "CustomKeyStoreNotFoundException",
            "DisabledException",
            "DryRunOperationException",
            "ExpiredImportTokenException",
            "IncorrectKeyException",
            "IncorrectKeyMaterialException",
            "IncorrectTrustAnchorException",
            "InvalidAliasNameException",
            "InvalidArnException",
            "InvalidCiphertextException",
            "InvalidGrantIdException",
            "InvalidGrantTokenException",
            "InvalidImportTokenException",
            "InvalidKeyUsageException",
            "InvalidMarkerException",
            "KMSInvalidMacException",
            "KMSInvalidSignatureException",
            "KMSInvalidStateException",
            "MalformedPolicyDocumentException",
            "NotFoundException",
            "TagException",
            "UnsupportedOperationException",
            "XksKeyAlreadyInUseException",
            "XksKeyInvalidConfigurationException",
            "XksKeyNotFoundException",
            "XksProxyIncorrectAuthenticationCredentialException",
            "XksProxyInvalidConfigurationException",
            "XksProxyInvalidResponseException",
            "XksProxyUriEndpointInUseException",
            "XksProxyUriInUseException",
            "XksProxyVpcEndpointServiceInUseException",
            "XksProxyVpcEndpointServiceInvalidConfigurationException",
            "XksProxyVpcEndpointServiceNotFoundException",
        ),
    ),
    "sts": _decide(
        transient=("ExpiredTokenException", "IDPCommunicationErrorException", "IDPCommunicationError"),
        permanent=(
            "ExpiredTradeInTokenException",
            "IDPRejectedClaimException",
            "IDPRejectedClaim",
            "InsufficientSessionLifetimeException",
            "InsufficientSessionLifetime",
            "InvalidAuthorizationMessageException",
            "InvalidContextAssertionException",
            "InvalidContextAssertion",
            "InvalidIdentityTokenException",
            "InvalidIdentityToken",
            "InvalidSubjectCredentialsException",
            "InvalidSubjectCredentials",
            "JWTPayloadSizeExceededException",
            "MalformedPolicyDocumentException",
            "MalformedPolicyDocument",
            "OutboundWebIdentityFederationDisabledException",
            "PackedPolicyTooLargeException",
            "PackedPolicyTooLarge",
            "RegionDisabledException",
            "SessionDurationEscalationException",
        ),
    ),
    "lambda": _decide(
        transient=(
            "CodeArtifactUserPendingException",
            "EC2ThrottledException",
            "EC2UnexpectedException",
            "EFSIOException",
            "EFSMountConnectivityException",
            "EFSMountTimeoutException",
            "ENILimitReachedException",
            "ENINotReadyException",
            "ResourceConflictException",
            "ResourceInUseException",
            "ResourceNotReadyException",
            "S3FilesMountConnectivityException",
            "S3FilesMountTimeoutException",
            "ServiceException",
            "SnapStartNotReadyException",
            "SnapStartTimeoutException",
            "SubnetIPAddressLimitReachedException",
            "TooManyRequestsException",
        ),
        permanent=(
            "AliasLimitExceededException",
            "CallbackTimeoutException",
            "CapacityProviderLimitExceededException",
            "CodeArtifactUserDeletedException",
            "CodeArtifactUserFailedException",
            "CodeSigningConfigNotFoundException",
            "CodeStorageExceededException",
            "CodeVerificationFailedException",
            "DurableExecutionAlreadyStartedException",
            "EC2AccessDeniedException",
            "EFSMountFailureException",
            "FunctionVersionsPerCapacityProviderLimitExceededException",
            "InvalidCodeSignatureException",
            "InvalidParameterValueException",
            "InvalidRequestContentException",
            "InvalidRuntimeException",
            "InvalidSecurityGroupIDException",
            "InvalidSubnetIDException",
            "InvalidZipFileException",
            "KMSAccessDeniedException",
            "KMSDisabledException",
            "KMSInvalidStateException",
            "KMSNotFoundException",
            "ModeNotSupportedException",
            "NoPublishedVersionException",
            "PolicyLengthExceededException",
            "PreconditionFailedException",
            "ProvisionedConcurrencyConfigNotFoundException",
            "PublicPolicyException",
            "RecursiveInvocationException",
            "RequestTooLargeException",
            "ResourceNotFoundException",
            "RuntimeAliasDeletedException",
            "RuntimeVersionDeletedException",
            "S3FilesMountFailureException",
            "SerializedRequestEntityTooLargeException",
            "ServiceQuotaExceededException",
            "SnapStartException",
            "SnapStartRegenerationFailureException",
            "UnsupportedMediaTypeException",
        ),
    ),
    # The replay function archives discarded letters to S3 (PutObject). S3's XML errors carry
    # the shape name as the code; its throttling (SlowDown, 503) and 5xx codes are in COMMON.
    "s3": _decide(
        transient=(),
        permanent=(
            "AccessDenied",
            "AnnotationLimitExceeded",
            "AnnotationNameTooLong",
            "BucketAlreadyExists",
            "BucketAlreadyOwnedByYou",
            "EncryptionTypeMismatch",
            "IdempotencyParameterMismatch",
            "InvalidAnnotationName",
            "InvalidObjectState",
            "InvalidPrefix",
            "InvalidRequest",
            "InvalidWriteOffset",
            "NoSuchAnnotation",
            "NoSuchBucket",
            "NoSuchKey",
            "NoSuchUpload",
            "ObjectAlreadyInActiveTierError",
            "ObjectNotInActiveTierError",
            "TooManyParts",
            "UnsupportedMediaType",
        ),
    ),
}

#: DynamoDB's documented cancellation reason codes (``None``: that item had no error).
TRANSACTION_REASONS: dict[str, Kind | None] = {
    "None": None,
    "TransactionConflict": TRANSIENT,
    "ProvisionedThroughputExceeded": TRANSIENT,
    "ThrottlingError": TRANSIENT,
    "ConditionalCheckFailed": PERMANENT,
    "ValidationError": PERMANENT,
    "ItemCollectionSizeLimitExceeded": PERMANENT,
}


def _merge() -> dict[str, Kind]:
    """One lookup over every service: a ClientError does not say which service answered. The
    test asserts that no code is decided differently by two services."""
    merged = dict(COMMON)
    for table in CATALOGUE.values():
        merged.update(table)
    return merged


KINDS: dict[str, Kind] = _merge()

_REASONS_IN_MESSAGE = re.compile(r"\[([A-Za-z, ]+)\]\s*$")


def reason_codes(response: Mapping[str, Any]) -> list[str]:
    """The cancellation reason codes of a ``TransactionCanceledException`` response, in item order.
    From ``CancellationReasons``; failing that, from the message (``... reasons [None, X]``)."""
    reasons = response.get("CancellationReasons")
    if isinstance(reasons, list) and reasons:
        return [str(r.get("Code") or "None") if isinstance(r, Mapping) else "None" for r in reasons]
    match = _REASONS_IN_MESSAGE.search(str(response.get("Error", {}).get("Message", "")))
    return [part.strip() for part in match.group(1).split(",")] if match else []


def cancelled_only_by_condition(exc: BaseException, item: int) -> bool:
    """Whether ``exc`` is a ``TransactWriteItems`` cancelled by item ``item``'s condition alone.

    For a job whose side effect and its own "applied" marker are written in one transaction (the
    marker's ``attribute_not_exists`` condition as item ``item``): True means the job already took
    effect, so there is nothing to do. Any other reason (a conflict, throttling, another item's
    condition) is not that: the job must fail and be retried, never read it as applied.
    """
    response = getattr(exc, "response", None)
    if not isinstance(response, Mapping) or response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    codes = reason_codes(response)
    if not codes:  # no reasons at all: only the message can say
        return "ConditionalCheckFailed" in str(response.get("Error", {}).get("Message", ""))
    return len(codes) > item and all(
        code == ("ConditionalCheckFailed" if index == item else "None") for index, code in enumerate(codes)
    )


def transaction_kind(response: Mapping[str, Any]) -> Kind:
    """Transient when any reason is (a conflict or throttling; unknown reasons too); else
    permanent when any reason is; transient when DynamoDB gave no reason at all."""
    kinds = {TRANSACTION_REASONS.get(code, TRANSIENT) for code in reason_codes(response)} - {None}
    if TRANSIENT in kinds or not kinds:
        return TRANSIENT
    return PERMANENT


def kind_of_error(response: Mapping[str, Any]) -> Kind | None:
    """The class of a botocore error response, or None when no code of it is decided here."""
    error = response.get("Error") or {}
    for code in (error.get("Code"), error.get("QueryErrorCode")):
        if code == TRANSACTION_CANCELED:
            return transaction_kind(response)
        if code in KINDS:
            return KINDS[code]
    return None
