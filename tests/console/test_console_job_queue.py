"""The console's Job page says what a job with no record of a run was checked against: its tier queue, and a
debounced key's runs under ``KEY@minute``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tests.cli.test_job_lookup import _completed
from tests.console.test_console_app import get
from tiered_jobs.contract.schedules import debounced_run_key


def test_the_job_page_shows_the_queue_checked_and_a_debounced_keys_runs(deployment, serve):
    minute = datetime.now(timezone.utc).replace(second=0, microsecond=0) - timedelta(minutes=30)
    run_key = debounced_run_key("doc-8", minute)
    _completed(deployment, "analytics.reindex", run_key, {"pages": 2})
    console = serve()

    page = get(console.url + "job", params={"type": "analytics.reindex", "key": "doc-8"}).text
    none = get(console.url + "job", params={"type": "analytics.reindex", "key": "doc-0"}).text

    assert "Queue: the bulk queue holds 0 messages (0 waiting, 0 in flight, 0 delayed)" in page
    assert f"<li>{run_key}: <strong>completed</strong>: completed" in page
    assert "None under doc-0@&lt;minute&gt; since " in none
