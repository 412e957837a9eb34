"""Local mode runs an app that is not this repository's: a CDK app of its own, in a folder outside the
checkout, that uses TieredJobs as a library (``tests/support/outside_app.py``).

One session serves the module: the app's ``cdk.json`` command synthesizes it (this environment's
Python: the library test runs the same app from a fresh virtualenv through ``up --app``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from emulator.cdk_app import CdkApp
from emulator.cli import function_groups
from emulator.deploy import LOCAL_STAGE, REPO_ROOT
from emulator.session import LocalSession
from tests.emulator.local_support import PATIENCE_SECONDS, wait_until
from tests.support.outside_app import STACK, TABLE, TIER, check_invoices, write_app
from tiered_jobs.contract.names import DEFAULT_TIERS
from tiered_jobs.publisher import Publisher

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory) -> Path:
    folder = write_app(tmp_path_factory.mktemp("billing"), sys.executable)
    assert not folder.resolve().is_relative_to(REPO_ROOT)
    return folder


@pytest.fixture(scope="module")
def session(app_dir):
    local = LocalSession(app=CdkApp.load(app_dir), reload_interval_seconds=0.5, alarm_interval_seconds=0.5)
    local.start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def publish(session):
    publisher = Publisher.from_stage(LOCAL_STAGE, ssm=session.clients("ssm"), sqs=session.clients("sqs"))
    return lambda job_type, key, payload: publisher.publish(job_type, payload, key)


def test_the_stack_that_uses_tiered_jobs_is_deployed_under_its_own_name(session, app_dir):
    deployment = session.deployment
    assert (deployment.stack_name, deployment.stage) == (STACK, LOCAL_STAGE)
    stacks = session.clients("cloudformation").describe_stacks()["Stacks"]
    assert [s["StackName"] for s in stacks] == [STACK]  # not the app's Web stack
    assert set(deployment.tiers) == set(DEFAULT_TIERS) and set(deployment.resources) == {TABLE}
    code = Path(deployment.tiers[TIER].consumer.code_root)
    assert (code / "jobs" / "invoices.py").read_bytes() == (app_dir / "src" / "jobs" / "invoices.py").read_bytes()
    assert (code / "tiered_jobs" / "handlers" / "consumer.py").is_file()
    assert not (code / "functions").exists()  # nothing of this repository's example jobs
    assert session.code_source.directory == app_dir / "src" / "jobs"  # what a reload stages: the app's folder


def test_its_job_runs_once_per_key_and_dead_letters_with_reasons(session, publish):
    check_invoices(session.clients, publish)


def test_logs_find_its_functions_by_its_stack_name(session):
    groups = function_groups(session.clients("cloudformation"), LOCAL_STAGE, [], STACK)
    assert set(groups) == {*DEFAULT_TIERS, "replay"}


def test_editing_its_job_folder_deploys_a_new_code_version(session, app_dir, publish):
    module = app_dir / "src" / "jobs" / "invoices.py"
    module.write_text(
        module.read_text().replace(
            '"amount_cents": {"N": str(amount)}}', '"amount_cents": {"N": str(amount)}, "version": {"N": "2"}}'
        )
    )
    version = wait_until(lambda: session.code_versions, what="a new code version")[0]
    assert version.changed == ("jobs/invoices.py",)
    publish("invoices.create", "inv-3", {"amount_cents": 7})
    dynamodb = session.clients("dynamodb")
    item = wait_until(
        lambda: dynamodb.get_item(
            TableName=session.deployment.resources[TABLE], Key={"invoice_id": {"S": "inv-3"}}
        ).get("Item"),
        what="inv-3 written",
    )
    assert item["version"] == {"N": "2"}


#: A job longer than one invocation, added to the app's job folder as a team would: three steps, its
#: progress stored on each (docs/workflows.md).
EXPORT_JOB = """

@job("invoices.export", progress_every_seconds=0, max_steps=5)
def export(payload: dict[str, Any], ctx: JobContext) -> Any:
    cursor = (ctx.state or {}).get("cursor", 0)
    ctx.progress(cursor, 3, note=f"step {ctx.step}")
    if cursor < 2:
        return ctx.checkpoint({"cursor": cursor + 1})
    ctx.progress(3, 3, note="all exported")
    return {"exported": 3, "steps": ctx.step + 1}
"""


def test_a_stepped_job_completes_its_steps_and_tiered_jobs_job_shows_its_progress(session, app_dir, publish):
    from tiered_jobs.operations.lookup import lookup_job
    from tiered_jobs.stage.target import Target

    module = app_dir / "src" / "jobs" / "invoices.py"
    versions = len(session.code_versions)
    module.write_text(module.read_text() + EXPORT_JOB)
    wait_until(lambda: len(session.code_versions) > versions, what="the export job's code version")
    publisher = Publisher.from_stage(
        LOCAL_STAGE, ssm=session.clients("ssm"), sqs=session.clients("sqs"), dynamodb=session.clients("dynamodb")
    )
    publisher.publish("invoices.export", {}, "exp-1")

    status = wait_until(
        lambda: (found := publisher.get_status("invoices.export", "exp-1")).finished and found,
        timeout=PATIENCE_SECONDS,
        what="invoices.export finished",
    )
    assert (status.state, status.result) == ("completed", {"exported": 3, "steps": 3})  # steps 0, 1, 2
    target = Target(LOCAL_STAGE, STACK, "us-east-1", None)
    for service in ("ssm", "dynamodb", "sqs", "cloudformation", "scheduler"):
        target._clients[service] = session.clients(service)
    found = lookup_job(target, "invoices.export", "exp-1")  # what `tiered-jobs job invoices.export exp-1` prints
    assert found.state == "completed" and found.record.result == status.result
    assert found.record.progress is not None
    assert (found.record.progress.done, found.record.progress.note) == (3, "all exported")
    assert found.letters == []
