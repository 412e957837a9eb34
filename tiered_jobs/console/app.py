"""The console's ASGI application: server-rendered pages (Starlette + Jinja2) refreshed by htmx.

Pages: **Tiers** (live, refreshed in place every few seconds), **DLQ** (groups by error pattern,
sample letters with body and ``DeadLetter.*`` reasons), **Job** (what happened to job X),
**Replay** (filters, dry run, confirm). Every AWS read and action goes through
:mod:`tiered_jobs.operations` (replays, status, lookup): the same code as the CLI, and for
replays the same domain as the replay Lambda; this module only renders their answers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tiered_jobs.operations import lookup, pausing
from tiered_jobs.operations import status as stage_status
from tiered_jobs.operations.counts import COUNTERS, WINDOWS, WindowCounts
from tiered_jobs.operations.display import format_duration
from tiered_jobs.operations.errors import OperatorError, explain
from tiered_jobs.operations.replays import Via, read_letters, run_replay
from tiered_jobs.stage.target import Target

from . import refusals
from .letter_actions import letter_routes
from .security import CSRF_FIELD, CSRF_HEADER, Guard, Security

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
#: The pinned htmx file, served from the package (never a CDN).
HTMX_FILE = "htmx-2.0.4.min.js"
#: How often the Tiers page refreshes its table.
REFRESH_SECONDS = 5
#: Letters read for the DLQ page (one receive per 10, then one release per 10).
DLQ_PAGE_LETTERS = 50
#: The replay form's default bound.
DEFAULT_REPLAY_MAX = 100
#: Runs the Jobs page shows, newest first.
JOBS_PAGE_RUNS = 100
#: How often the Tiers page reads which tiers are paused: a pause changes rarely, so it is read apart
#: from the table (whose calls per refresh stay as documented) and less often.
PAUSE_REFRESH_SECONDS = 30


@dataclass
class Measured:
    """The AWS calls one console page made, and their time."""

    calls: int = 0
    ms: float = 0.0


class CallCounter:
    """Counts the AWS API calls made by the current thread (botocore's ``before-call`` event)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._hooked: set[int] = set()

    def hook(self, client: Any) -> None:
        if id(client) not in self._hooked:
            self._hooked.add(id(client))
            client.meta.events.register("before-call", self._count)

    def _count(self, **kwargs: Any) -> None:
        self._local.calls = getattr(self._local, "calls", 0) + 1

    @contextmanager
    def measure(self) -> Iterator[Measured]:
        result = Measured()
        before, started = getattr(self._local, "calls", 0), time.perf_counter()
        try:
            yield result
        finally:
            result.calls = getattr(self._local, "calls", 0) - before
            result.ms = (time.perf_counter() - started) * 1000


class CountedTarget(Target):
    """A :class:`Target` whose clients report their calls to a :class:`CallCounter`."""

    counter: CallCounter

    def client(self, service: str, **config: Any) -> Any:
        client = super().client(service, **config)
        self.counter.hook(client)
        return client


def counted(target: Target) -> CountedTarget:
    result = CountedTarget(
        target.stage, target.stack_name, target.region, target.endpoint_url, dict(target.credentials)
    )
    result.counter = CallCounter()
    return result


def create_app(target: Target, *, security: Security | None = None) -> Starlette:
    """The console for ``target``'s stage; ``security`` decides token, CSRF and read-only."""
    security = security or Security()
    target = target if isinstance(target, CountedTarget) else counted(target)
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    env.filters.update(duration=format_duration, number=_number, percent=_percent, ms=_ms, windows=_windows)
    env.globals.update(
        htmx=HTMX_FILE,
        refresh_seconds=REFRESH_SECONDS,
        counted=list(COUNTERS),
        pause_refresh_seconds=PAUSE_REFRESH_SECONDS,
        csrf_field=CSRF_FIELD,
        csrf_header=CSRF_HEADER,
        csrf_token=security.csrf_token,
        read_only=security.read_only,
        stage=target.stage,
    )

    def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(template).render(request=request, **context)
        return HTMLResponse(html, status_code=status)

    def guarded(
        template: str, work: Callable[[Request], dict[str, Any]], *, reads_letters: bool = False
    ) -> Callable[[Request], Response]:
        """Run ``work`` and render; any failure an operator can act on becomes a banner, never a traceback.

        ``reads_letters``: ``work`` receives DLQ letters (raising their receive counts), so another
        site's request is refused before any AWS call.
        """

        def endpoint(request: Request) -> Response:
            if reads_letters and (refused := refusals.cross_site_refusal(request)) is not None:
                return refused
            fragment = request.headers.get("hx-request") == "true"
            with target.counter.measure() as measured:
                try:
                    context = work(request)
                    error = None
                except Exception as exc:  # noqa: BLE001 - classified; the unknown ones are logged, not shown
                    context, error = {}, _banner(exc)
            if error is not None:
                name = "_banner.html" if fragment else "error.html"
                return render(request, name, 200 if fragment else 502, error=error, measured=measured, page=template)
            return render(request, template, measured=measured, **context)

        return endpoint

    def tiers(request: Request) -> dict[str, Any]:
        # The read documented in operations/status.py: 2 GetQueueAttributes per tier, 1 DescribeAlarms,
        # 1 GetMetricData per refresh; the stage is discovered once per console (its first page).
        deployment = target.deployment()
        return {
            "snapshot": stage_status.read_status(
                target.stage, deployment.tiers, target.client, source=deployment.source
            )
        }

    def job_types(request: Request) -> dict[str, Any]:
        # The Tiers page's read plus one ListMetrics (the job types of the last 3 hours), their counts
        # in the same single GetMetricData (operations/counts.py).
        deployment = target.deployment()
        return {
            "snapshot": stage_status.read_status(
                target.stage, deployment.tiers, target.client, source=deployment.source, by_job_type=True
            )
        }

    def dlq(request: Request) -> dict[str, Any]:
        deployment = target.deployment()
        tier = request.query_params.get("tier") or next(iter(deployment.tiers))
        deployment.tier(tier)
        letters: dict[str, Any] = {}
        answer = read_letters(
            target,
            tier,
            max_messages=DLQ_PAGE_LETTERS,
            on_letters=lambda batch: letters.update({letter.message_id: letter for letter in batch}),
        )
        samples = {}
        for index, group in enumerate(answer["groups"]):
            samples[index] = [
                {
                    "message_id": letter.message_id,
                    "body": letter.body,
                    "reasons": lookup.reasons_of(letter.attributes),
                    "frame": letter.frame,
                    "traceback": letter.traceback.text if letter.traceback is not None else None,
                }
                for mid in group["sample_message_ids"]
                if (letter := letters.get(mid))
            ]
        return {
            "tiers": list(deployment.tiers),
            "tier": tier,
            "answer": answer,
            "samples": samples,
            "bound": DLQ_PAGE_LETTERS,
        }

    def job(request: Request) -> dict[str, Any]:
        job_type = request.query_params.get("type", "").strip()
        key = request.query_params.get("key", "").strip()
        found = lookup.lookup_job(target, job_type, key) if job_type and key else None
        return {"job_type": job_type, "key": key, "found": found}

    def jobs(request: Request) -> dict[str, Any]:
        # Recent runs, from the consumers' run lines: one Logs Insights query (billed per GB scanned), run
        # only when the form is sent, never on a page's refresh.
        from ..operations.search import search
        from ..operations.search_query import Search, SearchError

        params = request.query_params
        fields = {name: params.get(name, "").strip() for name in ("type", "key", "tenant", "tag", "outcome", "hours")}
        if not params.get("run"):
            return {"fields": fields, "found": None, "problem": None}
        wanted = Search(
            fields["type"] or None,
            fields["key"] or None,
            fields["tenant"] or None,
            tuple(tag for tag in fields["tag"].split() if tag),
            fields["outcome"] or None,
            JOBS_PAGE_RUNS,
        )
        try:
            hours = float(fields["hours"] or 1)
            if not 0 < hours <= 24 * 30:
                raise SearchError(f"hours must be more than 0 and at most 720, got {fields['hours']!r}")
            found = search(target, wanted, since=timedelta(hours=hours))
        except (SearchError, ValueError) as exc:
            return {"fields": fields, "found": None, "problem": str(exc)}
        return {"fields": fields, "found": found, "problem": None}

    def batch(request: Request) -> dict[str, Any]:
        from ..operations.batches import read_batch  # one Query of the batch's items

        batch_id = request.query_params.get("id", "").strip()
        return {"batch_id": batch_id, "view": read_batch(target, batch_id) if batch_id else None}

    def replay_form(request: Request) -> dict[str, Any]:
        deployment = target.deployment()
        return {
            "tiers": list(deployment.tiers),
            "tier": request.query_params.get("tier") or next(iter(deployment.tiers)),
            "default_max": DEFAULT_REPLAY_MAX,
        }

    async def replay_action(request: Request) -> Response:
        if (refused := refusals.action_refusal(security, request, await _form_token(request))) is not None:
            return refused
        form = await request.form()
        dry_run = request.url.path.endswith("/dry-run")
        fields = {
            name: str(form.get(name) or "").strip()
            for name in ("tier", "job_type", "error_type", "older_than_seconds", "max_messages")
        }

        def work(_: Request) -> dict[str, Any]:
            event = _replay_event(fields, dry_run)
            return {"fields": fields, "dry_run": dry_run, "answer": run_replay(target, event, Via.auto)}

        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(guarded("_replay_result.html", work), request)

    def pauses(request: Request) -> dict[str, Any]:
        # One GetParameters (the mappings' UUIDs) and one GetEventSourceMapping per tier; a paused tier
        # adds its ListTags and its queue's retention (docs/console.md).
        deployment = target.deployment()
        states = pausing.read_pauses(target.stage, deployment.tiers, target.client)
        return {
            "tiers": list(deployment.tiers),
            "states": states,
            "lines": {
                tier: pausing.paused_line(
                    state,
                    oldest_age_seconds=None,
                    retention=pausing.retention_seconds(target.client, deployment.tiers[tier].queue_url),
                )
                for tier, state in states.items()
                if state.paused
            },
        }

    async def pause_action(request: Request) -> Response:
        """``/tiers/{pause|resume}/{check|run}``: check shows what the action does and a confirm button; run does it."""
        form = await request.form()
        if (refused := _pause_refusal(security, request, str(form.get(CSRF_FIELD) or ""))) is not None:
            return refused
        action, step = request.path_params["action"], request.path_params["step"]
        tier = str(form.get("tier") or "").strip()

        def work(_: Request) -> dict[str, Any]:
            target.deployment().tier(tier)  # an unknown tier is a banner naming the known ones
            done = None
            if step == "run":
                done = (
                    pausing.pause_tier(target.stage, tier, target.client, via="console")
                    if action == "pause"
                    else pausing.resume_tier(target.stage, tier, target.client)
                )
            return {"action": action, "tier": tier, "done": done}

        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(guarded("_pause_result.html", work), request)

    routes = [
        Route("/", guarded("tiers.html", tiers)),
        Route("/fragments/pauses", guarded("_pauses.html", pauses)),
        Route("/tiers/{action:str}/{step:str}", pause_action, methods=["POST"]),
        Route("/fragments/tiers", guarded("_tiers.html", tiers)),
        Route("/job-types", guarded("job_types.html", job_types)),
        Route("/fragments/job-types", guarded("_job_types.html", job_types)),
        Route("/dlq", guarded("dlq.html", dlq, reads_letters=True)),
        Route("/job", guarded("job.html", job, reads_letters=True)),
        Route("/jobs", guarded("jobs.html", jobs)),
        Route("/batch", guarded("batch.html", batch)),
        Route("/replay", guarded("replay.html", replay_form)),
        Route("/replay/dry-run", replay_action, methods=["POST"]),
        Route("/replay/run", replay_action, methods=["POST"]),
        *letter_routes(target, security, guarded),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.target = target
    app.state.security = security
    app.add_middleware(_GuardMiddleware, security=security)
    return app


class _GuardMiddleware(Guard):
    """:class:`Guard` in Starlette's middleware signature (``app``, then options)."""

    def __init__(self, app: Any, security: Security):
        super().__init__(app, security)


async def _form_token(request: Request) -> str:
    """The CSRF token a form posted (``""`` without one); a header may carry it instead."""
    return str((await request.form()).get(CSRF_FIELD) or "")


def _pause_refusal(security: Security, request: Request, form_token: str) -> Response | None:
    """What :func:`refusals.action_refusal` refuses; ``404`` for an action or step the route does not know."""
    if (refused := refusals.action_refusal(security, request, form_token)) is not None:
        return refused
    if request.path_params.get("action") not in ("pause", "resume") or request.path_params.get("step") not in (
        "check",
        "run",
    ):
        return PlainTextResponse("Not found.", status_code=404)
    return None


def _replay_event(fields: dict[str, str], dry_run: bool) -> dict[str, Any]:
    """The replay event from the form: empty filters are absent; numbers must be whole."""
    event: dict[str, Any] = {"action": "replay", "tier": fields["tier"], "dry_run": dry_run}
    for name in ("job_type", "error_type"):
        if fields[name]:
            event[name] = fields[name]
    for name in ("older_than_seconds", "max_messages"):
        if fields[name]:
            try:
                event[name] = int(fields[name])
            except ValueError:
                raise OperatorError(
                    f"{name.replace('_', ' ')} must be a whole number, got {fields[name]!r}", 2
                ) from None
    return event


def _banner(exc: Exception) -> str:
    explained = explain(exc)
    if explained is not None:
        return explained[0]
    logger.exception("console: unexpected error")
    return f"Unexpected error ({type(exc).__name__}); the console's log has the details."


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _windows(counts: dict[str, WindowCounts] | None, count: str) -> str:
    """One count over the windows, ``3 / 43 / 1,204`` (``–``: CloudWatch could not be read)."""
    if counts is None:
        return "–"
    return " / ".join(f"{getattr(counts[label], count):,}" for label in WINDOWS)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f} %"


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"
