"""Local mode's tier profile: seconds instead of minutes, applied to what a tier leaves to its defaults.

Local mode (context ``LOCAL_OVERRIDES_CONTEXT_KEY``) speeds tiers up so a retry takes seconds on a
laptop. It never replaces a value the user wrote: a ``max_attempts: 2`` or a ``timeout_seconds: 60``
in ``cdk.json`` is what a developer wants to try before deploying, so it stays. The profile fills
only the settings a tier leaves unset (its defaults and its preset's), and leaves out one that the
tier's own values rule out (a ``time_budget_margin_ms`` of 10 000 keeps the 30 s timeout it needs).
What it changed is recorded (``local_profile_changes``), so local mode can print it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tiered_jobs.contract.names import DEFAULT_TIERS

from .tier_builder import build_tier
from .tiers import TierSettings
from .values import SettingsError

#: The key of the template metadata ``TieredJobs`` that lists the changes (local mode only).
METADATA_KEY = "local_profile"


@dataclass(frozen=True)
class LocalChange:
    """One setting of one tier that the profile changed: from its default to the local value."""

    tier: str
    setting: str
    before: Any
    after: Any

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "setting": self.setting, "from": _plain(self.before), "to": _plain(self.after)}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def profiled_tier(name: Any, values: Any, profile: Mapping[str, Any]) -> Any:
    """The tier's raw values with ``profile`` filling the settings it leaves unset; a profile value
    the tier's own values rule out is left out (an invalid tier is returned as it is: validation
    names its own mistake, not the profile's)."""
    if values is not None and not isinstance(values, Mapping):
        return values
    own = dict(values or {})
    unset = {key: value for key, value in profile.items() if key not in own}
    if _valid(name, {**own, **unset}):
        return {**own, **unset}
    kept = dict(own)
    for key, value in unset.items():  # one at a time: keep each that still leaves a valid tier
        if _valid(name, {**kept, key: value}):
            kept[key] = value
    return kept


def _valid(name: Any, values: Mapping[str, Any]) -> bool:
    try:
        build_tier(name, values)
    except SettingsError:
        return False
    return True


def raw_tiers(raw: Mapping[str, Any] | None) -> Any:
    """The raw ``tiers`` of the settings (the default tiers, unset, when none are named)."""
    return (raw or {}).get("tiers") or {name: {} for name in DEFAULT_TIERS}


def local_profile_changes(
    raw: Mapping[str, Any] | None, overrides: Any, applied: Sequence[TierSettings] | None = None
) -> tuple[LocalChange, ...]:
    """What the profile in ``overrides`` changes in the tiers of the raw settings ``raw``, per tier and
    setting (nothing when a tier is invalid: its validation reports it).

    ``applied``: the tiers that were built (settings validated elsewhere, e.g. an app that applies
    the overrides itself); when they are not the tiers ``raw`` gives, ``raw`` is not what was built
    and nothing is claimed.
    """
    profile = (overrides or {}).get("tier_settings") if isinstance(overrides, Mapping) else None
    tiers = raw_tiers(raw)
    if not profile or not isinstance(tiers, Mapping):
        return ()
    changes: list[LocalChange] = []
    built: list[TierSettings] = []
    for name, values in tiers.items():
        try:
            before = build_tier(name, values or {})
            after = build_tier(name, profiled_tier(name, values, profile))
        except SettingsError:
            return ()
        built.append(after)
        changes.extend(
            LocalChange(name, key, getattr(before, key), getattr(after, key))
            for key in profile
            if hasattr(before, key) and getattr(before, key) != getattr(after, key)
        )
    if applied is not None and tuple(applied) != tuple(built):
        return ()
    return tuple(changes)
