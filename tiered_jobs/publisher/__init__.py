"""Publish jobs from any service in one line, correctly.

    from tiered_jobs.publisher import publish
    publish("invoices.send", {"invoice_id": "inv_1"}, "inv_1")

What a publish guarantees:

- **Validated before anything is sent**: the envelope v1 rules (the same ones the consumer and
  ``envelope.schema.json`` apply), the job type's payload schema when the contract ships one
  (``contract/schemas/<type>.schema.json``, applied by the consumer too), a JSON-serialisable
  payload, only characters SQS accepts (no control characters, lone surrogates, U+FFFE, U+FFFF),
  a message within SQS's 1 MiB, a routable job type, a known tier, a delay SQS accepts.
  A batch with one bad job sends nothing.
- **Routed** by the stack's own routing table (an explicit ``tier=`` overrides it).
- **Batched**: per tier, ``SendMessageBatch`` calls of at most 10 entries and 1 MiB.
- **Later**: ``at=`` (an aware datetime) or a ``delay`` beyond SQS's 15 minutes becomes a
  one-time EventBridge Scheduler schedule (``tiered_jobs.stage.scheduling``), cancellable with
  :meth:`Publisher.cancel`; within 15 minutes SQS's own message delay is used.
- **Once while pending** (``unique_for=``): a job of a type and key already pending is not sent
  again (the result says ``already_queued``), one conditional write per job in the stage's unique
  jobs' table (``publisher/unique.py``); **debounced** (``debounce=``): a burst of publishes runs
  once, after the last, with its payload (the job's one-time schedule, moved by each publish).
- **Batches and chains** (``batch(on_success=..., on_complete=...)``, ``chain(a, b, c)``): a callback
  published exactly once when every member has finished, a link when the one before succeeded, on the
  stage's batches table (``publisher/batches.py``, docs/workflows.md).
- **Never a silent drop**: entries SQS reports failed are retried (only those, exponential
  backoff with full jitter); senders' faults are not retried. If anything still failed,
  :class:`PublishError` names every such job and carries every entry's :class:`PublishResult`.
  Publishing the same job again is always safe: the consumer is idempotent on the key.

The publisher needs boto3 and the contract only (no CDK, nothing from ``functions/``).
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from ..contract.names import Env
from ..stage import discovery
from .client import Publisher
from .errors import InvalidJobError, PublishError
from .models import Job, PublishResult, ResendPolicy

__all__ = [
    "InvalidJobError",
    "Job",
    "PublishError",
    "PublishResult",
    "Publisher",
    "ResendPolicy",
    "batch",
    "cancel",
    "chain",
    "configure",
    "configured",
    "default_publisher",
    "publish",
    "publish_batch",
]


# -- the default publisher, for the one-line calls --------------------------------------------

P = ParamSpec("P")
R = TypeVar("R")

_default: Publisher | None = None
_default_lock = threading.Lock()


def default_publisher() -> Publisher:
    """The process-wide publisher, built on first use from the environment.

    ``TIERED_JOBS_QUEUE_URL_<TIER>`` variables (with ``TIERED_JOBS_ROUTES``) win; otherwise
    ``TIERED_JOBS_STAGE`` names the stage whose SSM parameters are read. :func:`configure` sets it
    explicitly instead.
    """
    global _default
    with _default_lock:
        if _default is None:
            if discovery.queue_urls_in_env(os.environ):
                _default = Publisher.from_env()
            elif os.environ.get(Env.STAGE):
                _default = Publisher.from_stage(os.environ[Env.STAGE])
            else:
                raise discovery.DiscoveryError(
                    f"no publisher configured: set {Env.STAGE} (the stage whose SSM parameters name the "
                    f"queues), or {Env.tier_var(Env.QUEUE_URL, '<tier>')} and {Env.ROUTES}, "
                    "or call tiered_jobs.publisher.configure(Publisher(...))"
                )
        return _default


def configured() -> Publisher | None:
    """The publisher :func:`configure` set or :func:`default_publisher` built (``None``: none yet).

    So that whoever swaps it for a while (``tiered_jobs.testing.eager``) can put it back."""
    return _default


def configure(publisher: Publisher | None) -> None:
    """Set the publisher the module-level functions use (``None``: rebuild from the environment)."""
    global _default
    with _default_lock:
        _default = publisher


def _on_default_publisher(method: Callable[Concatenate[Publisher, P], R]) -> Callable[P, R]:
    """``method`` as a module-level function: called on :func:`default_publisher` (built on the
    first call, not at import), with the method's own parameters, types and signature."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return method(default_publisher(), *args, **kwargs)

    without_self = list(inspect.signature(method).parameters.values())[1:]
    call.__signature__ = inspect.signature(method).replace(parameters=without_self)  # type: ignore[attr-defined]
    call.__doc__ = f":meth:`Publisher.{method.__name__}` on the :func:`default_publisher`."
    return call


publish = _on_default_publisher(Publisher.publish)
cancel = _on_default_publisher(Publisher.cancel)
publish_batch = _on_default_publisher(Publisher.publish_batch)
batch = _on_default_publisher(Publisher.batch)
chain = _on_default_publisher(Publisher.chain)
