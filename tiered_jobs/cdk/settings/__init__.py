"""The settings model: everything a user sets in ``cdk.json`` context, with defaults and validation.

All settings live under the context key ``tiered_jobs`` (``CONTEXT_KEY``). ``AppSettings.from_context``
turns that raw dictionary into frozen dataclasses and fails early, before any construct is built,
with a ``SettingsError`` that names the tier, the key and the fix. Unknown keys are errors too (a
typo must not silently fall back to a default).

Per tier, the values come from (last wins): the generic ``TierSettings`` defaults, the built-in
preset of that tier name (``TIER_PRESETS``), then the tier's object in ``cdk.json``.

One module per concept, each importing only those above it:

- ``values``: ``SettingsError`` and the primitives that read and check one raw value;
- ``rate_limits``: a tier's rate-limit settings; ``tiers``: ``TierSettings``, the presets and the
  guardrails; ``tier_builder``: building a tier from its raw values;
- ``schedules``: periodic jobs (``ScheduleSettings``); ``triggers``: AWS events as jobs
  (``TriggerSettings``); ``resources``: the jobs' AWS resources
  (``ResourceSettings``);
- ``chat``: the Slack and Microsoft Teams channels the pages go to (``ChatSettings``);
- ``encryption``: the stage's own KMS key (``EncryptionSettings``);
- ``publishers``: publishers in other accounts (``PublisherAccounts``);
- ``names``: the AWS names a stage and its tiers make, against AWS's length limits;
- ``app``: ``AppSettings``, the default routes and local mode's overrides;
- ``report``: the one line a mistake prints at synthesis, in this repository's app and any other.
"""

from __future__ import annotations

from .app import (
    ARCHITECTURES,
    CREATE_REGISTRY,
    LOG_RETENTION_DAYS,
    RUNTIMES,
    AppSettings,
    with_local_overrides,
)
from .report import install_excepthook, one_line
from .resources import ACCESS, QUEUE, TABLE, ResourceSettings
from .schedules import ScheduleSettings
from .tiers import TIER_PRESETS, TierSettings
from .triggers import TriggerSettings
from .values import SettingsError

__all__ = [
    "ACCESS",
    "ARCHITECTURES",
    "CREATE_REGISTRY",
    "LOG_RETENTION_DAYS",
    "QUEUE",
    "RUNTIMES",
    "TABLE",
    "TIER_PRESETS",
    "AppSettings",
    "ResourceSettings",
    "ScheduleSettings",
    "SettingsError",
    "TierSettings",
    "TriggerSettings",
    "install_excepthook",
    "one_line",
    "with_local_overrides",
]
