"""docs/consumer.md's receive ledger covers every path a record can take, and names tests that exist.

The consumer decides one :class:`~tiered_jobs.runtime.outcomes.Outcome` per record (each carries its
counters, what it spends and its log line), so the outcomes are the paths it can return: each has its
row, which says what the outcome says it spends, and its named proof. Crash, timeout and the two
replay modes are paths it cannot see itself, and the ledger lists them too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tiered_jobs.runtime.outcomes import Outcome

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "consumer.md"
#: Paths outside the consumer's own decisions that the ledger must list.
OUTSIDE_THE_CONSUMER = ("crash", "timeout", "replay, batch mode", "replay, native mode")
COLUMNS = ["path", "outcome", "spends a receive", "counts an attempt", "the record goes", "proved by"]
#: One named test: ``path::name``.
PROOF = r"`(tests/[\w/]+\.py)::(test_\w+)`"


def ledger() -> list[dict[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- receive-ledger:start -->", 1)[1].split("<!-- receive-ledger:end -->", 1)[0]
    lines = [line for line in table.strip().splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == COLUMNS
    return [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True)) for line in lines[2:]]


def test_the_ledger_names_every_outcome_the_consumer_records_and_no_other():
    rows = [row for row in ledger() if row["outcome"] != "(none)"]
    # A cause that takes other rows' paths (a job module that failed to import is retried, then
    # dead-lettered) says so with "as `outcome`, ...": its outcomes exist, and are counted in their own rows.
    named = [row["outcome"].strip("`") for row in rows if not row["outcome"].startswith("as ")]
    assert sorted(set(named)) == sorted(outcome.value for outcome in Outcome)
    assert len(named) == len(set(named)), "one row per outcome"
    for row in rows:
        if row["outcome"].startswith("as "):
            assert set(re.findall(r"`(\w+)`", row["outcome"])) <= set(named) and "`" in row["outcome"], row


def said(cell: str) -> bool:
    """A cost cell's answer: "no ..." is no; "yes ...", "its last ...", "the next receive's number ..." are yes."""
    return not cell.startswith("no")


@pytest.mark.parametrize("outcome", list(Outcome), ids=str)
def test_each_outcome_has_its_row_which_says_what_it_spends_and_names_its_proof(outcome):
    (row,) = [row for row in ledger() if row["outcome"] == f"`{outcome.value}`"]
    assert said(row["spends a receive"]) == outcome.spends_receive, row
    assert said(row["counts an attempt"]) == outcome.counts_attempt, row
    assert re.match(PROOF, row["proved by"]), row
    assert outcome.counters and outcome.line, outcome


def test_the_ledger_lists_the_paths_outside_the_consumer():
    paths = [row["path"] for row in ledger() if row["outcome"] == "(none)"]
    for path in OUTSIDE_THE_CONSUMER:
        assert any(p.startswith(path) for p in paths), path


def test_every_row_says_what_it_costs_and_where_the_record_goes():
    for row in ledger():
        assert row["spends a receive"] and row["counts an attempt"] and row["the record goes"], row


def test_every_proof_is_a_test_that_exists():
    # One test, or several joined by "; " (the path's own test, then the composed run where it meets the others).
    proof = PROOF
    for row in ledger():
        assert re.fullmatch(rf"{proof}(; {proof})*", row["proved by"]), row
        for match in re.finditer(proof, row["proved by"]):
            module, name = ROOT / match[1], match[2]
            assert module.is_file(), row
            defined = {
                node.name
                for node in ast.walk(ast.parse(module.read_text(encoding="utf-8")))
                if isinstance(node, ast.FunctionDef)
            }
            assert name in defined, f"{match[1]} has no {name}"
