"""The replay domain: inspect a tier's dead-letter queue and move letters back to its queue.

The replay Lambda (:mod:`tiered_jobs.handlers.replay`) is a thin handler over it (event -> domain
-> response); the operator CLI and console run the same domain directly: ``parse_event`` then
``run``. A bad event *raises* :class:`ReplayEventError`: the Lambda console then shows the
invocation as failed with the full message in ``errorMessage`` (every problem and the allowed
fields), and ``aws lambda invoke`` reports ``FunctionError``, so a script can't mistake a refused
event for an empty DLQ.
"""

from __future__ import annotations

from .archive import JsonLinesArchive, S3Archive, archive_from_env, read_archive
from .events import MAX_MESSAGES_CAP, ReplayEventError, ReplayRequest, parse_event
from .grouping import normalise_message
from .service import approximate_depth, run
from .tiers import TierQueues, tiers_from_env

__all__ = [
    "MAX_MESSAGES_CAP",
    "JsonLinesArchive",
    "ReplayEventError",
    "ReplayRequest",
    "S3Archive",
    "TierQueues",
    "approximate_depth",
    "archive_from_env",
    "normalise_message",
    "parse_event",
    "read_archive",
    "run",
    "tiers_from_env",
]
