"""The search's Logs Insights query: exact values as ``=`` (which field indexes serve), a type glob and a
key prefix as anchored regular expressions, every bad filter named; and every query it builds parses
under the grammar subset local mode implements (``emulator/insights.py``, the documented commands only)."""

from __future__ import annotations

import re

import pytest

from emulator import insights
from tiered_jobs.operations.search_query import RUN_OUTCOMES, Search, SearchError, glob_regex, literal, query


def _filter(text: str) -> str:
    (line,) = [line for line in text.split("\n| ") if line.startswith("filter ")]
    return line


def test_exact_values_are_equalities_and_globs_and_prefixes_are_anchored_regexes():
    exact = _filter(query(Search(job_type="invoices.send", tenant="acme", tags=("order=o-17",), outcome="retried")))
    assert 'job_type = "invoices.send"' in exact and 'tenant = "acme"' in exact
    assert '`tags.order` = "o-17"' in exact and 'outcome = "retried"' in exact
    fuzzy = _filter(query(Search(job_type="invoices.*", key_prefix="inv/1.")))
    assert r"job_type like /^invoices\..*$/" in fuzzy and r"idempotency_key like /^inv\/1\./" in fuzzy
    assert "outcome in [" in fuzzy and all(f'"{outcome}"' in fuzzy for outcome in RUN_OUTCOMES)


def test_the_glob_matches_what_a_shell_glob_would():
    pattern = re.compile(glob_regex("billing.?nvoice*"))
    assert pattern.match("billing.invoice_send") and not pattern.match("xbilling.invoice")
    assert literal('a"b\\c') == '"a\\"b\\\\c"'


def test_the_sort_and_limit_are_the_newest_runs_first():
    text = query(Search(limit=7))
    assert text.endswith("| sort @timestamp desc\n| limit 7")


@pytest.mark.parametrize(
    ("search", "said"),
    [
        (Search(tags=("order",)), "NAME=VALUE"),
        (Search(tags=("order=two words",)), "no spaces"),
        (Search(outcome="won"), "--outcome must be one of"),
        (Search(limit=0), "--limit must be 1-10000"),
        (Search(key_prefix=""), "--key must be non-empty"),
    ],
)
def test_a_bad_filter_is_refused_by_name(search, said):
    with pytest.raises(SearchError, match=re.escape(said)):
        query(search)


@pytest.mark.parametrize(
    "search",
    [
        Search(),
        Search(job_type="invoices.*", key_prefix="inv_1", tenant='we"ird\\', tags=("order=o-17", "customer=c-9")),
        Search(job_type="a.b", outcome="dead_lettered", limit=10_000),
    ],
)
def test_every_query_parses_under_the_documented_subset(search):
    parsed = insights.parse(query(search))
    assert parsed.sort == ("@timestamp", True) and parsed.limit == search.limit
    assert "job_type" in parsed.fields and len(parsed.filters) == 1


def test_one_key_is_an_equality_with_its_debounced_runs_keys_beside_it():
    text = query(Search(job_type="profiles.sync", key="p/7"))
    assert '(idempotency_key = "p/7" or idempotency_key like /^p\\/7@/)' in _filter(text)
    rows = insights.run(
        text,
        [
            insights.Event(n, f'{{"outcome": "succeeded", "job_type": "profiles.sync", "idempotency_key": "{key}"}}')
            for n, key in enumerate(["p/7", "p/7@2026-12-07T10:00Z", "p/70", "p/7x"])
        ],
        0,
        10,
    )
    assert sorted(row["idempotency_key"] for row in rows) == ["p/7", "p/7@2026-12-07T10:00Z"]
