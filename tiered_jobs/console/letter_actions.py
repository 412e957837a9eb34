"""Retry or discard one letter from the DLQ page: ``POST /letters/{retry|discard}/{check|run}``.

The same discipline as the Replay page, for one letter: *check* is the dry run (the replay domain
with ``message_ids`` and ``dry_run``, moving nothing) and renders what would happen with a confirm
button; *run*, posted by that button, does it. Both go through :func:`run_replay`, the code of
``tiered-jobs dlq replay | discard --message-id`` and of the replay function, so a retried letter
keeps its body (its idempotency key) byte for byte, and a discarded one is archived whole before
it is deleted, here to the CLI's default file (``default_archive_path``) in the directory the
console was started from.

Every POST passes :func:`~tiered_jobs.console.refusals.action_refusal` first: read-only, another
site, the CSRF token and the origin, before any AWS call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from tiered_jobs.operations.errors import OperatorError
from tiered_jobs.operations.replays import Via, default_archive_path, run_replay
from tiered_jobs.stage.target import Target

from .refusals import action_refusal
from .security import CSRF_FIELD, Security

#: What the page can do to one letter, as the replay event's action.
ACTIONS = {"retry": "replay", "discard": "discard"}
STEPS = ("check", "run")

#: ``guarded(template, work)``: the app's endpoint wrapper (failures become banners).
Guarded = Callable[[str, Callable[[Request], dict[str, Any]]], Callable[[Request], Response]]


def letter_routes(target: Target, security: Security, guarded: Guarded) -> list[Route]:
    """The routes of the per-letter actions, for the console's app."""

    async def letter_action(request: Request) -> Response:
        form = await request.form()
        if (refused := action_refusal(security, request, str(form.get(CSRF_FIELD) or ""))) is not None:
            return refused
        action, step = request.path_params["action"], request.path_params["step"]
        if action not in ACTIONS or step not in STEPS:
            return PlainTextResponse("Not found.", status_code=404)
        tier = str(form.get("tier") or "").strip()
        message_id = str(form.get("message_id") or "").strip()

        def work(_: Request) -> dict[str, Any]:
            if not message_id:
                raise OperatorError("no letter named: open the DLQ page and pick one", 2)
            event = {"action": ACTIONS[action], "tier": tier, "message_ids": [message_id], "dry_run": step == "check"}
            archive = default_archive_path(target.stage, tier).resolve() if action == "discard" else None
            answer = run_replay(target, event, Via.auto, archive_path=archive)
            [group] = answer["groups"] or [None]
            return {
                "action": action,
                "step": step,
                "tier": tier,
                "message_id": message_id,
                "outcome": (answer["outcomes"] or {}).get(message_id, "not_found"),
                "group": group,
                "answer": answer,
                "archive": str(archive) if archive is not None else None,
            }

        return await run_in_threadpool(guarded("_letter_result.html", work), request)

    return [Route("/letters/{action:str}/{step:str}", letter_action, methods=["POST"])]
