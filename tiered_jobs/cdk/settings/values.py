"""The validation primitives every part of the settings model reads raw values with.

Each one reads ``raw[key]`` (or its default), checks it and raises a ``SettingsError`` whose
message starts with ``where`` (the tier, schedule or resource) and says how to fix the value.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Any

from tiered_jobs.contract.errors import USAGE, TieredJobsError


class SettingsError(TieredJobsError, ValueError):
    """Malformed or unsafe ``cdk.json`` context; the message says where and how to fix it."""

    code = USAGE


def field_defaults(cls: type) -> dict[str, Any]:
    """Each field's default as the dataclass declares it (the one place a default is written)."""
    defaults = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
    return defaults


def reject_unknown(raw: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise SettingsError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: {', '.join(sorted(allowed))}"
        )


def read_int(
    raw: Mapping[str, Any],
    key: str,
    default: int,
    where: str,
    *,
    minimum: int,
    maximum: int | None = None,
    unit: str = "",
) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(f"{where}: {key} must be a whole number, got {value!r}; e.g. {key}: {default}")
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}{unit}"
        raise SettingsError(f"{where}: {key} {value} is out of range; use a value {bounds}")
    return value


def read_number(raw: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SettingsError(f"{where}: {key} must be a number, got {value!r}; e.g. {key}: {default}")
    return float(value)


def read_bool(raw: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise SettingsError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def read_choice(raw: Mapping[str, Any], key: str, default: str, choices: tuple[str, ...], where: str) -> str:
    value: str = raw.get(key, default)
    if value not in choices:
        raise SettingsError(f"{where}: {key} {value!r} is not supported; use one of {', '.join(choices)}")
    return value


def read_optional_str(
    raw: Mapping[str, Any], key: str, where: str, pattern: re.Pattern[str], example: str
) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.match(value):
        raise SettingsError(f"{where}: {key} {value!r} is invalid; use {example} or remove the key")
    return value
