"""The README and the configuration guide name every setting the settings model accepts."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setting_names() -> set[str]:
    from tiered_jobs.cdk.settings import AppSettings, TierSettings

    names = {f.name for f in dataclasses.fields(AppSettings)} | {f.name for f in dataclasses.fields(TierSettings)}
    return names - {"name"}  # a tier's name is its key under "tiers"


def test_every_setting_is_documented_in_the_configuration_guide():
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert sorted(name for name in _setting_names() if f"`{name}`" not in text) == []


def test_the_readmes_settings_table_names_real_settings_and_links_the_rest():
    """The README keeps the few settings most people change; the guide has them all."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("| `")]
    named = {name for line in table for name in re.findall(r"`(\w+)`", line.split("|")[1])}
    assert 5 <= len(table) <= 6 and named <= _setting_names(), named - _setting_names()
    assert "docs/configuration.md" in text


def test_readme_shows_the_two_front_door_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
