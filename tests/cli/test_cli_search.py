"""``tiered-jobs search``: a consumer's real run lines, stored in its tier's log group, found by tag, type
glob, key prefix and outcome through Logs Insights (local mode's engine on moto), with the scanned bytes
and their cost shown first."""

from __future__ import annotations

import json

import pytest

from tests.support.run_lines import ship_run_lines


@pytest.fixture
def logged(tier, deployment, recorded):
    """Three jobs run by a consumer (one tagged and dead-lettered), their lines in the critical tier's log group."""
    return ship_run_lines(tier)


def test_search_by_tag_prints_the_cost_first_then_the_runs(cli, logged):
    result = cli("search", "--tag", "order=o-17")

    assert result.exit_code == 0, result.output
    first, *rest = result.output.splitlines()
    assert first.startswith("scanned ") and "log group(s): $" in first
    text = "\n".join(rest)
    assert "inv-2" in text and "pay-1" in text and "inv-1" not in text
    assert "dead_lettered" in text and "succeeded" in text


def test_search_json_by_type_glob_key_prefix_and_outcome(cli, logged):
    result = cli("search", "--type", "testjobs.t*", "--key", "pay-", "--outcome", "dead_lettered", "--json")

    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    (run,) = found["runs"]
    assert run["job_type"] == "testjobs.transient" and run["key"] == "pay-1" and run["attempt"] == 1
    assert run["outcome"] == "dead_lettered" and run["letter"]["message_id"] and run["tags"] == {}
    assert run["trace_id"] == "1-5759e988-bd862e3fe1be46a994272793" and run["duration_ms"] >= 0
    assert found["bytes_scanned"] > 0 and found["cost_usd"] >= 0
    assert "payload" not in result.output and "fail_times" not in result.output


def test_a_bad_filter_exits_2_naming_it(cli, deployment):
    result = cli("search", "--tag", "order")

    assert result.exit_code == 2 and "NAME=VALUE" in result.output


def test_job_history_lists_every_run_of_the_key(cli, logged):
    result = cli("job", "testjobs.transient", "pay-1", "--history", "1h")

    assert result.exit_code == 0, result.output
    assert "runs in the last 1h (1; scanned " in result.output
    assert "pay-1 attempt 1: dead_lettered" in result.output and "inv-1" not in result.output


def test_job_history_as_json_and_a_bad_span_refused(cli, logged):
    found = json.loads(cli("job", "testjobs.ok", "inv-2", "--history", "1h", "--json").output)
    assert [run["key"] for run in found["history"]["runs"]] == ["inv-2"]
    refused = cli("job", "testjobs.ok", "inv-2", "--history", "forever")
    assert refused.exit_code == 2 and "--history must be" in refused.output


def test_one_key_of_an_exact_type_shows_its_record_now_beside_its_runs(cli, logged):
    shown = cli("search", "--type", "testjobs.ok", "--key", "inv-2")
    found = json.loads(cli("search", "--type", "testjobs.ok", "--key", "inv-2", "--json").output)

    assert shown.exit_code == 0, shown.output
    assert "now: unknown — no idempotency record" in shown.output  # the miniature stage's table never saw it
    assert found["now"]["state"] == "unknown" and [run["key"] for run in found["runs"]] == ["inv-2"]
    assert "now" not in json.loads(cli("search", "--type", "testjobs.*", "--key", "inv-2", "--json").output)
