"""Every `tiered-jobs` command on moto, output checked, and every error path as one line."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone

import boto3
import pytest
from botocore.stub import Stubber

from tests.support.stack import received_bodies
from tiered_jobs import cli as cli_module
from tiered_jobs.contract import envelope
from tiered_jobs.contract.names import Alarms, DeadLetter, Env, Metrics, Ssm, consumer_function_name
from tiered_jobs.operations import status as stage_status


def _one_error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


#: When the letters of these tests failed first and last: recent, so inside the idempotency window.
FIRST_FAILED = (datetime.now(timezone.utc) - timedelta(hours=2)).replace(second=0, microsecond=0)
LAST_FAILED = FIRST_FAILED + timedelta(minutes=13)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dead_letter(
    deployment,
    tier: str,
    key: str,
    *,
    job_type: str = "payments.update_balance",
    error_type: str = "TimeoutError",
    error_message: str = "bank API timed out after 10 s",
    published_at: str | None = None,
) -> str:
    """A letter as the consumer dead-letters it: the envelope plus ``DeadLetter.*`` reasons."""
    reasons = {
        DeadLetter.REASON: DeadLetter.REASON_RETRIES_EXHAUSTED,
        DeadLetter.ERROR_TYPE: error_type,
        DeadLetter.ERROR_MESSAGE: error_message,
        DeadLetter.ATTEMPTS: "5",
        DeadLetter.JOB_TYPE: job_type,
        DeadLetter.FIRST_FAILED_AT: _iso(FIRST_FAILED),
        DeadLetter.LAST_FAILED_AT: _iso(LAST_FAILED),
        DeadLetter.SOURCE_QUEUE: deployment.queue_urls[tier],
    }
    body = envelope.build(job_type, {"n": key}, key, published_at=published_at).to_json()
    return boto3.client("sqs").send_message(
        QueueUrl=deployment.dlq_urls[tier],
        MessageBody=body,
        MessageAttributes={name: {"DataType": "String", "StringValue": value} for name, value in reasons.items()},
    )["MessageId"]


# -- publish ------------------------------------------------------------------------------------


def test_publish_routes_and_prints_the_message_id(cli, deployment):
    result = cli(
        "publish", "payments.update_balance", "--key", "pay_1", "--payload", '{"account_id": "acc_1", "amount": 5}'
    )

    assert result.exit_code == 0, result.output
    [body] = received_bodies(deployment.queue_urls["critical"])
    assert (body["type"], body["idempotency_key"], body["payload"]) == (
        "payments.update_balance",
        "pay_1",
        {"account_id": "acc_1", "amount": 5},
    )
    assert result.stdout.startswith("Published payments.update_balance (key 'pay_1') to tier critical: message ")


def test_publish_with_tier_and_delay(cli, deployment):
    result = cli("publish", "demo.hello", "-k", "h1", "--tier", "bulk", "--delay", "60")

    assert result.exit_code == 0, result.output
    assert "to tier bulk" in result.stdout
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=deployment.queue_urls["bulk"], AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesDelayed"] == "1"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--payload", "{not json"], 2, "error: --payload is not valid JSON: Expecting property name"),
        (["--payload", "[1, 2]"], 2, "--payload must hold a JSON object (the job's payload), got an array"),
        (["--tier", "urgent"], 2, "unknown tier 'urgent'; known tiers: bulk, critical, transactional"),
        (["--delay", "-1"], 2, "delay must be 0 seconds or more, got -1"),
    ],
)
def test_publish_errors_are_one_line(cli, deployment, args, code, message):
    result = cli("publish", "payments.capture", "--key", "k1", *args)

    assert result.exit_code == code
    assert message in _one_error_line(result)
    assert received_bodies(deployment.queue_urls["critical"]) == []


def test_publish_of_an_unrouted_type_names_the_routes(cli, deployment):
    result = cli("publish", "billing.invoice", "--key", "k1")

    assert result.exit_code == 2
    assert "no route for job type 'billing.invoice'; routes: analytics.*, demo.*" in _one_error_line(result)


# -- status -------------------------------------------------------------------------------------


def test_status_shows_depths_dlq_age_and_alarms(cli, deployment):
    sqs, cloudwatch = boto3.client("sqs"), boto3.client("cloudwatch")
    for n in range(3):
        sqs.send_message(QueueUrl=deployment.queue_urls["critical"], MessageBody=f"m{n}")
    sqs.receive_message(QueueUrl=deployment.queue_urls["critical"], MaxNumberOfMessages=1)  # one in flight
    sqs.send_message(QueueUrl=deployment.queue_urls["bulk"], MessageBody="later", DelaySeconds=300)
    _dead_letter(deployment, "critical", "d1")
    _dead_letter(deployment, "critical", "d2")
    cloudwatch.put_metric_data(
        Namespace="AWS/SQS",
        MetricData=[
            {
                "MetricName": "ApproximateAgeOfOldestMessage",
                "Value": 754.0,
                "Timestamp": datetime.now(timezone.utc) - timedelta(minutes=2),  # SQS reports per past minute
                "Dimensions": [{"Name": "QueueName", "Value": deployment.queue_urls["critical"].rsplit("/", 1)[-1]}],
            }
        ],
    )
    for tier in ("critical", "transactional"):
        for kind in (Alarms.DLQ_DEPTH, Alarms.ERRORS):
            cloudwatch.put_metric_alarm(
                AlarmName=Alarms.name("test", tier, kind),
                MetricName="m",
                Namespace="n",
                Statistic="Sum",
                Period=60,
                EvaluationPeriods=1,
                Threshold=1,
                ComparisonOperator="GreaterThanThreshold",
            )
    cloudwatch.set_alarm_state(
        AlarmName=Alarms.name("test", "critical", Alarms.DLQ_DEPTH), StateValue="ALARM", StateReason="test"
    )
    cloudwatch.set_alarm_state(
        AlarmName=Alarms.name("test", "transactional", Alarms.ERRORS), StateValue="OK", StateReason="test"
    )
    for name in (
        Alarms.name("test", "transactional", Alarms.DLQ_DEPTH),
        Alarms.name("test", "critical", Alarms.ERRORS),
    ):
        cloudwatch.set_alarm_state(AlarmName=name, StateValue="INSUFFICIENT_DATA", StateReason="test")

    result = cli("status")

    assert result.exit_code == 0, result.output
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in result.stdout.splitlines()
        if line.startswith("│")
    }
    assert rows["critical"] == ["2", "1", "0", "2", "12m 34s", "0", "ALARM: dlq-depth"]
    assert rows["transactional"] == ["0", "0", "0", "0", "–", "0", "1 OK, 1 no data"]
    assert rows["bulk"] == ["0", "0", "1", "0", "–", "0", "–"]
    assert "stage test · stack TieredJobs-test" in result.stdout

    as_json = json.loads(cli("status", "--json").stdout)
    assert as_json["tiers"][0] == {
        "tier": "critical",
        "visible": 2,
        "in_flight": 1,
        "delayed": 0,
        "dlq": 2,
        "oldest_age_seconds": 754.0,
        "throttles": 0.0,
        "alarms": {Alarms.DLQ_DEPTH: "ALARM", Alarms.ERRORS: "INSUFFICIENT_DATA"},
        "succeeded": None,
        "failed": None,
        "retried": None,
        "mean_retry_delay_seconds": None,
        "p50_ms": None,
        "p99_ms": None,
        "counts": {label: {"completed": 0, "failed": 0, "retried": 0, "held": 0} for label in ("1m", "5m", "60m")},
    }


def test_status_json_holds_the_job_figures_the_console_shows(cli, deployment):
    """One read behind both: the console's hour of succeeded, failed and retried jobs is in the JSON too."""
    now = datetime.now(timezone.utc)
    dimensions = [
        {"Name": Metrics.DIM_SERVICE, "Value": Metrics.SERVICE},
        {"Name": Metrics.DIM_STAGE, "Value": "test"},
        {"Name": Metrics.DIM_TIER, "Value": "bulk"},
    ]
    boto3.client("cloudwatch").put_metric_data(
        Namespace=Metrics.NAMESPACE,
        MetricData=[
            {
                "MetricName": metric,
                "Value": value,
                "Timestamp": now - timedelta(minutes=minutes_ago),
                "Dimensions": dimensions,
            }
            for metric, value, minutes_ago in (
                (Metrics.SUCCEEDED, 90.0, 40),
                (Metrics.SUCCEEDED, 6.0, 1),
                (Metrics.FAILED, 4.0, 20),
                (Metrics.RETRIED, 7.0, 2),
            )
        ],
    )

    bulk = {row["tier"]: row for row in json.loads(cli("status", "--json").stdout)["tiers"]}["bulk"]

    assert (bulk["succeeded"], bulk["failed"], bulk["retried"]) == (96.0, 4.0, 7.0)
    assert bulk["counts"]["5m"] == {"completed": 6, "failed": 0, "retried": 7, "held": 0}  # the last 5 minutes only


def _throttled(tier: str, count: float, minutes_ago: float, stage: str = "test") -> None:
    """What Lambda publishes when it refuses a batch of the tier's consumer for lack of concurrency."""
    boto3.client("cloudwatch").put_metric_data(
        Namespace="AWS/Lambda",
        MetricData=[
            {
                "MetricName": "Throttles",
                "Value": count,
                "Unit": "Count",
                "Timestamp": datetime.now(timezone.utc) - timedelta(minutes=minutes_ago),
                "Dimensions": [{"Name": "FunctionName", "Value": consumer_function_name(stage, tier)}],
            }
        ],
    )


def test_status_shows_each_consumers_throttles_of_the_last_5_minutes(cli, deployment):
    """A new account's low concurrency quota shows here first: a throttled batch goes back to its queue,
    and each of its messages has spent a receive toward the redrive count."""
    _throttled("bulk", 4, minutes_ago=1)
    _throttled("bulk", 3, minutes_ago=3)
    _throttled("bulk", 50, minutes_ago=12)  # long ago: not counted
    _throttled("critical", 9, minutes_ago=30)

    result = cli("status")

    assert result.exit_code == 0, result.output
    [header] = [line for line in result.stdout.splitlines() if line.startswith("┃")]
    assert [c.strip() for c in header.split("┃")[1:-1]] == [
        "Tier",
        "Visible",
        "In flight",
        "Delayed",
        "DLQ",
        "Oldest",
        "Throttled",
        "Alarms",
    ]
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in result.stdout.splitlines()
        if line.startswith("│")
    }
    assert (rows["bulk"][5], rows["critical"][5], rows["transactional"][5]) == ("7", "0", "0")
    tiers = {row["tier"]: row for row in json.loads(cli("status", "--json").stdout)["tiers"]}
    assert (tiers["bulk"]["throttles"], tiers["critical"]["throttles"]) == (7.0, 0.0)


def test_status_piped_prints_every_column_whole_on_a_narrow_terminal_setting(deployment):
    from typer.testing import CliRunner

    from tiered_jobs.cli import app

    result = CliRunner(env={"COLUMNS": "60"}).invoke(app, ["--stage", "test", "status"])

    assert result.exit_code == 0, result.output
    [header] = [line for line in result.stdout.splitlines() if line.startswith("┃")]
    assert [c.strip() for c in header.split("┃")[1:-1]] == [
        "Tier",
        "Visible",
        "In flight",
        "Delayed",
        "DLQ",
        "Oldest",
        "Throttled",
        "Alarms",
    ]
    assert "│ transactional │" in result.stdout


def test_status_reads_every_cloudwatch_figure_of_every_tier_in_one_call(cli, deployment, monkeypatch):
    """Its documented budget (tiered_jobs/cli/status.py): 2n + 5 calls for n tiers, one ListMetrics (the
    job types), one GetMetricData (the live counts among its figures: no GetMetricStatistics per tier)."""
    from tiered_jobs.stage.target import Target

    calls: list[str] = []
    built = Target.client

    def counted(self, service, **config):
        client = built(self, service, **config)
        if not getattr(client, "_counted", False):
            client.meta.events.register("before-call", lambda model, **_: calls.append(model.name))
            client._counted = True
        return client

    monkeypatch.setattr(Target, "client", counted)
    _throttled("bulk", 1, minutes_ago=1)

    assert cli("status").exit_code == 0
    tiers = len(deployment.queue_urls)
    assert calls.count("GetMetricData") == 1 and calls.count("GetQueueAttributes") == 2 * tiers
    assert calls.count("ListMetrics") == 1 and "GetMetricStatistics" not in calls
    # +1 GetParameters: the mappings' UUIDs (paused tiers); this fake stage names none, a real one adds a
    # GetEventSourceMapping per tier (docs/cli.md counts them).
    assert calls.count("GetEventSourceMapping") == 0
    assert len(calls) == 2 * tiers + 6, " ".join(calls)


def test_status_without_cloudwatch_rights_still_shows_the_queues(cli, deployment, monkeypatch):
    from botocore.exceptions import ClientError

    def denied(*_, **__):
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not allowed"}}, "DescribeAlarms")

    monkeypatch.setattr(stage_status, "alarm_states", denied)
    monkeypatch.setattr(stage_status, "metric_figures", denied)

    result = cli("status")

    assert result.exit_code == 0, result.output
    assert "critical" in result.stdout
    assert "note: alarm states unavailable (AccessDenied: not allowed (DescribeAlarms))" in result.stderr
    assert "note: CloudWatch figures unavailable (AccessDenied: not allowed (DescribeAlarms))" in result.stderr


# -- dlq ----------------------------------------------------------------------------------------


def test_dlq_inspect_groups_the_letters_and_removes_nothing(cli, deployment):
    _dead_letter(deployment, "critical", "d1", error_message="account 123 not found", error_type="AccountNotFound")
    _dead_letter(deployment, "critical", "d2", error_message="account 456 not found", error_type="AccountNotFound")
    _dead_letter(deployment, "critical", "d3")

    result = cli("dlq", "inspect", "critical")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("3 letter(s) read from the critical DLQ in 2 group(s); 3 in the DLQ now")
    [header] = [line for line in result.stdout.splitlines() if line.startswith("┃")]
    assert [c.strip() for c in header.split("┃")[1:-1]][:5] == [
        "Count",
        "Job type",
        "Error type",
        "Reason",
        "Error message",
    ]
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in result.stdout.splitlines() if line.startswith("│")]
    assert rows[0][:5] == [
        "2",
        "payments.update_balance",
        "AccountNotFound",
        "retries_exhausted",
        "account <n> not found",
    ]
    assert rows[1][:3] == ["1", "payments.update_balance", "TimeoutError"]
    assert rows[0][5:7] == [
        f"{FIRST_FAILED:%Y-%m-%d %H:%M}",
        f"{LAST_FAILED:%Y-%m-%d %H:%M}",
    ]  # first failed, dead-lettered
    assert len(received_bodies(deployment.dlq_urls["critical"])) == 3


def test_dlq_replay_dry_run_moves_nothing(cli, deployment):
    _dead_letter(deployment, "critical", "d1")

    result = cli("dlq", "replay", "critical", "--dry-run")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Dry run: 1 letter(s) would be replayed to the critical queue; nothing was moved")
    assert received_bodies(deployment.queue_urls["critical"]) == []
    assert len(received_bodies(deployment.dlq_urls["critical"])) == 1


def test_dlq_replay_moves_the_matching_letters_back(cli, deployment):
    _dead_letter(deployment, "critical", "t1")
    _dead_letter(deployment, "critical", "t2")
    _dead_letter(deployment, "critical", "n1", error_type="AccountNotFound")

    result = cli("dlq", "replay", "critical", "--error-type", "TimeoutError", "--max", "10", "--max-per-second", "100")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "Replayed 2 of 2 matching letter(s) to the critical queue, 0 failed; 1 left in the DLQ"
    )
    assert sorted(b["idempotency_key"] for b in received_bodies(deployment.queue_urls["critical"])) == ["t1", "t2"]
    assert [b["idempotency_key"] for b in received_bodies(deployment.dlq_urls["critical"])] == ["n1"]


def test_dlq_replay_json_is_the_replay_response(cli, deployment):
    _dead_letter(deployment, "bulk", "a1", job_type="analytics.record_event")

    result = cli("dlq", "replay", "bulk", "--job-type", "analytics.*", "--json")

    answer = json.loads(result.stdout)
    assert (answer["action"], answer["tier"], answer["matched"], answer["moved"], answer["failed"]) == (
        "replay",
        "bulk",
        1,
        1,
        0,
    )
    assert answer["groups"][0]["job_type"] == "analytics.record_event"


def test_dlq_unknown_tier_lists_the_known_ones(cli, deployment):
    result = cli("dlq", "replay", "urgent")

    assert result.exit_code == 2
    assert _one_error_line(result) == "error: unknown tier 'urgent'; known tiers: bulk, critical, transactional"


def test_dlq_bad_option_is_the_replay_events_own_error(cli, deployment):
    result = cli("dlq", "replay", "critical", "--max", "0")

    assert result.exit_code == 2
    assert "'max_messages' must be a whole number from 1 to 10000, got 0" in _one_error_line(result)


@pytest.fixture
def stub_lambda(monkeypatch):
    """The deployed replay function, stubbed: the CLI's lambda client answers from a Stubber."""
    client = boto3.client("lambda")
    stubber = Stubber(client)
    real_client = cli_module.Target.client

    def client_for(self, service, **config):
        return client if service == "lambda" else real_client(self, service, **config)

    monkeypatch.setattr(cli_module.Target, "client", client_for)
    with stubber:
        yield stubber
    stubber.assert_no_pending_responses()


def _invoked(stubber, event: dict, answer: dict, *, function_error: str | None = None) -> None:
    response = {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(answer).encode())}
    if function_error:
        response["FunctionError"] = function_error
    stubber.add_response(
        "invoke",
        response,
        {
            "FunctionName": "tiered-jobs-test-replay",
            "InvocationType": "RequestResponse",
            "Payload": json.dumps(event).encode(),
        },
    )


def test_dlq_replay_via_the_deployed_function(cli, deployment, stub_lambda):
    event = {
        "action": "replay",
        "tier": "critical",
        "dry_run": False,
        "max_messages": 5,
        "job_type": "payments.*",
        "error_type": None,
        "older_than_seconds": 0,
        "max_per_second": None,
    }
    _invoked(
        stub_lambda,
        event,
        {
            "action": "replay",
            "tier": "critical",
            "mode": "batch",
            "dry_run": False,
            "matched": 4,
            "moved": 4,
            "failed": 0,
            "left_in_dlq": 0,
            "stopped_because": "dlq_empty",
            "task_handle": None,
            "groups": [
                {
                    "job_type": "payments.capture",
                    "error_type": "TimeoutError",
                    "reason": "retries_exhausted",
                    "error_message": "timed out",
                    "count": 4,
                    "oldest": None,
                    "newest": None,
                    "sample_message_ids": ["m1"],
                }
            ],
        },
    )

    result = cli("dlq", "replay", "critical", "--job-type", "payments.*", "--max", "5", "--via", "lambda")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Replayed 4 of 4 matching letter(s) to the critical queue, 0 failed; 0 left")
    assert "payments.capture" in result.stdout


def test_dlq_inspect_via_the_deployed_function_reports_its_refusal(cli, deployment, stub_lambda):
    _invoked(
        stub_lambda,
        {"action": "inspect", "tier": "critical", "max_messages": 100},
        {"errorMessage": "invalid replay event: something", "errorType": "ReplayEventError"},
        function_error="Unhandled",
    )

    result = cli("dlq", "inspect", "critical", "--via", "lambda")

    assert result.exit_code == 2
    assert _one_error_line(result) == (
        "error: the replay function tiered-jobs-test-replay refused or failed: invalid replay event: something"
    )


def test_dlq_replay_reports_failed_sends_with_exit_code_1(cli, deployment, stub_lambda):
    event = {
        "action": "replay",
        "tier": "critical",
        "dry_run": False,
        "max_messages": 100,
        "job_type": None,
        "error_type": None,
        "older_than_seconds": 0,
        "max_per_second": None,
    }
    _invoked(
        stub_lambda,
        event,
        {
            "action": "replay",
            "tier": "critical",
            "dry_run": False,
            "matched": 3,
            "moved": 1,
            "failed": 2,
            "left_in_dlq": 2,
            "groups": [],
            "stopped_because": "dlq_empty",
        },
    )

    result = cli("dlq", "replay", "critical", "--via", "lambda")

    assert result.exit_code == 1
    assert "Replayed 1 of 3 matching letter(s) to the critical queue, 2 failed" in result.stdout
    assert _one_error_line(result) == "error: 2 letter(s) could not be sent and stay in the DLQ: run the replay again"


# -- errors common to every command -------------------------------------------------------------


def test_a_stage_that_is_not_deployed(cli, aws):
    result = cli("status", stage="prod")

    assert result.exit_code == 1
    assert _one_error_line(result) == (
        "error: stack 'TieredJobs-prod' not found in us-east-1: is it deployed in this account and region "
        "(or pass the right stack name)?"
    )


def test_a_stack_name_option_is_used(cli, deployment):
    result = cli("--stack-name", "Other", "status")

    assert result.exit_code == 0, result.output  # no stack "Other": found by the stage's SSM parameters
    boto3.client("ssm").delete_parameter(Name=Ssm.tiers("test"))
    result = cli("--stack-name", "Other", "status")
    assert "stack 'Other' not found" in _one_error_line(result)


def test_no_credentials(cli, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never ask an instance metadata service

    result = cli("status")

    assert result.exit_code == 1
    assert _one_error_line(result).startswith("error: no AWS credentials found: configure them as for the AWS CLI")


def test_an_unreachable_endpoint(cli, monkeypatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # fail at once: no retries of the refused connection

    result = cli("--endpoint-url", "http://127.0.0.1:9", "publish", "demo.hello", "--key", "k1")

    assert result.exit_code == 1
    assert _one_error_line(result).startswith("error: cannot reach http://127.0.0.1:9")


def test_a_bad_stage_name(cli):
    result = cli("status", stage="Prod!")

    assert result.exit_code == 2
    assert "--stage must match" in _one_error_line(result)


def test_the_region_option_is_used(cli, deployment):
    result = cli("--region", "eu-west-1", "status")

    assert result.exit_code == 1
    assert "stack 'TieredJobs-test' not found in eu-west-1" in _one_error_line(result)


def test_publish_with_a_schema_outside_the_validators_subset_is_one_line(cli, deployment, tmp_path, monkeypatch):
    """A service's copy of a job folder's schemas (TIERED_JOBS_SCHEMA_DIRS) with a keyword the validator lacks."""
    (tmp_path / "demo.hello.schema.json").write_text('{"type": "object", "anyOf": [{}]}')
    monkeypatch.setenv(Env.SCHEMA_DIRS, str(tmp_path))
    result = cli("publish", "demo.hello", "--key", "k1")

    assert result.exit_code == 2
    assert _one_error_line(result).startswith(
        "error: payload schema demo.hello.schema.json: unsupported keyword(s) anyOf; supported: "
    )
    assert all(received_bodies(url) == [] for url in deployment.queue_urls.values())
