"""The console's live counts: the Tiers page's Jobs table (in its refresh's calls) and the Job types
page, each tier then its job types, from the datapoints the CLI's tests put (tests/cli/test_cli_counts.py)."""

from __future__ import annotations

import re

import requests

from tests.cli.test_cli_counts import counted_jobs  # noqa: F401 - the fixture, shared with the CLI's test


def get(url: str, **kwargs) -> requests.Response:
    return requests.get(url, timeout=30, **kwargs)


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in re.findall(r'<td class="count-[a-z]+">([^<]*)</td>', row)]


def test_the_tiers_page_counts_each_tier_in_the_same_calls(serve, counted_jobs):  # noqa: F811
    console = serve()
    page = get(console.url).text

    rows = dict(re.findall(r'<tr data-counts="([a-z]+)">(.*?)</tr>', page, re.S))
    assert _cells(rows["bulk"]) == ["3 / 43 / 12,043", "0 / 0 / 1", "0 / 0 / 0", "0 / 7 / 7"]
    assert _cells(rows["critical"]) == ["0 / 0 / 0"] * 4
    assert 'href="/job-types"' in page
    fragment = get(console.url + "fragments/tiers", headers={"HX-Request": "true"}).text
    assert "refreshed with 8 AWS calls" in fragment  # 2 per tier + DescribeAlarms + GetMetricData, as before


def test_the_job_types_page_lists_each_tiers_types_beneath_it(serve, counted_jobs):  # noqa: F811
    console = serve()

    page = get(console.url + "job-types")

    assert page.status_code == 200
    body = page.text
    rows = re.findall(r'<tr class="(tier|job-type)" data-[a-z-]+="([a-z_.]+)">(.*?)</tr>', body, re.S)
    assert [(kind, name) for kind, name, _ in rows] == [
        ("tier", "critical"),
        ("job-type", "payments.update_balance"),
        ("tier", "transactional"),
        ("tier", "bulk"),
        ("job-type", "analytics.record_event"),
        ("job-type", "demo.hello"),
    ]
    cells = {name: _cells(row) for _, name, row in rows}
    assert cells["analytics.record_event"] == ["3 / 43 / 12,043", "0 / 0 / 1", "0 / 0 / 0", "0 / 0 / 0"]
    assert cells["demo.hello"] == ["0 / 0 / 0", "0 / 0 / 0", "0 / 0 / 0", "0 / 7 / 7"]
    assert cells["payments.update_balance"][2] == "0 / 2 / 2"
    assert 'hx-get="/fragments/job-types"' in body and 'class="on">Job types</a>' in body
    fragment = get(console.url + "fragments/job-types", headers={"HX-Request": "true"}).text
    # The Tiers page's 8 calls and one ListMetrics: the job types' counts are in the same GetMetricData.
    assert "<html" not in fragment and "refreshed with 9 AWS calls" in fragment


def test_the_job_types_page_says_when_no_job_has_run(serve):
    console = serve()

    body = get(console.url + "job-types").text

    assert "No job type has written a count in the last 3 hours." in body
    assert len(re.findall(r'<tr class="tier"', body)) == 3
