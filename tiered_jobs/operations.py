"""What an operator does to a stage, shared by the ``tiered-jobs`` CLI and the web console.

* :class:`Target`: the stage worked on and its AWS clients (built on first use);
* :func:`run_replay`: inspect / dry run / replay a tier's DLQ with the replay domain (the code the
  replay Lambda runs), here or by invoking the deployed function;
* :func:`read_letters`: the letters of a DLQ with their bodies and ``DeadLetter.*`` reasons, read
  by the same domain (held while read, then made visible again: nothing is removed).

Every failure an operator can act on is an :class:`OperatorError` (``code`` 2: a mistake in the
request, 1 otherwise); the CLI prints it as one line, the console as a banner.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from . import discovery, replay
from .contract import payloads

#: A replay may run up to Lambda's 15 minutes: wait that long for the answer, and never resend it.
REPLAY_INVOKE_READ_TIMEOUT = 960

#: ``progress(description, total)`` gives the callback ``on_progress(matched)`` for the duration of a run.
Progress = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]


class OperatorError(Exception):
    """A failure to report as one line; ``code`` 2 for a mistake in the request, 1 otherwise."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class Via(str, Enum):
    """Where a DLQ command runs the replay code."""

    auto = "auto"
    direct = "direct"
    function = "lambda"


@dataclass
class Target:
    """The stage worked on, and the AWS clients to reach it (built on first use).

    ``credentials`` (``aws_access_key_id``...) are for the local mode's fake ones; otherwise
    credentials and region resolve as for the AWS CLI.
    """

    stage: str
    stack_name: str
    region: str | None
    endpoint_url: str | None
    credentials: dict[str, str] = field(default_factory=dict)
    _clients: dict[str, Any] = field(default_factory=dict)
    _deployment: discovery.Deployment | None = None

    def client(self, service: str, **config: Any) -> Any:
        key = service if not config else f"{service}:{json.dumps(config, sort_keys=True)}"
        if key not in self._clients:
            import boto3
            from botocore.config import Config

            self._clients[key] = boto3.session.Session(region_name=self.region, **self.credentials).client(
                service, endpoint_url=self.endpoint_url, config=Config(**config) if config else None
            )
        return self._clients[key]

    def clients(self) -> list[Any]:
        """The clients built so far (e.g. to count their calls)."""
        return list(self._clients.values())

    def deployment(self) -> discovery.Deployment:
        if self._deployment is None:
            self._deployment = discovery.locate(
                self.stage, self.stack_name, cloudformation=self.client("cloudformation"), ssm=self.client("ssm")
            )
        return self._deployment


@contextmanager
def no_progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    yield lambda matched: None


def run_replay(target: Target, event: dict[str, Any], via: Via = Via.auto, *, progress: Progress = no_progress,
               status: Callable[[str], AbstractContextManager[Any]] | None = None,
               archive_path: Path | None = None, note: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the replay domain here (``auto`` / ``direct``), or invoke the deployed function (``lambda``).

    ``progress`` shows a direct run's progress; ``status`` wraps the wait for the function's answer.
    Here, each tier's idempotency window comes from the stage's SSM parameters (when they cannot
    be read, ``note`` is told and the windows count as unknown: a replay then moves nothing
    without ``allow_outside_idempotency_window``), and ``discard`` appends to the JSON-lines
    file ``archive_path``; the deployed function has its own archive.
    """
    deployment = target.deployment()
    deployment.tier(event["tier"])  # an unknown tier fails here, naming the known ones
    if via is Via.function:
        return invoke_replay(target, deployment, event, status)
    tiers = _tier_queues(target, deployment, note)
    try:
        request = replay.parse_event(event, tiers=tiers)
        sqs = target.client("sqs")
        total = min(request.max_messages, replay.approximate_depth(sqs, tiers[request.tier].dlq_url))
        archive = replay.JsonLinesArchive(archive_path) if archive_path is not None else None
        with progress(f"{request.action} {request.tier} DLQ", total) as on_progress:
            return replay.run(request, sqs=sqs, tiers=tiers, on_progress=on_progress, archive=archive)
    except replay.ReplayEventError as exc:
        raise OperatorError(str(exc), 2) from None


def read_letters(target: Target, tier: str, *, max_messages: int,
                 on_letters: Callable[[list[Any]], None]) -> dict[str, Any]:
    """Inspect ``tier``'s DLQ (at most ``max_messages`` letters), handing every letter read to ``on_letters``.

    Letters are ``tiered_jobs.replay.letters.Letter`` (``message_id``, ``body``, ``attributes``,
    ``reason``, ``error_type``, ``error_message``, ``job_type``...). Returns the inspect response.
    Needs the replay code here: the deployed function returns groups, not letters.
    """
    deployment = target.deployment()
    tiers = _tier_queues(target, deployment)
    try:
        request = replay.parse_event({"action": "inspect", "tier": tier, "max_messages": max_messages}, tiers=tiers)
    except replay.ReplayEventError as exc:
        raise OperatorError(str(exc), 2) from None
    return replay.run(request, sqs=target.client("sqs"), tiers=tiers, on_letters=on_letters)


def invoke_replay(target: Target, deployment: discovery.Deployment, event: dict[str, Any],
                  status: Callable[[str], AbstractContextManager[Any]] | None = None) -> dict[str, Any]:
    """``lambda:InvokeFunction`` on the stage's replay function, once (never re-sent), and its answer."""
    name = deployment.replay_function_name
    if not name:
        raise OperatorError(f"{deployment.source} names no replay function to invoke")
    client = target.client("lambda", read_timeout=REPLAY_INVOKE_READ_TIMEOUT, retries={"total_max_attempts": 1})
    with (status or _quiet)(f"invoking {name}..."):
        answer = client.invoke(FunctionName=name, InvocationType="RequestResponse", Payload=json.dumps(event).encode())
    body = json.loads(answer["Payload"].read() or b"null")
    if answer.get("FunctionError"):
        message = body.get("errorMessage") if isinstance(body, dict) else body
        raise OperatorError(f"the replay function {name} refused or failed: {message}",
                            2 if "invalid replay event" in str(message) else 1)
    answered: dict[str, Any] = body  # the replay function answers an object
    return answered


@contextmanager
def _quiet(description: str) -> Iterator[None]:
    yield


def _tier_queues(target: Target, deployment: discovery.Deployment,
                 note: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The tiers with a DLQ, each with its idempotency window from SSM (``None``: unknown)."""
    from botocore.exceptions import ClientError

    names = [name for name, urls in deployment.tiers.items() if urls.dlq_url]
    try:
        ttls = discovery.idempotency_ttls(target.stage, names, ssm=target.client("ssm"))
    except ClientError as exc:
        if note is not None:
            note(f"the tiers' idempotency windows unavailable ({client_error_text(exc)})")
        ttls = {}
    return {name: replay.TierQueues(deployment.tiers[name].queue_url, deployment.tiers[name].dlq_url, ttls.get(name))
            for name in names}


#: Error codes AWS uses when it throttles a caller.
THROTTLING_CODES = frozenset({"Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded",
                              "TooManyRequestsException", "RequestThrottled", "SlowDown"})
#: Error codes of credentials AWS does not accept (expired, unknown, malformed).
BAD_CREDENTIALS_CODES = frozenset({"ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId",
                                   "UnrecognizedClientException", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                                   "InvalidSignatureException", "AuthFailure"})


def explain(exc: BaseException) -> tuple[str, int] | None:
    """``(message, code)`` for a failure an operator can act on; ``None`` for anything else (a bug)."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    from .publisher import InvalidJobError, PublishError

    cause: BaseException = exc
    while isinstance(cause, PublishError) and isinstance(cause.__cause__, Exception):
        cause = cause.__cause__  # the client error behind a failed publish says more
    if isinstance(cause, (NoCredentialsError, PartialCredentialsError)):
        return ("no AWS credentials found: configure them as for the AWS CLI "
                "(aws configure, AWS_PROFILE, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"), 1
    if isinstance(cause, NoRegionError):
        return "no AWS region: pass --region or set AWS_REGION", 1
    if isinstance(cause, EndpointConnectionError):
        return f"cannot reach {cause.kwargs.get('endpoint_url')}: is the endpoint (or the local mode) up?", 1
    if isinstance(cause, OperatorError):
        return str(cause), cause.code
    if isinstance(cause, (discovery.UnknownTierError, InvalidJobError)):
        return str(cause), 2
    if isinstance(cause, payloads.SchemaError):  # a schema file of TIERED_JOBS_SCHEMA_DIRS
        return f"payload schema {cause}", 2
    if isinstance(cause, (discovery.DiscoveryError, PublishError)):
        return str(cause), 1
    if isinstance(cause, ClientError):
        code = cause.response.get("Error", {}).get("Code", "")
        if code in THROTTLING_CODES:
            return f"AWS is throttling these requests, try again in a moment: {client_error_text(cause)}", 1
        if code in BAD_CREDENTIALS_CODES:
            return (f"AWS does not accept these credentials (expired or wrong account?): "
                    f"{client_error_text(cause)}"), 1
        return f"AWS refused the request: {client_error_text(cause)}", 1
    return None


def client_error_text(exc: Any) -> str:
    error = exc.response.get("Error", {})
    return f"{error.get('Code', 'Error')}: {error.get('Message', '')} ({exc.operation_name})"


def format_duration(seconds: float | None) -> str:
    """``3725`` -> ``1h 2m``; ``None`` -> ``–``."""
    if seconds is None:
        return "–"
    seconds = int(seconds)
    for unit, size, smaller, smaller_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if seconds >= size:
            rest = (seconds % size) // smaller_size
            return f"{seconds // size}{unit} {rest}{smaller}" if rest else f"{seconds // size}{unit}"
    return f"{seconds}s"
