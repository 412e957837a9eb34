"""``tiered-jobs search`` on local mode: jobs published with tags run on the local consumers, their run
lines are shipped to the consumers' log groups, and the search finds them through the embedded AWS's
Logs Insights subset (``emulator/insights.py``), as it would on AWS."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from emulator.deploy import LOCAL_STAGE
from emulator.session import LocalSession
from tests.emulator.local_support import TEST_TIER_SETTINGS, wait_until
from tiered_jobs.cli import app
from tiered_jobs.publisher import Publisher

pytestmark = pytest.mark.e2e

#: A bound for the wait, far above an honest run on a loaded machine.
PATIENCE_SECONDS = 300


@pytest.fixture(scope="module")
def session():
    local = LocalSession(tier_settings=TEST_TIER_SETTINGS).start()
    yield local
    local.stop()


def _search(session, *args: str) -> dict:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["--stage", LOCAL_STAGE, "--endpoint-url", session.endpoint.url, "search", "--json", *args]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_tagged_job_run_on_local_mode_is_found_by_its_tag(session):
    publisher = Publisher.from_stage(LOCAL_STAGE, ssm=session.clients("ssm"), sqs=session.clients("sqs"))
    publisher.publish(
        "payments.update_balance", {"account_id": "acc_search", "amount": 1}, "srch-1", tags={"order": "o-17"}
    )
    publisher.publish("payments.update_balance", {"account_id": "acc_search", "amount": 1}, "srch-2")

    wait_until(
        lambda: len(_search(session, "--key", "srch-")["runs"]) == 2,
        PATIENCE_SECONDS,
        "both runs' lines shipped and found",
        seen=lambda: _search(session, "--key", "srch-"),
    )
    found = _search(session, "--tag", "order=o-17")

    (run,) = found["runs"]
    assert run["key"] == "srch-1" and run["outcome"] == "succeeded" and run["tier"] == "critical"
    assert run["tags"] == {"order": "o-17"} and run["job_type"] == "payments.update_balance"
    assert found["bytes_scanned"] > 0 and len(found["log_groups"]) == len(session.deployment.tiers)
