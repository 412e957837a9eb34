"""The console's security model: loopback by default, a token off loopback, CSRF on every POST.

* **Where it listens.** ``127.0.0.1`` unless told otherwise. Any other address needs a token
  (:func:`check_bind`); requests without it get ``401`` (:class:`Guard`).
* **The token** is accepted as HTTP basic auth (any user name, the token as password: browsers
  prompt for it), ``Authorization: Bearer <token>``, or once as ``?token=...``, which sets an
  ``HttpOnly`` ``SameSite=Strict`` cookie and redirects to the same page without it.
* **Host header.** On loopback without a token, only ``127.0.0.1``/``localhost`` hosts are served:
  a web page elsewhere cannot reach the console through DNS rebinding.
* **CSRF.** Every state change is a POST carrying the console's CSRF token (a form field or the
  ``X-CSRF-Token`` header htmx sends), a secret drawn at start-up and only ever written into the
  console's own pages: another site can neither read it nor guess it. A POST from another
  ``Origin`` is refused as well.
* **Cross-site reads.** Reading a DLQ receives its letters, which raises their receive counts, so
  a GET is not harmless here: the pages and actions that read letters refuse a request the browser
  marks as coming from another site (``Sec-Fetch-Site: cross-site`` or ``same-site``), so no
  other web page can make an operator's browser read them (:func:`cross_site`). The console's own
  pages (``same-origin``), a typed address or bookmark (``none``) and clients that send no such
  header (``curl``, scripts) are served.
* **Behind a reverse proxy** the browser's ``Origin`` names the proxy's address while the proxy may
  send another ``Host``: ``origin`` (``--origin https://jobs.example.com``) is that address, accepted
  as the Origin of a POST and, on loopback without a token, as a Host.
* **Read-only.** ``--read-only`` hides every action and refuses every action POST (``403``).
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

#: The environment variable that holds the token (instead of ``--token`` on the command line).
TOKEN_ENV = "TIERED_JOBS_CONSOLE_TOKEN"
COOKIE = "tiered_jobs_console"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: ``Sec-Fetch-Site`` values of a request that may read letters: the console's own pages, and a
#: navigation the user started (address bar, bookmark). Absent: not a browser (or an old one).
FETCH_SITES_SERVED = frozenset({"same-origin", "none"})

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class BindError(ValueError):
    """Binding this address without a token is refused."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise BindError(
            f"binding {host} exposes the console beyond this machine: pass --token (or set {TOKEN_ENV}); "
            "requests without it are then refused"
        )
    if token is not None and len(token) < 16:
        raise BindError(
            "the console token must be at least 16 characters (e.g. `python -c 'import secrets; "
            "print(secrets.token_urlsafe(24))'`)"
        )


def cross_site(headers: Mapping[str, str]) -> str | None:
    """The ``Sec-Fetch-Site`` value that makes this request another site's (``None``: serve it)."""
    site = headers.get("sec-fetch-site")
    if site is None or site.strip().lower() in FETCH_SITES_SERVED:
        return None
    return site


def parse_origin(value: str) -> str:
    """``scheme://host[:port]`` as browsers send it in ``Origin`` (lower-case, no path, no default port)."""
    parsed = urlsplit(value.strip())
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or parsed.path not in ("", "/")
        or parsed.query
        or parsed.fragment
        or parsed.username
        or parsed.password
    ):
        raise BindError(
            f"--origin {value!r} is not an origin; give the address users open the console at, "
            f"scheme and host (and port) only, e.g. https://jobs.example.com"
        )
    default = {"http": 80, "https": 443}[parsed.scheme]
    port = "" if parsed.port in (None, default) else f":{parsed.port}"
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    return f"{parsed.scheme}://{host}{port}"


@dataclass
class Security:
    """The console's access rules: its token, read-only mode, CSRF token and the origin it is served at."""

    token: str | None = None
    read_only: bool = False
    csrf_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    #: The address users open the console at when a reverse proxy is in front (``https://jobs.example.com``).
    origin: str | None = None

    def __post_init__(self) -> None:
        if self.origin is not None:
            self.origin = parse_origin(self.origin)

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        """A POST's ``Origin``: absent (not a browser), this console's own Host, or the configured origin."""
        if not origin:
            return True
        if self.origin is not None and origin.strip().lower() == self.origin:
            return True
        return origin.split("://", 1)[-1] == host

    def host_ok(self, host: str) -> bool:
        """On loopback without a token: a loopback name, or the configured origin's host (the proxy's)."""
        if host.rsplit(":", 1)[0] in LOOPBACK_HOSTS:
            return True
        return self.origin is not None and host.lower() == self.origin.split("://", 1)[1]

    def csrf_ok(self, presented: str | None) -> bool:
        if not presented:
            return False
        return hmac.compare_digest(presented.encode(), self.csrf_token.encode())

    def token_ok(self, presented: str | None) -> bool:
        if self.token is None:
            return True
        if not presented:
            return False
        return hmac.compare_digest(presented.encode(), self.token.encode())


class Guard:
    """ASGI middleware: the token (when set) and the Host check, before anything else runs."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], security: Security):
        self.app = app
        self.security = security

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.security.token is None:
            if not self.security.host_ok(headers.get("host", "")):
                await _plain(send, 421, "This console answers only on 127.0.0.1 or localhost.")
                return
            await self.app(scope, receive, send)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode()))
        if "token" in query and self.security.token_ok(query["token"]):
            rest = urlencode({k: v for k, v in query.items() if k != "token"})
            location = scope["path"] + (f"?{rest}" if rest else "")
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [
                        (b"location", location.encode()),
                        (b"set-cookie", f"{COOKIE}={self.security.token}; HttpOnly; SameSite=Strict; Path=/".encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        if self.security.token_ok(_presented_token(headers)):
            await self.app(scope, receive, send)
            return
        await _plain(
            send,
            401,
            "This console needs its token: open it with ?token=<token> or log in with the token as password.",
            [(b"www-authenticate", b'Basic realm="tiered-jobs console"')],
        )


def _presented_token(headers: dict[str, str]) -> str | None:
    authorization = headers.get("authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            return base64.b64decode(value.strip()).decode().partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            return None
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return None


async def _plain(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})
