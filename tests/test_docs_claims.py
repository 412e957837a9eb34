"""What the docs say the code does, checked against the code: the publisher's delay errors, the
payload schema's keywords, and the names the "Coming from" pages map other job systems onto."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from tests.support.commands import tiered_jobs_problems
from tiered_jobs.contract import payloads
from tiered_jobs.publisher import Publisher
from tiered_jobs.publisher.models import delay_in_seconds
from tiered_jobs.runtime import job

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMING_FROM = ["docs/coming-from-celery.md", "docs/coming-from-sidekiq.md"]
#: A delay error quoted in a page, and the value it names (``got 1000``, ``got float``).
DELAY_ERROR = re.compile(r"`(delay must be [^`]*, got (\S+?))`")


def test_every_delay_error_a_page_quotes_is_the_publishers_for_the_value_it_names():
    """A delay beyond SQS's 900 s is scheduled, not refused: no page may quote a refusal the publisher never makes."""
    quoted = [(page.name, m.group(1), m.group(2)) for page in PAGES for m in DELAY_ERROR.finditer(page.read_text())]
    assert quoted, "the pages quote the publisher's delay errors (docs/publishing.md, docs/bad-input.md)"
    wrong = []
    for page, message, value in quoted:
        given = 1.5 if value == "float" else int(value)
        try:
            delay_in_seconds(given)  # type: ignore[arg-type]  # a float is the bad input the error is about
        except ValueError as exc:
            if str(exc) != message:
                wrong.append(f"{page}: {message!r}, but the publisher says {str(exc)!r}")
        else:
            wrong.append(f"{page}: {message!r}, but the publisher takes a delay of {value}")
    assert wrong == []


def test_no_page_says_a_delay_is_limited_to_sqss_900_seconds():
    said = [
        f"{page.name}: {line.strip()}"
        for page in PAGES
        for line in page.read_text().splitlines()
        if re.search(r"delay=?`? \(seconds 0.900|delay must be 0.900", line)
    ]
    assert said == []


def schema_keyword_table() -> set[str]:
    text = (ROOT / "docs" / "publishing.md").read_text()
    section = text.split("## Payload schemas: the supported keywords", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| kind")]
    return {word for row in rows for word in re.findall(r"`(\$?[A-Za-z]+)`", row.split("|")[2])}


def test_the_docs_list_exactly_the_payload_schema_keywords_the_validator_takes():
    assert schema_keyword_table() == set(payloads.KEYWORDS | payloads.ANNOTATIONS)


def setting_names() -> set[str]:
    from tiered_jobs.cdk.settings import AppSettings, TierSettings

    return {f.name for model in (AppSettings, TierSettings) for f in dataclasses.fields(model)}


def coming_from_rows(page: str) -> list[tuple[str, str]]:
    lines = (ROOT / page).read_text().splitlines()
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("|---")][1:]
    cells = [row.replace("\\|", "/").strip("| ").split(" | ") for row in rows]
    return [(theirs, ours) for theirs, ours in cells]


@pytest.mark.parametrize("page", COMING_FROM)
def test_a_coming_from_page_maps_ten_names_onto_ones_the_code_has(page):
    rows = coming_from_rows(page)
    assert len(rows) >= 10
    ours = " ".join(ours for _, ours in rows)
    publish_options = set(inspect.signature(Publisher.publish).parameters)
    job_options = set(inspect.signature(job).parameters)
    batch_options = set(inspect.signature(Publisher.batch).parameters)
    problems = []
    for name, options in re.findall(r"`(publish|@job|batch)\(([^`]*)\)`", ours):
        known = {"publish": publish_options, "@job": job_options, "batch": batch_options}[name]
        problems += [f"{name}(... {o}=)" for o in re.findall(r"(\w+)=", options) if o not in known]
    for command in re.findall(r"`(tiered-jobs [^`]+)`", ours):
        concrete = command.replace("TIER", "critical").replace("TYPE", "a.b").replace("KEY", "k")
        problems += tiered_jobs_problems(concrete)
    for method in re.findall(r"`Publisher\.(\w+)\(", ours):
        problems += [] if hasattr(Publisher, method) else [f"Publisher.{method}"]
    for option in re.findall(r"`(\w+)` / `(\w+)` per tier", ours):
        problems += [name for name in option if name not in setting_names()]
    assert problems == []


def test_the_console_guide_names_every_page_and_lists_none_as_not_done():
    """docs/console.md once listed a per-job-type breakdown as not done while /job-types served it."""
    source = (ROOT / "tiered_jobs" / "console" / "app.py").read_text()
    pages = set(re.findall(r'Route\("(/[a-z-]*)"', source))  # one segment: a page, not a fragment or an action
    guide = (ROOT / "docs" / "console.md").read_text()
    assert sorted(page for page in pages if f"(`{page}" not in guide) == []
    not_done = guide.split("## Not done yet", 1)[1].split("\n## ", 1)[0]
    assert "job type" not in not_done.lower().replace("-", " "), "a page the console serves is listed as not done"
