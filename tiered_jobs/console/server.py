"""Serve the console with uvicorn: in the foreground (``tiered-jobs console``) or in a thread (``local up``)."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tiered_jobs.stage.target import Target

from .security import Security, check_bind

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8321


@dataclass
class RunningConsole:
    """A console served from a background thread; :meth:`stop` ends it and frees the port."""

    url: str
    _server: Any
    _thread: threading.Thread

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _server(target: Target, security: Security, host: str) -> Any:
    import uvicorn

    from .app import create_app

    check_bind(host, security.token)
    config = uvicorn.Config(
        create_app(target, security=security), log_level="warning", access_log=False, lifespan="off"
    )
    return uvicorn.Server(config)


def url_of(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(
    target: Target,
    security: Security,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until Ctrl-C (uvicorn handles the signals)."""
    server = _server(target, security, host)
    sock = _bind(host, port)
    if on_ready is not None:
        on_ready(url_of(host, sock.getsockname()[1]))
    server.run(sockets=[sock])


def start_in_thread(
    target: Target, security: Security | None = None, host: str = DEFAULT_HOST, port: int = 0
) -> RunningConsole:
    """Serve from a daemon thread (port 0: a free one); returns once it accepts connections."""
    security = security or Security()
    server = _server(target, security, host)
    sock = _bind(host, port)
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="tiered-jobs-console", daemon=True)
    thread.start()
    ready = threading.Event()
    for _ in range(200):
        if server.started:
            ready.set()
            break
        threading.Event().wait(0.05)
    if not ready.is_set():
        server.should_exit = True
        raise RuntimeError("the console did not start within 10 s")
    return RunningConsole(url_of(host, sock.getsockname()[1]), server, thread)
