"""The console's Jobs page: recent runs from the consumers' run lines, with the search's filters, each
run linked to its job and batch; the query runs only when the form is sent; a bad filter is named."""

from __future__ import annotations

import pytest
import requests

from tests.support.run_lines import ship_run_lines


@pytest.fixture
def logged(tier, deployment, recorded):
    """A consumer's run lines in the critical tier's log group (two tagged order=o-17, one dead-lettered)."""
    return ship_run_lines(tier)


def test_the_jobs_page_lists_the_runs_that_match_with_their_scan(serve, logged):
    console = serve()

    empty = requests.get(console.url + "jobs", timeout=30)
    page = requests.get(console.url + "jobs", params={"run": "1", "tag": "order=o-17"}, timeout=30)

    assert empty.status_code == 200 and "log group(s)" not in empty.text  # no query until the form is sent
    assert page.status_code == 200
    assert "log group(s): $" in page.text
    assert "inv-2" in page.text and "pay-1" in page.text and "inv-1<" not in page.text
    assert "<strong>dead_lettered</strong>" in page.text and "/job?type=testjobs.transient&amp;key=pay-1" in page.text


def test_a_bad_filter_is_named_on_the_page(serve, logged):
    console = serve()

    page = requests.get(console.url + "jobs", params={"run": "1", "tag": "order"}, timeout=30)

    assert page.status_code == 200 and "NAME=VALUE" in page.text
