"""Lazily built, cached boto3 clients.

Handlers accept injected clients; when none is given they call :func:`client`, which builds the
client on first use (not at import, so a cold start pays only for what it touches). boto3 honours
``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>``, so the same code talks to AWS or to moto's
server without a branch.
"""

from __future__ import annotations

import threading
from typing import Any

_clients: dict[str, Any] = {}
_lock = threading.Lock()


def client(service: str) -> Any:
    """A shared boto3 client for ``service``, created once per process."""
    found = _clients.get(service)
    if found is None:
        with _lock:
            found = _clients.get(service)
            if found is None:
                import boto3  # deferred: ~100 ms that only the first call pays

                found = _clients[service] = boto3.session.Session().client(service)
    return found


def reset() -> None:
    """Forget cached clients (tests and the local runtime call this when the endpoint changes)."""
    with _lock:
        _clients.clear()
