"""Which failures are worth retrying.

Rules (Celery's ``autoretry_for`` made explicit; when in doubt a failure is retried, so that a
bug costs a few attempts and never a silently lost job):

* **permanent** -- retrying cannot help: an invalid envelope or payload, an unknown job type,
  the same idempotency key with another payload, an AWS error code decided permanent in
  :mod:`tiered_jobs.runtime.aws_errors`, another 4xx answer (except 408, 425 and 429), and any
  exception a job declares permanent. The message goes straight to the DLQ.
* **transient** -- the world may be different next time: timeouts, connection errors, an AWS
  error code decided transient (throttling, a transaction conflict...), 429 and 5xx answers,
  :class:`TransientError` (and :class:`JobTimeout`), an idempotency record still in progress
  elsewhere. Retried with backoff until the attempts run out.
* anything else is **transient** by default (an unexpected bug gets its retries, then lands in
  the DLQ with its reason); a job that knows better says so with ``@job(unexpected="permanent")``.

A job's own declarations (``@job(retry_on=..., permanent_on=...)``) come before the general rules,
and after :class:`PermanentError` / :class:`TransientError`, which a job raises on purpose at the
place it knows: the most specific declared class wins (the first of the error's classes, in method
resolution order, that the job names).
"""

from __future__ import annotations

from collections.abc import Iterator

from .aws_errors import PERMANENT, TRANSIENT, Kind, kind_of_error

#: Exception class names that are transient wherever they come from (botocore, urllib3, requests).
TRANSIENT_CLASS_NAMES = frozenset(
    {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ConnectionClosedError",
        "ProxyConnectionError",
        "HTTPClientError",
        "ConnectTimeout",
        "ReadTimeout",
        "Timeout",
        "IdempotencyAlreadyInProgressError",
    }
)

#: Exception class names that are permanent wherever they come from.
PERMANENT_CLASS_NAMES = frozenset(
    {
        "IdempotencyValidationError",
        "IdempotencyKeyError",
        "ParamValidationError",
        "EnvelopeError",
    }
)


class JobError(Exception):
    """Base of the errors a job raises on purpose."""


class PermanentError(JobError):
    """Retrying cannot succeed (bad data, a 4xx answer, a business rule). Dead-lettered at once."""


class TransientError(JobError):
    """Retrying may succeed (an outage, a timeout). Retried with backoff."""


class JobTimeout(TransientError):
    """The job ran out of time (its ``time_limit_seconds`` or the invocation's budget): raised by
    ``ctx.check_time()``. Retried like any transient failure; a later attempt starts afresh."""


class ResourceNotConfiguredError(PermanentError):
    """A job asked ``ctx.resource(name)`` for a resource its tier's consumer was not given (a deployment
    problem: ``cdk.json``'s ``resources`` does not bind it to this job type, or the route moved)."""


class PayloadValidationError(PermanentError):
    """The payload does not satisfy the job's own rules."""


class UnknownJobTypeError(PermanentError):
    """No job is registered for the envelope's ``type``."""


class IdempotencyConflictError(PermanentError):
    """The idempotency key was used before with a different payload."""


def classify(
    exc: BaseException,
    permanent: tuple[type[BaseException], ...] = (),
    retry: tuple[type[BaseException], ...] = (),
    unexpected: Kind = TRANSIENT,
) -> Kind:
    """Permanent or transient, looking through the chain of causes (Powertools wraps errors).

    ``permanent`` / ``retry``: the job's own exception types; ``unexpected``: the kind of a failure
    no rule decides (the job's ``unexpected`` policy; transient unless it says otherwise)."""
    for err in exception_chain(exc):
        if isinstance(err, PermanentError):
            return PERMANENT
        if isinstance(err, TransientError):
            return TRANSIENT
        declared = _declared(err, permanent, retry)
        if declared is not None:
            return declared
        name = type(err).__name__
        if name in PERMANENT_CLASS_NAMES:
            return PERMANENT
        if name in TRANSIENT_CLASS_NAMES or isinstance(err, (TimeoutError, ConnectionError)):
            return TRANSIENT
        kind = _classify_by_status(err)
        if kind is not None:
            return kind
    return unexpected


def _declared(
    err: BaseException, permanent: tuple[type[BaseException], ...], retry: tuple[type[BaseException], ...]
) -> Kind | None:
    """The job's own word on ``err``: the most specific of its classes the job names, if any."""
    if not permanent and not retry:
        return None
    for cls in type(err).__mro__:
        if cls in permanent:
            return PERMANENT
        if cls in retry:
            return TRANSIENT
    # A virtual subclass (an ABC's register) has no declared class in its MRO: isinstance decides.
    if permanent and isinstance(err, permanent):
        return PERMANENT
    if retry and isinstance(err, retry):
        return TRANSIENT
    return None


def _classify_by_status(err: BaseException) -> Kind | None:
    response = getattr(err, "response", None)
    status: object = None
    if isinstance(response, dict):  # botocore ClientError: AWS's catalogue first, then the status
        kind = kind_of_error(response)
        if kind is not None:
            return kind
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    else:  # requests / httpx / urllib style
        status = getattr(err, "status_code", None) or getattr(response, "status_code", None)
        if status is None:
            status = getattr(err, "code", None) if type(err).__name__ == "HTTPError" else None
    if not isinstance(status, int):
        return None
    if status in (408, 425, 429) or status >= 500:
        return TRANSIENT
    if 400 <= status < 500:
        return PERMANENT
    return None


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what caused it (``raise ... from``) or what it was raised while handling, each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def describe(exc: BaseException) -> tuple[str, str]:
    """``(error type, message)`` for a dead letter: the innermost meaningful cause."""
    chosen = exc
    for err in exception_chain(exc):
        chosen = err
        if not type(err).__module__.startswith("aws_lambda_powertools"):
            break
    return type(chosen).__name__, str(chosen) or type(chosen).__name__
