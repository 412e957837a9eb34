"""The README and the docs' index as a new reader meets them: a job in the first screen, every page
reachable from the index by its group, every link landing on a heading that exists, and the
requirements and figures the README states equal to their sources."""

from __future__ import annotations

import importlib.util
import re
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
#: The reader's first screen: a job must be shown within it.
FIRST_SCREEN_LINES = 30
MAX_README_LINES = 150
INDEX_GROUPS = ["Getting started", "User guide", "Reference", "Internals"]

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)


def pages() -> list[Path]:
    return [README, ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but ``-`` and ``_`` dropped, spaces to ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(h) for h in HEADING.findall(text)}


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z]+:", target):  # a web address, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            problems.append(f"{page.relative_to(root)}: {target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{page.relative_to(root)}: {target}: no heading #{anchor} there")
    return problems


def test_every_relative_link_lands_on_a_file_and_heading_that_exist():
    problems = [problem for page in pages() for problem in broken_links(page)]
    assert problems == [], "\n".join(problems)


def test_the_link_check_finds_a_missing_heading(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n## Real heading: `x=`\n", encoding="utf-8")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#real-heading-x) [bad](a.md#gone) [file](c.md)\n", encoding="utf-8")
    assert broken_links(page, tmp_path) == ["b.md: a.md#gone: no heading #gone there", "b.md: c.md: no such file"]


def test_the_readme_shows_a_job_in_its_first_screen_and_stays_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < MAX_README_LINES, f"README.md is {len(lines)} lines; move detail to docs/"
    first_screen = "\n".join(lines[:FIRST_SCREEN_LINES])
    assert "@job(" in first_screen
    text = "\n".join(lines)
    hello = [text.index(step) for step in ("@job(", "make up", "tiered-jobs publish", "tiered-jobs job")]
    assert hello == sorted(hello), "the hello job reads: the job, make up, publish, job"
    assert "docs/README.md" in text and "docs/getting-started.md" in text


def test_the_docs_index_lists_every_page_under_its_groups():
    text = INDEX.read_text(encoding="utf-8")
    groups = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert groups == INDEX_GROUPS
    linked = {target.partition("#")[0] for target in LINK.findall(text)}
    missing = sorted(p.name for p in DOCS.glob("*.md") if p != INDEX and p.name not in linked)
    assert missing == [], f"pages the index does not list: {missing}"


def node_releases() -> dict[int, tuple[date, bool]]:
    """The Node.js majors the pinned jsii runtime knows: each one's end of life and whether it is untested."""
    spec = importlib.util.find_spec("jsii")  # found, not imported: importing starts jsii's Node.js process
    assert spec and spec.origin, "the jsii package is installed with aws-cdk-lib"
    runtime = Path(spec.origin).parent / "_embedded" / "jsii" / "bin__jsii-runtime.js"
    found = re.findall(
        r'new NodeRelease\((\d+),\{endOfLife:new Date\("([\d-]+)"\)([^}]*)\}', runtime.read_text(encoding="utf-8")
    )
    assert found, f"no Node.js release table in {runtime}"
    return {int(major): (date.fromisoformat(eol), "untested:!0" in rest) for major, eol, rest in found}


def last_release_date() -> date:
    """The date of the newest release in CHANGELOG.md: the day the README's claims were last made true."""
    found = re.search(r"^## \[[\d.]+\] - (\d{4}-\d{2}-\d{2})$", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert found, "CHANGELOG.md has no dated release"
    return date.fromisoformat(found.group(1))


def test_the_readme_asks_for_a_node_line_jsii_supports():
    """jsii prints a warning on an end-of-life or untested Node.js: the README never asks for one. End of
    life is judged on the last release's date, not today's, so the test changes only with the code (a
    release after a line's end of life must drop it)."""
    text = README.read_text(encoding="utf-8")
    (requirement,) = re.findall(r"Node\.js ([\d+ or,]+\d\+?)", text)
    majors = [int(m) for m in re.findall(r"\d+", requirement)]
    releases, released = node_releases(), last_release_date()
    unsupported = [m for m in majors if m not in releases or releases[m][1] or releases[m][0] <= released]
    assert majors and unsupported == [], f"Node.js {unsupported}: end of life or untested for jsii"
    assert not requirement.endswith("+"), "an open range names Node lines jsii has not tested"
    pinned = int((ROOT / ".nvmrc").read_text(encoding="utf-8").strip().lstrip("v").split(".")[0])
    assert pinned in majors, f".nvmrc pins Node.js {pinned}, which the README does not name"


def test_the_readme_cost_is_the_deploy_guides_total():
    total = re.search(r"\*\*total per stage\*\* \| \| \| \*\*\$([\d.]+)\*\*", (DOCS / "deploy.md").read_text())
    assert total, "docs/deploy.md's fixed-cost table has no total"
    assert f"${total.group(1)} a month" in README.read_text(encoding="utf-8")
