"""The console and ``lambda:Invoke`` against the real stack deployed on moto's server.

* ``aws lambda invoke`` / boto3's ``invoke`` / ``tiered-jobs dlq ... --via lambda`` run the deployed
  replay function through the local runtime; unknown functions get Lambda's own 404.
* In headless Chromium (Debian's ``chromium``, driven by the pinned ``playwright``): the Tiers page
  shows the published depths and refreshes in place, a dry run leaves the DLQ unchanged, confirming
  a replay empties it and the balances come out right, the Job types page counts the jobs the
  consumer ran, a read-only console has no replay button and
  a console off loopback refuses requests without its token. The same tests take screenshots:
  into the test's temporary folder, or into the folder ``TIERED_JOBS_SCREENSHOTS`` names
  (``TIERED_JOBS_SCREENSHOTS=docs/img`` refreshes the ones shown in the README and docs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from typer.testing import CliRunner

from emulator.server import FAKE_CREDENTIALS
from emulator.session import LocalSession
from tests.emulator.local_support import PATIENCE_SECONDS, balance, depth, wait_until
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.stage.target import Target

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
#: Set to a folder (relative to the repository) to keep the screenshots, e.g. ``docs/img``.
SCREENSHOTS_ENV = "TIERED_JOBS_SCREENSHOTS"
TOKEN = "local-console-token-0123456789"
BROWSER_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def session():
    local = LocalSession(alarm_interval_seconds=0.5).start()
    yield local
    local.stop()


@pytest.fixture
def paused(session):
    """Consumers stopped for the test (what is published stays in the queues), started again after it."""
    session.runtime.stop()
    yield session
    session.runtime.start()


def _target(session) -> Target:
    return Target(
        session.deployment.stage,
        session.deployment.stack_name,
        session.endpoint.region,
        session.endpoint.url,
        credentials={k.lower(): v for k, v in FAKE_CREDENTIALS.items()},
    )


def _dead_letter_payment(session, key: str, account: str, amount: int) -> str:
    """A payment dead-lettered as the consumer does it (envelope + ``DeadLetter.*``), e.g. after a bad deploy;
    returns the letter's message id."""
    tier = session.deployment.tiers["critical"]
    reasons = {
        DeadLetter.REASON: DeadLetter.REASON_PERMANENT,
        DeadLetter.ERROR_TYPE: "ResourceNotFoundException",
        DeadLetter.ERROR_MESSAGE: f"Requested resource not found: table ledger-{key} does not exist",
        DeadLetter.ATTEMPTS: "1",
        DeadLetter.JOB_TYPE: "payments.update_balance",
        DeadLetter.FIRST_FAILED_AT: "2026-11-29T08:00:00.000Z",
        DeadLetter.LAST_FAILED_AT: "2026-11-29T08:00:01.000Z",
        DeadLetter.SOURCE_QUEUE: tier.queue_url,
    }
    sent = session.clients("sqs").send_message(
        QueueUrl=tier.dlq_url,
        MessageBody=build("payments.update_balance", {"account_id": account, "amount": amount}, key).to_json(),
        MessageAttributes={n: {"DataType": "String", "StringValue": v} for n, v in reasons.items()},
    )
    message_id: str = sent["MessageId"]
    return message_id


def _drain(session, url: str) -> None:
    """Delete everything visible (PurgeQueue is allowed once a minute per queue)."""
    sqs = session.clients("sqs")
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        )
    assert depth(session, url) == 0


# -- lambda:Invoke -------------------------------------------------------------------------------


def test_boto3_invoke_runs_the_deployed_replay_function(paused):
    session = paused
    _dead_letter_payment(session, "inv-1", "acc_inv", 1)
    payload = (ROOT / "functions" / "events" / "replay" / "critical-dry-run.json").read_bytes()

    answer = session.clients("lambda").invoke(
        FunctionName=session.deployment.replay.name, Payload=payload, LogType="Tail"
    )

    body = json.loads(answer["Payload"].read())
    assert answer["StatusCode"] == 200 and "FunctionError" not in answer
    assert (body["action"], body["dry_run"], body["matched"], body["moved"]) == ("replay", True, 1, 0)
    assert answer["ExecutedVersion"] == "$LATEST"
    assert "replay requested" in __import__("base64").b64decode(answer["LogResult"]).decode()
    assert depth(session, session.deployment.tiers["critical"].dlq_url) == 1
    _drain(session, session.deployment.tiers["critical"].dlq_url)


def test_invoke_errors_and_types_are_lambdas(session):
    client = session.clients("lambda")
    with pytest.raises(ClientError) as unknown:
        client.invoke(FunctionName="tiered-jobs-local-nope", Payload=b"{}")
    assert unknown.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert unknown.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404

    refused = client.invoke(
        FunctionName=session.deployment.replay.name, Payload=b'{"tier": "critical", "job_typ": "x"}'
    )
    assert refused["FunctionError"] == "Unhandled"
    error = json.loads(refused["Payload"].read())
    assert error["errorType"] == "ReplayEventError" and "unknown field(s) 'job_typ'" in error["errorMessage"]

    assert client.invoke(FunctionName=session.deployment.replay.name, InvocationType="DryRun")["StatusCode"] == 204
    queued = client.invoke(
        FunctionName=session.deployment.replay.arn,
        InvocationType="Event",
        Payload=b'{"action": "inspect", "tier": "bulk"}',
    )
    assert queued["StatusCode"] == 202


def test_aws_cli_invoke_against_local_up(paused, tmp_path):
    session = paused
    if shutil.which("aws") is None or subprocess.run(["aws", "--version"], capture_output=True).returncode:
        pytest.skip("the AWS CLI is not installed (pip install awscli, or AWS CLI v2)")
    _dead_letter_payment(session, "cli-1", "acc_cli", 1)
    env = {**os.environ, **{k: v for k, v in session.endpoint.client_env().items() if v}}
    env.pop("AWS_SESSION_TOKEN", None)
    result = subprocess.run(
        [
            "aws",
            "lambda",
            "invoke",
            "--function-name",
            "tiered-jobs-local-replay",
            "--payload",
            f"fileb://{ROOT / 'functions/events/replay/critical-dry-run.json'}",
            str(tmp_path / "out.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=PATIENCE_SECONDS,
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["StatusCode"] == 200
    assert json.loads((tmp_path / "out.json").read_text())["matched"] == 1
    _drain(session, session.deployment.tiers["critical"].dlq_url)


def test_cli_via_lambda_invokes_the_local_function(paused):
    from tiered_jobs.cli import app

    session = paused
    _dead_letter_payment(session, "via-1", "acc_via", 1)
    result = CliRunner().invoke(
        app,
        [
            "--stage",
            "local",
            "--endpoint-url",
            session.endpoint.url,
            "dlq",
            "inspect",
            "critical",
            "--via",
            "lambda",
            "--json",
        ],
    )

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["matched"] == 1
    _drain(session, session.deployment.tiers["critical"].dlq_url)


# -- the browser -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.skip(
            "no browser: install Debian's Chromium (apt-get install -y chromium chromium-driver) to run "
            "the console's browser tests"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: pip install -r requirements.txt")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=BROWSER_FLAGS,
            viewport={"width": 1280, "height": 720},
        )
        # Every click and wait of a page waits for its event as long as local mode's other waits do, not
        # playwright's default 30 s: a consumer's run and its metrics reach the page later on a busy machine.
        context.set_default_timeout(PATIENCE_SECONDS * 1000)
        yield context
        context.close()


@pytest.fixture
def screenshots(tmp_path) -> Path:
    """Where the browser tests save their screenshots: a temporary folder unless asked otherwise."""
    wanted = os.environ.get(SCREENSHOTS_ENV)
    folder = ROOT / wanted if wanted else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def console(session):
    from tiered_jobs.console.security import Security
    from tiered_jobs.console.server import start_in_thread

    running = []

    def start(**security):
        host = security.pop("host", "127.0.0.1")
        started = start_in_thread(_target(session), Security(**security), host=host)
        running.append(started)
        return started

    yield start
    for started in running:
        started.stop()


def _cell(page, tier: str, column: str) -> str:
    return page.inner_text(f'tr[data-tier="{tier}"] td.{column}').strip()


def test_tiers_page_shows_the_published_depths_and_refreshes_live(paused, browser, console, screenshots):
    session = paused
    published = {"critical": 3, "transactional": 2, "bulk": 5}
    sqs = session.clients("sqs")
    for tier, count in published.items():
        for i in range(count):
            sqs.send_message(
                QueueUrl=session.deployment.tiers[tier].queue_url,
                MessageBody=build("demo.flaky", {}, f"depth-{tier}-{i}").to_json(),
            )
    page = browser.new_page()
    page.goto(console().url)

    assert {tier: _cell(page, tier, "depth") for tier in published} == {t: str(n) for t, n in published.items()}
    page.screenshot(path=str(screenshots / "console-tiers.png"), full_page=True)
    sqs.send_message(
        QueueUrl=session.deployment.tiers["bulk"].queue_url,
        MessageBody=build("demo.flaky", {}, "depth-bulk-more").to_json(),
    )
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    page.wait_for_function("document.querySelector('tr[data-tier=\"bulk\"] td.depth').innerText.trim() === '6'")
    assert navigations == []  # refreshed in place by htmx, no reload
    page.close()
    for tier in published:
        _drain(session, session.deployment.tiers[tier].queue_url)


def test_dry_run_then_confirm_from_the_browser(paused, browser, console, screenshots):
    session = paused
    tier = session.deployment.tiers["critical"]
    payments = {"br-1": ("acc_browser", 100), "br-2": ("acc_browser", 250), "br-3": ("acc_browser_2", 40)}
    for key, (account, amount) in payments.items():
        _dead_letter_payment(session, key, account, amount)
    before = {account: balance(session, account) for account, _ in payments.values()}
    running = console()
    page = browser.new_page()

    page.goto(running.url + "dlq?tier=critical")
    assert page.locator("section.group .count").first.inner_text() == "3"
    page.locator("details.letter").first.evaluate("element => element.open = true")
    page.screenshot(path=str(screenshots / "console-dlq.png"), full_page=True)

    page.goto(running.url + "replay?tier=critical")
    page.click("#dry-run")
    page.wait_for_selector('section.replay-result[data-dry-run="true"]')
    assert page.get_attribute("section.replay-result", "data-matched") == "3"
    assert depth(session, tier.dlq_url) == 3  # a dry run moves nothing

    page.click("#confirm-replay")
    page.wait_for_selector('section.replay-result[data-dry-run="false"]')
    assert page.get_attribute("section.replay-result", "data-moved") == "3"
    assert depth(session, tier.dlq_url) == 0
    page.close()

    session.runtime.start()  # the consumers take the replayed payments
    expected = dict(before)
    for account, amount in payments.values():
        expected[account] += amount
    wait_until(
        lambda: {a: balance(session, a) for a in expected} == expected, PATIENCE_SECONDS, "balances after the replay"
    )
    session.runtime.stop()


def test_job_types_page_counts_the_jobs_the_consumer_ran(session, browser, console, screenshots):
    """From the Tiers page's link to the Job types page, whose counts refresh in place as the
    consumer's EMF reaches the embedded CloudWatch."""
    sqs = session.clients("sqs")
    for i in range(3):
        sqs.send_message(
            QueueUrl=session.deployment.tiers["bulk"].queue_url,
            MessageBody=build("demo.flaky", {"fail_times": 0}, f"counted-{i}").to_json(),
        )
    page = browser.new_page()
    page.goto(console().url)
    page.click('a[href="/job-types"]')

    assert page.url.endswith("/job-types")
    # The hour's completed demo.flaky jobs, over the tiers that ran one: at least the 3 published.
    page.wait_for_function(
        """() => [...document.querySelectorAll('tr.job-type[data-job-type="demo.flaky"] td.count-completed')]
              .map(cell => Number(cell.innerText.split('/').pop().replace(/,/g, '')))
              .reduce((sum, n) => sum + n, 0) >= 3"""
    )
    page.screenshot(path=str(screenshots / "console-job-types.png"), full_page=True)
    page.close()


def test_retry_and_discard_one_letter_from_the_browser(paused, browser, console, tmp_path, monkeypatch):
    session = paused
    tier = session.deployment.tiers["critical"]
    monkeypatch.chdir(tmp_path)  # where the console's Discard archives, as the CLI's would
    retried = _dead_letter_payment(session, "one-1", "acc_one", 5)
    doomed = _dead_letter_payment(session, "one-2", "acc_one", 7)
    _dead_letter_payment(session, "one-3", "acc_one", 9)
    page = browser.new_page()
    page.goto(console().url + "dlq?tier=critical")

    page.click(f'button[data-letter="{retried}"][data-action="retry"]')
    page.wait_for_selector('section.letter-result[data-outcome="would_move"]')
    assert (depth(session, tier.dlq_url), depth(session, tier.queue_url)) == (3, 0)  # the dry run moved nothing
    page.click("#confirm-retry")
    page.wait_for_selector('section.letter-result[data-outcome="moved"]')
    assert (depth(session, tier.dlq_url), depth(session, tier.queue_url)) == (2, 1)

    page.click(f'button[data-letter="{doomed}"][data-action="discard"]')
    page.wait_for_selector('section.letter-result[data-outcome="would_discard"]')
    assert depth(session, tier.dlq_url) == 2
    page.click("#confirm-discard")
    page.wait_for_selector('section.letter-result[data-outcome="discarded"]')
    assert depth(session, tier.dlq_url) == 1
    archive = tmp_path / f"tiered-jobs-discarded-{session.deployment.stage}-critical.jsonl"
    assert [json.loads(line)["message_id"] for line in archive.read_text(encoding="utf-8").splitlines()] == [doomed]
    page.close()
    _drain(session, tier.dlq_url)
    _drain(session, tier.queue_url)


def test_read_only_console_has_no_replay_button(session, browser, console):
    _dead_letter_payment(session, "ro-1", "acc_ro", 1)
    running = console(read_only=True)
    page = browser.new_page()
    for path in ("", "dlq?tier=critical", "replay"):
        page.goto(running.url + path)
        assert page.locator("text=Replay").count() == 0 and page.locator("#dry-run, #confirm-replay").count() == 0
    page.close()
    _drain(session, session.deployment.tiers["critical"].dlq_url)


def test_console_off_loopback_refuses_requests_without_the_token(session, browser, console):
    running = console(host="0.0.0.0", token=TOKEN)
    url = running.url.replace("0.0.0.0", "127.0.0.1")
    page = browser.new_page()

    from playwright.sync_api import Error as BrowserError

    with pytest.raises(BrowserError, match="ERR_INVALID_AUTH_CREDENTIALS"):  # 401 + basic auth challenge, no prompt
        page.goto(url)
    refused = browser.request.get(url)
    assert refused.status == 401 and "needs its token" in refused.text()
    page.close()  # the refused page may still be moving to Chromium's error page: use a fresh one
    page = browser.new_page()
    allowed = page.goto(url + "?token=" + TOKEN)
    assert allowed.status == 200 and page.locator('tr[data-tier="critical"]').count() == 1
    page.close()


def test_refresh_cost_on_the_deployed_stack(session):
    """Bounded: 2 calls per tier + DescribeAlarms + one GetMetricData, whatever the traffic."""
    from tiered_jobs.console.app import counted
    from tiered_jobs.operations.status import read_status

    target = counted(_target(session))
    deployment = target.deployment()
    with target.counter.measure() as measured:
        snapshot = read_status(target.stage, deployment.tiers, target.client, source=deployment.source)
    assert measured.calls == 2 * len(session.deployment.tiers) + 2
    assert [t.tier for t in snapshot.tiers] == list(session.deployment.tiers)
    assert not snapshot.notes
