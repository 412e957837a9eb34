"""Faults that AWS has and moto never shows, injected into a real boto3 client through botocore's events.

Each one is what AWS documents, not a guess at moto's behaviour:

- :func:`lose_answers`: the request is applied, its answer is lost (a read timeout, a reset, a
  5xx) and botocore's own retry handler sends the same request again, same body, same token. It
  hooks ``needs-retry.<service>.<Operation>`` ahead of botocore's handler and asks for an
  immediate retry of an attempt that succeeded, so the retry runs through botocore's real code.
- :func:`refuse`: the service answers with an error before applying anything (a transaction
  conflict, throttling, ``ResourceInUseException``), through ``before-call``, which botocore lets a
  handler answer in place of the service.

Both count what they did, so a test can show that the fault really happened.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse


@dataclass
class Injected:
    """What one fault did: how many answers it lost or refused, and the parameters of each call it hit."""

    count: int = 0
    params: list[dict[str, Any]] = field(default_factory=list)


def _service(client: Any) -> str:
    return str(client.meta.service_model.service_id.hyphenize())


@contextmanager
def lose_answers(
    client: Any,
    operation: str,
    *,
    times: int = 1,
    when: Callable[[dict[str, Any]], bool] | None = None,
) -> Iterator[Injected]:
    """Lose the answer of the next ``times`` applied ``operation`` calls of ``client``; botocore retries each.

    ``when`` picks the calls by their request (``request_dict``): by default every call.
    An attempt that failed is left to botocore's own handler, so only applied requests lose answers.
    """
    injected = Injected()
    event = f"needs-retry.{_service(client)}.{operation}"
    lock = threading.Lock()  # one client may serve several threads

    def hook(response: Any = None, attempts: int = 1, caught_exception: Any = None, **kwargs: Any) -> int | None:
        if injected.count >= times or caught_exception is not None or response is None:
            return None
        http = response[0]
        if http is not None and http.status_code >= 300:
            return None
        request = kwargs.get("request_dict") or {}
        if when is not None and not when(request):
            return None
        with lock:
            if injected.count >= times:
                return None
            injected.count += 1
            injected.params.append(request)
        return 0  # retry at once: the applied request is sent again, as after a lost answer

    client.meta.events.register_first(event, hook)
    try:
        yield injected
    finally:
        client.meta.events.unregister(event, hook)


def error_response(
    code: str, message: str = "", *, status: int = 400, **extra: Any
) -> tuple[AWSResponse, dict[str, Any]]:
    """An error answer as botocore parses one: ``(http response, parsed body)``."""
    parsed: dict[str, Any] = {
        "Error": {"Code": code, "Message": message or code},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    parsed.update(extra)
    return AWSResponse("https://fault.invalid/", status, {}, None), parsed


def conflict_response(items: int, *, conflicted: int | None = None) -> tuple[AWSResponse, dict[str, Any]]:
    """A ``TransactWriteItems`` cancelled by a conflict, as DynamoDB answers it: one reason per item."""
    reasons = [{"Code": "TransactionConflict" if conflicted in (None, index) else "None"} for index in range(items)]
    codes = ", ".join(reason["Code"] for reason in reasons)
    return error_response(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        CancellationReasons=reasons,
    )


@contextmanager
def refuse(
    client: Any,
    operation: str,
    answer: Callable[[dict[str, Any]], tuple[AWSResponse, dict[str, Any]] | None],
    *,
    times: int = 1,
) -> Iterator[Injected]:
    """Answer the next ``times`` ``operation`` calls of ``client`` with ``answer(params)`` instead of the service.

    ``params`` are the call's API parameters. ``answer`` may return ``None`` to let a call through
    (it is then not counted). A refusal reaches the caller at once, as one does on AWS once
    botocore's own retries are spent (or for a code botocore never retries, such as
    ``TransactionCanceledException``).
    """
    injected = Injected()
    service = _service(client)
    calls = threading.local()  # the API parameters of the call in flight, per thread

    def remember(params: dict[str, Any], **kwargs: Any) -> None:
        calls.params = dict(params)

    def hook(**kwargs: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        params = getattr(calls, "params", {})
        with lock:
            if injected.count >= times:
                return None
            response = answer(params)
            if response is None:
                return None
            injected.count += 1
            injected.params.append(params)
        return response

    lock = threading.Lock()
    client.meta.events.register_first(f"before-parameter-build.{service}.{operation}", remember)
    client.meta.events.register_first(f"before-call.{service}.{operation}", hook)
    try:
        yield injected
    finally:
        client.meta.events.unregister(f"before-call.{service}.{operation}", hook)
        client.meta.events.unregister(f"before-parameter-build.{service}.{operation}", remember)
