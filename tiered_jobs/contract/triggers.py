"""AWS events as jobs (``triggers`` in ``cdk.json``): the envelope an EventBridge rule's input transformer builds.

A trigger is an EventBridge rule whose target is a tier queue. Its ``InputTransformer`` turns the
matched event into an envelope v1 without any code in between::

    InputPathsMap: {"key": "$.id", "payload": "$.detail", "time": "$.time"}
    InputTemplate: {"type": "<job type>", "idempotency_key": "<key>", "payload": <payload>,
                    "version": 1, "published_at": "<time>"}

The idempotency key is the event's ``id`` by default: EventBridge keeps an event's id when it
redelivers it, so a redelivered event runs once. It is the value itself, with no prefix, so an
event without that path leaves the key empty and the consumer refuses the envelope (permanent,
with its reason) rather than running every such event under one shared key.

The construct (``tiered_jobs.cdk.triggers``) writes this transformer; local mode
(``emulator.event_rules``) applies it as EventBridge does; the settings check the paths here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .envelope import ENVELOPE_VERSION

#: Where the key, the payload and the publish time come from when a trigger does not say.
DEFAULT_KEY_PATH = "$.id"
DEFAULT_PAYLOAD_PATH = "$.detail"
TIME_PATH = "$.time"
#: The variables of the transformer (``InputPathsMap`` keys: ``[A-Za-z0-9_-]+`` in botocore's model).
KEY_VARIABLE = "key"
PAYLOAD_VARIABLE = "payload"
TIME_VARIABLE = "time"
#: A path EventBridge evaluates: JSON dot notation (no brackets but array indices), names of letters, digits,
#: ``_`` and ``-`` ("Amazon EventBridge input transformation"); no wildcard, a key must be one value.
_PATH = re.compile(r"^\$(\.[A-Za-z0-9_-]+(\[[0-9]+\])*)*$")
#: ``TargetInputPath`` in botocore's ``events`` model: at most 256 characters.
MAX_PATH_CHARS = 256
#: ``TransformerInput`` (the template) in botocore's ``events`` model: at most 8192 characters.
MAX_TEMPLATE_CHARS = 8192
#: ``TransformerPaths`` in botocore's ``events`` model: at most 100 variables.
MAX_PATHS = 100


def path_problem(path: Any) -> str | None:
    """Why EventBridge would not take ``path`` as an input path of a trigger, or ``None``."""
    if not isinstance(path, str):
        return f"must be a JSON path string like '$.detail.id', got {path!r}"
    if len(path) > MAX_PATH_CHARS:
        return f"is longer than EventBridge's {MAX_PATH_CHARS} characters"
    if not _PATH.match(path):
        return (
            f"{path!r} is not a path EventBridge's input transformer takes: use dot notation from '$' "
            "(letters, digits, '_' and '-' in names, '[n]' array indices; no brackets around names, no wildcards), "
            "e.g. '$.detail.object.key'"
        )
    return None


def input_paths(key_path: str = DEFAULT_KEY_PATH, payload_path: str = DEFAULT_PAYLOAD_PATH) -> dict[str, str]:
    """The transformer's ``InputPathsMap``."""
    return {KEY_VARIABLE: key_path, PAYLOAD_VARIABLE: payload_path, TIME_VARIABLE: TIME_PATH}


def input_template(job_type: str) -> str:
    """The transformer's ``InputTemplate``: an envelope v1 with the three variables in place.

    The key and the time are quoted (strings); the payload is not (the object itself). The job type
    is written as JSON, so it cannot break the template (the settings allow only job-type characters).
    """
    return (
        f'{{"type":{json.dumps(job_type)},"idempotency_key":"<{KEY_VARIABLE}>","payload":<{PAYLOAD_VARIABLE}>,'
        f'"version":{ENVELOPE_VERSION},"published_at":"<{TIME_VARIABLE}>"}}'
    )
