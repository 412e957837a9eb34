"""The local development loop on one running stack: jobs published before the runtime is ready,
the functions' logs, hot reload of their code, and ``tiered-jobs status``'s oldest age.

One session serves the module. It is started the way a new user meets it: jobs are sent to the
critical queue the moment CloudFormation has created it, before ``up`` is ready, and the
functions' code comes from a copy of the asset that the tests then edit.
"""

from __future__ import annotations

import json
import logging
import shutil
import uuid

import pytest
from typer.testing import CliRunner

from emulator import moto_patches
from emulator.deploy import LOCAL_STAGE, REPO_ROOT
from emulator.session import LocalSession
from tests.emulator.local_support import PATIENCE_SECONDS, balance, depth, wait_until
from tiered_jobs.cdk.packaging import PACKAGE_DIR, RUNTIME_PARTS, JobsSource
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.names import queue_name
from tiered_jobs.publisher import Publisher

pytestmark = pytest.mark.e2e

EARLY_PAYMENTS = 40
EARLY_ACCOUNT = "acc_early"


class Captured(logging.Handler):
    """Every log record of this process (moto's, boto's, ours) while the session starts and runs."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A copy of the job folder and the runtime, the checkout the session watches (the tests edit it)."""
    root = tmp_path_factory.mktemp("checkout")
    shutil.copytree(REPO_ROOT / "functions", root / "functions", ignore=shutil.ignore_patterns("__pycache__"))
    for part in RUNTIME_PARTS:
        path = PACKAGE_DIR / part
        if path.is_dir():
            shutil.copytree(path, root / "tiered_jobs" / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (root / "tiered_jobs").mkdir(exist_ok=True)
            shutil.copy2(path, root / "tiered_jobs" / part)
    return root


@pytest.fixture(scope="module")
def captured():
    handler = Captured()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="module")
def session(source, captured):
    """Started while a publisher sends payments as soon as the critical queue exists."""
    function_lines: list[str] = []
    original = moto_patches.create_held_back  # the first step after CreateStack has returned

    def publish_early(held, resolver, clients, account_id, region):
        sqs = clients("sqs")
        url = sqs.get_queue_url(QueueName=queue_name(LOCAL_STAGE, "critical"))["QueueUrl"]
        for i in range(EARLY_PAYMENTS):
            body = build("payments.update_balance", {"account_id": EARLY_ACCOUNT, "amount": 1}, f"early-{i}")
            sqs.send_message(QueueUrl=url, MessageBody=body.to_json())
        return original(held, resolver, clients, account_id, region)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(moto_patches, "create_held_back", publish_early)
        code = JobsSource(source / "functions" / "jobs", module="functions.jobs", runtime_dir=source / "tiered_jobs")
        local = LocalSession(
            alarm_interval_seconds=0.5,
            code_source=code,
            reload_interval_seconds=0.5,
            sqs_metrics_interval_seconds=1.0,
            log_sink=lambda function, line: function_lines.append(line),
        )
        local.start()
    local.function_lines = function_lines  # type: ignore[attr-defined]
    yield local
    local.stop()


def all_log_events(session) -> list[str]:
    """Every event of every log group of the embedded CloudWatch Logs (the functions', moto's own)."""
    logs = session.clients("logs")
    messages = []
    for page in logs.get_paginator("describe_log_groups").paginate():
        for group in page["logGroups"]:
            for events in logs.get_paginator("filter_log_events").paginate(logGroupName=group["logGroupName"]):
                messages += [event["message"] for event in events["events"]]
    return messages


def cli(session, *args: str):
    """``tiered-jobs ...`` in this process, with the variables ``up`` prints."""
    from tiered_jobs.cli import app

    return _invoke(app, session, args)


def emulator_cli(session, *args: str):
    """``python -m emulator ...`` in this process, with the variables ``up`` prints."""
    from emulator.cli import app

    return _invoke(app, session, args)


def _invoke(app, session, args: tuple[str, ...]):
    env = {name: value or None for name, value in session.endpoint.client_env().items()}
    return CliRunner(env={**env, "COLUMNS": "200", "TIERED_JOBS_STAGE": LOCAL_STAGE}).invoke(app, list(args))


# -- 1. nothing but the project's runtime consumes a queue (issue 11, item 8) ----------------------


def test_jobs_published_before_the_runtime_is_ready_are_all_processed_and_nothing_mentions_docker(session, captured):
    tier = session.deployment.tiers["critical"]
    wait_until(
        lambda: balance(session, EARLY_ACCOUNT) == EARLY_PAYMENTS and depth(session, tier.queue_url) == 0,
        timeout=PATIENCE_SECONDS,
        what=f"the {EARLY_PAYMENTS} early payments applied",
    )
    assert depth(session, tier.dlq_url) == 0
    mappings = session.clients("lambda").list_event_source_mappings()["EventSourceMappings"]
    assert {m["State"] for m in mappings} == {"Enabled"}  # as deployed; moto's queues no longer invoke them
    assert session.log_shipper is not None
    session.log_shipper.flush()  # ship what is pending now, not after a second that a loaded machine may overrun
    said = captured.lines + session.function_lines + all_log_events(session)
    assert [line for line in said if "docker" in line.lower()] == []


def test_the_template_deployed_locally_creates_the_mappings_disabled_and_the_synthesized_one_is_untouched(session):
    template = session.deployment.assembly.template
    mappings = {lid: r for lid, r in template["Resources"].items() if r["Type"] == moto_patches.EVENT_SOURCE_MAPPING}
    assert mappings and all("Enabled" not in r["Properties"] for r in mappings.values())  # as `cdk deploy` gets it
    deployed = session.clients("cloudformation").get_template(StackName=session.deployment.stack_name)["TemplateBody"]
    deployed = deployed if isinstance(deployed, dict) else json.loads(deployed)
    assert {lid: deployed["Resources"][lid]["Properties"]["Enabled"] for lid in mappings} == dict.fromkeys(
        mappings, False
    )


# -- 2a. the functions' logs -------------------------------------------------------------------------


def test_function_logs_are_in_cloudwatch_logs_and_local_logs_filters_them_by_tier_and_pattern(session):
    publisher = Publisher.from_stage(LOCAL_STAGE, ssm=session.clients("ssm"), sqs=session.clients("sqs"))
    marker = uuid.uuid4().hex[:8]
    publisher.publish("notifications.send_email", {"to": f"{marker}@example.com", "subject": "hi"}, f"mail-{marker}")
    consumer = session.deployment.tiers["transactional"].consumer
    logs = session.clients("logs")

    def shipped() -> bool:
        events = logs.filter_log_events(logGroupName=consumer.log_group_name)["events"]
        return any(marker in event["message"] for event in events)

    wait_until(shipped, timeout=PATIENCE_SECONDS, what="the e-mail job's log line in the function's log group")
    assert not consumer.log_group_name.startswith("/aws/lambda/")  # the stack's own group (LoggingConfig)

    shown = emulator_cli(session, "logs", "--tier", "transactional", "--grep", marker)
    assert shown.exit_code == 0, shown.output
    assert "e-mail delivered" in shown.stdout and marker in shown.stdout
    assert all(line.split(" ", 2)[1] == "transactional" for line in shown.stdout.splitlines() if line.strip())
    assert marker not in emulator_cli(session, "logs", "--tier", "critical", "--grep", marker).stdout
    assert '"_aws"' not in emulator_cli(session, "logs", "--tier", "transactional").stdout  # EMF hidden by default
    unknown = emulator_cli(session, "logs", "--tier", "nope")
    assert unknown.exit_code == 2 and "unknown tier nope" in unknown.output


# -- 2b. hot reload ----------------------------------------------------------------------------------


def test_a_code_change_becomes_a_new_version_in_new_environments_and_keeps_every_state(session, source):
    sqs = session.clients("sqs")
    bulk = session.deployment.tiers["bulk"]
    consumer = bulk.consumer.name
    account = f"acc-{uuid.uuid4().hex[:8]}"
    publisher = Publisher.from_stage(LOCAL_STAGE, ssm=session.clients("ssm"), sqs=sqs)
    publisher.publish("payments.update_balance", {"account_id": account, "amount": 42}, f"{account}-1")
    wait_until(lambda: balance(session, account) == 42, what="payment before the reload")
    sqs.send_message(QueueUrl=bulk.dlq_url, MessageBody="a letter kept across the reload")
    sha_before = session.clients("lambda").get_function_configuration(FunctionName=consumer)["CodeSha256"]
    cold_before = session.runtime.by_function(consumer).stats.snapshot()["cold_starts"]
    publisher.publish("analytics.record_event", {"event": "warm_up"}, f"warm-{uuid.uuid4().hex}")
    wait_until(
        lambda: session.runtime.by_function(consumer).stats.snapshot()["cold_starts"] > cold_before,
        what="a bulk execution environment on the first version",
    )

    job = source / "functions" / "jobs" / "analytics.py"
    text = job.read_text()
    edited = source.parent / "analytics.py.edit"  # beside the checkout, outside what the watcher reads
    edited.write_text(
        text.replace(
            '    return {"recorded": True',
            '    ctx.logger.info("recorded by version two: " + payload["event"])\n    return {"recorded": True',
        )
    )
    edited.replace(job)  # saved whole, as an editor saves: a watcher never reads it half written
    wait_until(lambda: session.code_versions, timeout=PATIENCE_SECONDS, what="a new code version")
    assert all(version.changed == ("functions/jobs/analytics.py",) for version in session.code_versions)
    cold_after_reload = session.runtime.by_function(consumer).stats.snapshot()["cold_starts"]

    publisher.publish("analytics.record_event", {"event": "after_reload"}, f"v2-{uuid.uuid4().hex}")
    wait_until(
        lambda: any("recorded by version two: after_reload" in line for line in session.logs.get(consumer, [])),
        timeout=PATIENCE_SECONDS,
        what="the new code's behaviour",
    )
    wait_until(
        lambda: session.runtime.by_function(consumer).stats.snapshot()["cold_starts"] > cold_after_reload,
        what="a new execution environment for the new version",
    )
    configuration = session.clients("lambda").get_function_configuration(FunctionName=consumer)
    # the latest version (a watcher may see one save as two events on a loaded machine: two versions, the same code)
    assert configuration["CodeSha256"] == session.code_versions[-1].code_sha256 != sha_before
    assert balance(session, account) == 42  # the table kept its items
    assert depth(session, bulk.dlq_url) == 1  # the DLQ kept its letter
    assert sqs.get_queue_url(QueueName=queue_name(LOCAL_STAGE, "bulk"))["QueueUrl"].endswith(
        bulk.queue_url.rsplit("/", 2)[-1]
    )
    sqs.purge_queue(QueueUrl=bulk.dlq_url)


# -- 3. status: the age of the oldest message, from CloudWatch -----------------------------------------


def test_status_shows_the_age_of_the_oldest_waiting_message_and_it_grows(session):
    bulk = session.deployment.tiers["bulk"]
    mapping = session.runtime.by_function(bulk.consumer.name)
    mapping.stop()  # nobody consumes bulk: its messages wait
    try:
        publisher = Publisher.from_stage(LOCAL_STAGE, ssm=session.clients("ssm"), sqs=session.clients("sqs"))
        for i in range(3):
            publisher.publish("analytics.record_event", {"event": "waiting"}, f"wait-{uuid.uuid4().hex}-{i}")

        def bulk_age() -> float | None:
            answer = cli(session, "status", "--json")
            assert answer.exit_code == 0, answer.output
            (row,) = [r for r in json.loads(answer.stdout)["tiers"] if r["tier"] == "bulk"]
            return row["oldest_age_seconds"]

        wait_until(
            lambda: (bulk_age() or 0) >= 1, timeout=PATIENCE_SECONDS, what="an age for the waiting bulk messages"
        )
        first = bulk_age()
        assert first is not None
        # The age is a CloudWatch metric published every second: it grows at the next datapoints.
        wait_until(lambda: (bulk_age() or 0) > first, timeout=PATIENCE_SECONDS, what="the oldest age growing")
        table = cli(session, "status")
        (row,) = [line for line in table.stdout.splitlines() if line.startswith("│ bulk")]
        oldest = [cell.strip() for cell in row.split("│")][6]
        assert oldest != "–" and oldest.endswith("s"), row
    finally:
        mapping.start()
