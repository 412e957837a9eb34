"""The README and the configuration guide name every setting the settings model accepts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _setting_names() -> set[str]:
    from tiered_jobs.cdk.settings import AppSettings, TierSettings

    names = {f.name for f in dataclasses.fields(AppSettings)} | {f.name for f in dataclasses.fields(TierSettings)}
    return names - {"name"}  # a tier's name is its key under "tiers"


@pytest.mark.parametrize("doc", ["README.md", "docs/configuration.md"])
def test_every_setting_is_documented(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    assert sorted(name for name in _setting_names() if f"`{name}`" not in text) == []


def test_readme_shows_the_two_front_door_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
