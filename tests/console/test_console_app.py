"""The console's pages, security and errors over HTTP (no browser): see test_console_browser.py for the browser."""

from __future__ import annotations

import json
import re

import boto3
import pytest
import requests
from botocore.exceptions import ClientError

from tests.cli.test_cli import _dead_letter
from tiered_jobs.console.security import BindError, check_bind
from tiered_jobs.contract import envelope
from tiered_jobs.operations import status as stage_status

TOKEN = "s3cret-token-for-tests-0123"


def get(url: str, **kwargs) -> requests.Response:
    return requests.get(url, timeout=30, **kwargs)


def _publish(deployment, tier: str, count: int) -> None:
    sqs = boto3.client("sqs")
    for i in range(count):
        sqs.send_message(
            QueueUrl=deployment.queue_urls[tier], MessageBody=envelope.build("demo.hello", {}, f"{tier}-{i}").to_json()
        )


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def _depth(url: str) -> int:
    attributes = boto3.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def test_tiers_page_shows_depths_in_a_bounded_number_of_calls(deployment, serve):
    _publish(deployment, "critical", 3)
    _publish(deployment, "bulk", 1)
    console = serve()

    page = get(console.url)

    assert page.status_code == 200
    rows = dict(
        re.findall(
            r'<tr data-tier="([a-z]+)">\s*<td class="name">[a-z]+</td>\s*<td class="depth">(\d+)</td>', page.text
        )
    )
    assert rows == {"critical": "3", "transactional": "0", "bulk": "1"}
    assert 'hx-trigger="every 5s"' in page.text and "/static/htmx-2.0.4.min.js" in page.text
    # The first page also discovers the stack (DescribeStacks); a refresh is 2 per tier + alarms + metrics.
    fragment = get(console.url + "fragments/tiers", headers={"HX-Request": "true"})
    assert "<html" not in fragment.text
    assert "refreshed with 8 AWS calls" in fragment.text


def test_static_htmx_is_served_locally(serve):
    console = serve()
    script = get(console.url + "static/htmx-2.0.4.min.js")
    assert script.status_code == 200 and script.text.startswith("var htmx=")


def test_dlq_page_groups_letters_with_bodies_and_reasons(deployment, serve):
    _dead_letter(deployment, "critical", "pay_1")
    _dead_letter(deployment, "critical", "pay_2", error_message="bank API timed out after 30 s")
    console = serve()

    page = get(console.url + "dlq?tier=critical")

    assert page.status_code == 200
    assert "bank API timed out after &lt;n&gt; s" in page.text  # one group for both letters
    assert '<span class="count">2</span>' in page.text
    assert "DeadLetter.ErrorType" in page.text and "&#34;idempotency_key&#34;:&#34;pay_1&#34;" in page.text
    assert _depth(deployment.dlq_urls["critical"]) == 2  # read, never removed


def test_job_lookup_page(deployment, serve):
    _dead_letter(deployment, "critical", "pay_7")
    console = serve()

    page = get(console.url + "job", params={"type": "payments.update_balance", "key": "pay_7"})

    assert "In the <strong>critical</strong> DLQ" in page.text
    assert "<strong>unknown</strong>" in page.text and "pending" not in page.text.lower()


def test_job_lookup_page_shows_a_cancelled_and_an_expired_job(deployment, serve):
    from tiered_jobs.contract import job_ends
    from tiered_jobs.stage.cancelling import MarkTarget, mark_cancelled

    dynamodb = boto3.client("dynamodb")
    marks = MarkTarget(deployment.idempotency_table, {"critical": 600})
    assert mark_cancelled(dynamodb, marks, "critical", "payments.update_balance", "pay_8").outcome == "marked"
    expired = job_ends.marker_item(
        "payments.update_balance", "pay_9", job_ends.EXPIRED, at="2030-05-01T12:00:00.000Z", now=1_900_000_000,
        ttl_seconds=600, detail="not started by its deadline 2030-05-01T11:59:00.000Z",
    )  # fmt: skip
    dynamodb.put_item(TableName=deployment.idempotency_table, Item=expired)
    console = serve()

    cancelled = get(console.url + "job", params={"type": "payments.update_balance", "key": "pay_8"})
    assert "<strong>cancelled</strong>" in cancelled.text and "archived unrun" in cancelled.text
    late = get(console.url + "job", params={"type": "payments.update_balance", "key": "pay_9"})
    assert "<strong>expired</strong>" in late.text and "2030-05-01T11:59:00.000Z" in late.text


def test_job_lookup_page_shows_the_pending_one_time_run(deployment, serve):
    from datetime import datetime, timedelta, timezone

    from tiered_jobs.contract.names import Schedules
    from tiered_jobs.contract.schedules import one_time_schedule_name

    scheduler, group = boto3.client("scheduler"), Schedules.group_name(deployment.stage)
    scheduler.create_schedule_group(Name=group)
    at = (datetime.now(timezone.utc) + timedelta(hours=2)).replace(second=0, microsecond=0)
    queue_arn = boto3.client("sqs").get_queue_attributes(
        QueueUrl=deployment.queue_urls["critical"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    name = one_time_schedule_name("payments.capture", "cap-9")
    scheduler.create_schedule(
        Name=name,
        GroupName=group,
        ScheduleExpression=f"at({at.strftime('%Y-%m-%dT%H:%M:%S')})",
        ScheduleExpressionTimezone="UTC",
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target={"Arn": queue_arn, "RoleArn": "arn:aws:iam::123456789012:role/one-time", "Input": "{}"},
    )
    console = serve()

    pending = get(console.url + "job", params={"type": "payments.capture", "key": "cap-9"}).text
    other = get(console.url + "job", params={"type": "payments.capture", "key": "cap-10"}).text

    assert f"<li>{at.isoformat()} · one-time, to the critical queue · schedule {name}</li>" in pending
    assert '<p class="scheduled">None.</p>' in other


def test_replay_dry_run_then_confirm_over_http(deployment, serve):
    for key in ("a", "b", "c"):
        _dead_letter(deployment, "critical", key)
    console = serve()
    csrf = _csrf(get(console.url + "replay?tier=critical").text)
    form = {"csrf_token": csrf, "tier": "critical", "max_messages": "100"}

    dry = requests.post(console.url + "replay/dry-run", data=form, timeout=30)
    assert 'data-matched="3"' in dry.text and _depth(deployment.dlq_urls["critical"]) == 3
    confirm = dict(re.findall(r'name="([a-z_]+)" value="([^"]*)"', dry.text.split("/replay/run", 1)[1]))
    done = requests.post(console.url + "replay/run", data=confirm, timeout=30)

    assert 'data-moved="3"' in done.text
    assert _depth(deployment.dlq_urls["critical"]) == 0 and _depth(deployment.queue_urls["critical"]) == 3


def test_posts_need_the_csrf_token(deployment, serve):
    _dead_letter(deployment, "critical", "x")
    console = serve()

    refused = requests.post(console.url + "replay/run", data={"tier": "critical"}, timeout=30)
    wrong = requests.post(console.url + "replay/run", data={"tier": "critical", "csrf_token": "guess"}, timeout=30)

    assert refused.status_code == wrong.status_code == 403
    assert _depth(deployment.dlq_urls["critical"]) == 1


def test_read_only_hides_and_refuses_actions(deployment, serve):
    _dead_letter(deployment, "critical", "x")
    console = serve(read_only=True)
    pages = [get(console.url + path).text for path in ("", "dlq?tier=critical", "job")]
    csrf = re.search(r'"x-csrf-token": "([^"]+)"', pages[0]).group(1)

    refused = requests.post(console.url + "replay/run", data={"tier": "critical", "csrf_token": csrf}, timeout=30)

    assert all('href="/replay' not in page and "Replay" not in page for page in pages)
    assert refused.status_code == 403 and _depth(deployment.dlq_urls["critical"]) == 1


def test_off_loopback_needs_a_token(serve):
    with pytest.raises(BindError, match="--token"):
        check_bind("0.0.0.0", None)
    console = serve(host="0.0.0.0", token=TOKEN)
    url = console.url.replace("0.0.0.0", "127.0.0.1")

    assert get(url).status_code == 401
    assert get(url, headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
    assert get(url, auth=("operator", TOKEN)).status_code == 200
    assert get(url, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    session = requests.Session()
    assert session.get(url + "?token=" + TOKEN, timeout=30).status_code == 200  # cookie set, then redirected
    assert session.get(url + "dlq", timeout=30).status_code == 200


def test_loopback_console_refuses_other_host_names(serve):
    console = serve()
    assert get(console.url, headers={"Host": "attacker.example:8321"}).status_code == 421


def test_missing_stack_is_a_banner_not_a_traceback(aws):
    from tiered_jobs.console.security import Security
    from tiered_jobs.console.server import start_in_thread
    from tiered_jobs.stage.target import Target

    console = start_in_thread(Target("gone", "TieredJobs-gone", "us-east-1", None), Security())
    try:
        page = get(console.url)
    finally:
        console.stop()

    assert page.status_code == 502
    assert '<div class="banner" role="alert">stack &#39;TieredJobs-gone&#39; not found' in page.text
    assert "Traceback" not in page.text


def test_throttling_is_a_banner(deployment, serve, monkeypatch):
    def throttled(*_, **__):
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "GetQueueAttributes")

    monkeypatch.setattr(stage_status, "read_status", throttled)
    console = serve()

    fragment = get(console.url + "fragments/tiers", headers={"HX-Request": "true"})

    assert fragment.status_code == 200  # htmx swaps it in place of the table
    assert "AWS is throttling these requests" in fragment.text and "Traceback" not in fragment.text


def test_console_command_says_how_to_install_the_extra(monkeypatch):
    from typer.testing import CliRunner

    from tiered_jobs import console as console_package
    from tiered_jobs.cli import app

    monkeypatch.setattr(console_package, "missing_modules", lambda: ["starlette"])
    result = CliRunner().invoke(app, ["console"])

    assert result.exit_code == 1
    assert "pip install 'tiered-jobs[console]'" in result.stderr


def _receive_count(url: str) -> int:
    """The letter's receive count so far (this peek adds one more), then visible again at once."""
    (message,) = boto3.client("sqs").receive_message(
        QueueUrl=url, AttributeNames=["ApproximateReceiveCount"], VisibilityTimeout=0
    )["Messages"]
    return int(message["Attributes"]["ApproximateReceiveCount"]) - 1


LETTER_PAGES = ("dlq?tier=critical", "job?type=payments.update_balance&key=pay_9")


@pytest.mark.parametrize("site", ["cross-site", "same-site", "Cross-Site"])
def test_another_sites_request_reads_no_letter(deployment, serve, site):
    """Reading a DLQ receives its letters (their receive counts rise): a page of another site may not make
    the operator's browser do it, by a link, an image, a form or a script (the browser's Sec-Fetch-Site)."""
    _dead_letter(deployment, "critical", "pay_9")
    console = serve()
    csrf = _csrf(get(console.url + "replay?tier=critical").text)

    for path in LETTER_PAGES:
        refused = get(console.url + path, headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate"})
        assert refused.status_code == 403 and f"Sec-Fetch-Site: {site}" in refused.text, path
    for action in ("replay/dry-run", "replay/run"):  # the CSRF token is right: the site alone refuses it
        refused = requests.post(
            console.url + action,
            data={"csrf_token": csrf, "tier": "critical"},
            headers={"Sec-Fetch-Site": site},
            timeout=30,
        )
        assert refused.status_code == 403, action
    assert _receive_count(deployment.dlq_urls["critical"]) == 0
    assert _depth(deployment.dlq_urls["critical"]) == 1


@pytest.mark.parametrize(
    "headers",
    [{"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}, {}],
    ids=["the console's own page", "typed address or bookmark", "not a browser"],
)
def test_the_consoles_own_pages_typed_addresses_and_scripts_read_letters(deployment, serve, headers):
    _dead_letter(deployment, "critical", "pay_9")
    console = serve()

    for path in LETTER_PAGES:
        assert get(console.url + path, headers=headers).status_code == 200, path
    assert _receive_count(deployment.dlq_urls["critical"]) >= 2  # each page read it


def test_a_link_from_another_site_still_opens_the_tiers_page(deployment, serve):
    """The Tiers page reads queue attributes and alarms, never a letter: a link to it from a wiki works."""
    console = serve()
    assert get(console.url, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200


PROXY_ORIGIN = "https://jobs.example.com"


def test_behind_a_proxy_that_rewrites_host_posts_need_origin(deployment, serve):
    """A proxy sends ``Host: 127.0.0.1:<port>`` while the browser's Origin is the proxy's address."""
    _dead_letter(deployment, "critical", "x")
    plain, proxied = serve(), serve(origin=PROXY_ORIGIN)
    answers = {}
    for name, console in (("plain", plain), ("proxied", proxied)):
        csrf = _csrf(get(console.url + "replay?tier=critical").text)
        answers[name] = requests.post(
            console.url + "replay/dry-run",
            data={"csrf_token": csrf, "tier": "critical"},
            headers={"Origin": PROXY_ORIGIN, "Sec-Fetch-Site": "same-origin"},
            timeout=30,
        )
    assert answers["plain"].status_code == 403 and "start the console with --origin" in answers["plain"].text
    assert answers["proxied"].status_code == 200 and 'data-matched="1"' in answers["proxied"].text
    other = requests.post(
        proxied.url + "replay/dry-run",
        data={"csrf_token": csrf, "tier": "critical"},
        headers={"Origin": "https://attacker.example"},
        timeout=30,
    )
    assert other.status_code == 403


def test_behind_a_proxy_that_passes_host_on_the_origins_host_is_served(serve):
    plain, proxied = serve(), serve(origin=PROXY_ORIGIN + "/")
    assert get(plain.url, headers={"Host": "jobs.example.com"}).status_code == 421
    assert get(proxied.url, headers={"Host": "jobs.example.com"}).status_code == 200
    assert get(proxied.url, headers={"Host": "attacker.example"}).status_code == 421


@pytest.mark.parametrize(
    "value",
    [
        "jobs.example.com",
        "https://jobs.example.com/console",
        "ftp://jobs.example.com",
        "https://user:pw@jobs.example.com",
    ],
)
def test_an_origin_that_is_not_one_is_refused_with_the_fix(value):
    from tiered_jobs.console.security import Security

    with pytest.raises(BindError, match=r"is not an origin; .* e\.g\. https://jobs\.example\.com"):
        Security(origin=value)
    assert Security(origin="HTTPS://Jobs.Example.com:443").origin == "https://jobs.example.com"


def test_the_tiers_page_shows_throttles_in_the_same_calls(deployment, serve):
    from tests.cli.test_cli import _throttled

    _throttled("bulk", 4, minutes_ago=1, stage=deployment.stage)
    _throttled("bulk", 3, minutes_ago=2, stage=deployment.stage)
    _throttled("bulk", 50, minutes_ago=20, stage=deployment.stage)  # before the last 5 minutes
    console = serve()
    get(console.url)  # the first page also discovers the stack

    fragment = get(console.url + "fragments/tiers", headers={"HX-Request": "true"}).text

    cells = dict(re.findall(r'<tr data-tier="([a-z]+)">.*?<td class="throttles[^"]*">([^<]*)</td>', fragment, re.S))
    assert cells == {"critical": "0", "transactional": "0", "bulk": "7"}
    assert "Throttled" in fragment and "refreshed with 8 AWS calls" in fragment


def test_the_tiers_page_shows_what_the_cli_reads(deployment, serve):
    """One read behind both faces: the same oldest age (a datapoint 10 minutes old is still SQS's latest),
    the same counts, the same hour of jobs."""
    from datetime import datetime, timedelta, timezone

    from typer.testing import CliRunner

    from tiered_jobs.cli import app
    from tiered_jobs.contract.names import Metrics

    _publish(deployment, "critical", 2)
    now = datetime.now(timezone.utc)
    boto3.client("cloudwatch").put_metric_data(
        Namespace="AWS/SQS",
        MetricData=[
            {
                "MetricName": "ApproximateAgeOfOldestMessage",
                "Value": 754.0,
                "Timestamp": now - timedelta(minutes=10),
                "Dimensions": [{"Name": "QueueName", "Value": deployment.queue_urls["critical"].rsplit("/", 1)[-1]}],
            }
        ],
    )
    boto3.client("cloudwatch").put_metric_data(
        Namespace=Metrics.NAMESPACE,
        MetricData=[
            {
                "MetricName": metric,
                "Value": value,
                "Timestamp": now - timedelta(minutes=3),
                "Dimensions": [
                    {"Name": Metrics.DIM_SERVICE, "Value": Metrics.SERVICE},
                    {"Name": Metrics.DIM_STAGE, "Value": deployment.stage},
                    {"Name": Metrics.DIM_TIER, "Value": "critical"},
                ],
            }
            for metric, value in ((Metrics.SUCCEEDED, 3.0), (Metrics.FAILED, 1.0))
        ],
    )
    console = serve()

    page = get(console.url).text
    (row,) = re.findall(r'<tr data-tier="critical">(.*?)</tr>', page, re.S)
    cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    critical = json.loads(CliRunner().invoke(app, ["--stage", deployment.stage, "status", "--json"]).stdout)["tiers"][0]

    assert critical["tier"] == "critical"
    assert (
        cells[1:6]
        == [
            str(critical["visible"]),
            str(critical["in_flight"]),
            str(critical["delayed"]),
            str(critical["dlq"]),
            "12m 34s",
        ]
        == ["2", "0", "0", "0", "12m 34s"]
    )
    assert critical["oldest_age_seconds"] == 754.0
    assert cells[7] == "75.0 %" and critical["succeeded"] / (critical["succeeded"] + critical["failed"]) == 0.75
