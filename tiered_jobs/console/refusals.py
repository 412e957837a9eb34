"""What the console refuses before any AWS call, for every page that reads letters and every action.

One place, so a replay, a pause and an action on one letter refuse alike: a read-only console
takes no action; another site's request (the browser's ``Sec-Fetch-Site``) is refused, since
reading a letter counts a receive and an action changes the stage; a POST needs the page's CSRF
token and the console's own origin (``--origin`` behind a proxy that rewrites ``Host``).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from .security import CSRF_HEADER, Security, cross_site

READ_ONLY = "This console is read-only: no action is allowed."
WRONG_TOKEN = "Refused: missing or wrong CSRF token (reload the page)."
OTHER_ORIGIN = (
    "Refused: a request from another origin. Behind a reverse proxy, start the console with "
    "--origin <the address you open it at>, or have the proxy pass the Host header on."
)
#: Why another site's request is refused: a page reads letters, an action changes the stage.
READS_LETTERS = (
    "This page reads dead letters, and every read counts as a receive: open it from the console's own "
    "pages, or type its address."
)
ACTS = "Act from the console's own pages."


def cross_site_refusal(request: Request, why: str = READS_LETTERS) -> Response | None:
    """``403`` for a request another web site made the browser send, else ``None``."""
    site = cross_site(request.headers)
    if site is None:
        return None
    return PlainTextResponse(f"Refused: a request from another site (Sec-Fetch-Site: {site}). {why}", status_code=403)


def action_refusal(security: Security, request: Request, form_token: str) -> Response | None:
    """``403`` for an action this console must not take (read-only, another site, a wrong CSRF token
    or origin), else ``None``."""
    if security.read_only:
        return PlainTextResponse(READ_ONLY, status_code=403)
    if (refused := cross_site_refusal(request, ACTS)) is not None:
        return refused
    if not security.csrf_ok(request.headers.get(CSRF_HEADER) or form_token):
        return PlainTextResponse(WRONG_TOKEN, status_code=403)
    if not security.origin_ok(request.headers.get("origin"), request.headers.get("host")):
        return PlainTextResponse(OTHER_ORIGIN, status_code=403)
    return None
