"""A release is one version everywhere: pyproject.toml, the package, the changelog and its git tag; and a licence."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import tiered_jobs

ROOT = Path(__file__).resolve().parents[1]
#: Keep a Changelog's release heading: ``## [1.2.3] - 2026-12-07``.
RELEASE = re.compile(r"^## \[(?P<version>\d+\.\d+\.\d+)\] - (?P<date>\d{4}-\d{2}-\d{2})$", re.MULTILINE)


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def released() -> list[str]:
    return [m["version"] for m in RELEASE.finditer((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))]


def test_the_package_and_pyproject_carry_the_changelogs_latest_release():
    assert released(), "CHANGELOG.md has no release heading like '## [0.1.0] - 2026-12-07'"
    assert project()["version"] == tiered_jobs.__version__ == released()[0]


def test_the_changelog_keeps_an_unreleased_section_above_its_releases_newest_first():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first = RELEASE.search(text)
    assert first is not None and text.index("## [Unreleased]") < first.start()
    versions = [tuple(int(part) for part in v.split(".")) for v in released()]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)


def test_every_release_tag_names_a_version_of_the_changelog():
    # A clone may carry no tags (CI's does not need them); every tag it does carry is a release.
    tags = subprocess.run(["git", "tag", "--list", "v*"], cwd=ROOT, capture_output=True, text=True, check=True)
    unknown = [tag for tag in tags.stdout.split() if tag.removeprefix("v") not in released()]
    assert not unknown, f"tags without a CHANGELOG.md section: {unknown}"


def test_the_licence_is_apache_2_in_the_file_and_the_metadata():
    assert project()["license"] == "Apache-2.0"
    assert set(project()["license-files"]) == {"LICENSE", "NOTICE"}
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in licence
