"""Someone else's CDK app that uses Tiered Jobs as a library, and what it must do on the embedded AWS.

A billing service: ``app.py`` with a ``Billing`` stack holding ``TieredJobs`` (and a ``Web`` stack
without), ``cdk.json`` as ``cdk init`` writes it (the pinned CLI's recommended feature flags), and
its own jobs in ``src/jobs``: ``invoices.create`` writes the invoice to the app's own table,
declared through ``resources``, and refuses a bad amount as a permanent error.

:func:`check_invoices` is the story both ``tests/emulator/test_local_any_app.py`` and
``tests/library/test_outside_app.py`` run against it: the job's effect, idempotency (the same
key with another amount runs once) and dead-lettering with reasons.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.emulator.local_support import wait_until
from tiered_jobs.contract.names import DeadLetter, Ssm

ROOT = Path(__file__).resolve().parents[2]
#: What `cdk init` puts in a new app's cdk.json context (the pinned CLI's own file).
RECOMMENDED_FLAGS = ROOT / "node_modules" / "aws-cdk" / "lib" / "init-templates" / ".recommended-feature-flags.json"

STACK = "Billing"
TIER = "transactional"
TABLE = "invoices"

APP_PY = '''\
"""Billing: a CDK app of its own, with Tiered Jobs for its background work."""
from aws_cdk import App, Stack
from aws_cdk import aws_ssm as ssm

from tiered_jobs.cdk import JobsCode, TieredJobs, add_nag_checks

app = App()
billing = Stack(app, "Billing")
TieredJobs(billing, "Jobs", jobs=JobsCode("src/jobs"), stage="dev",
           routes={"invoices.*": "transactional"},
           resources={"invoices": {"kind": "table", "partition_key": "invoice_id",
                                   "job_types": ["invoices.create"], "access": "read_write"}})
web = Stack(app, "Web")  # the app's other stack: no Tiered Jobs in it
ssm.StringParameter(web, "Domain", string_value="billing.example.com")
add_nag_checks(app)
app.synth()
'''

JOBS_INIT = '''\
"""Billing's jobs: importing a module registers its job types."""
from . import invoices  # noqa: F401
'''

INVOICES_PY = '''\
"""invoices.create: store the invoice in the app's own table (declared through resources)."""
from typing import Any

from tiered_jobs.runtime import JobContext, PermanentError, job


@job("invoices.create")
def create(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    amount = payload.get("amount")
    if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
        raise PermanentError(f"amount must be a positive integer, got {amount!r}")
    ctx.client("dynamodb").put_item(TableName=ctx.resource("invoices"), Item={
        "invoice_id": {"S": payload["invoice_id"]}, "amount": {"N": str(amount)}})
    return {"invoice_id": payload["invoice_id"], "amount": amount}
'''


def write_app(folder: Path, python: Path | str) -> Path:
    """The app in ``folder`` (outside the repository), its ``cdk.json`` running it with ``python``."""
    jobs = folder / "src" / "jobs"
    jobs.mkdir(parents=True)
    (folder / "app.py").write_text(APP_PY, encoding="utf-8")
    (jobs / "__init__.py").write_text(JOBS_INIT, encoding="utf-8")
    (jobs / "invoices.py").write_text(INVOICES_PY, encoding="utf-8")
    flags = json.loads(RECOMMENDED_FLAGS.read_text(encoding="utf-8"))
    (folder / "cdk.json").write_text(json.dumps({"app": f"{python} app.py", "context": flags}, indent=2),
                                     encoding="utf-8")
    return folder


Publish = Callable[[str, str, dict[str, Any]], None]


def check_invoices(clients: Callable[[str], Any], publish: Publish, stage: str = "local") -> None:
    """The app's job runs on the embedded AWS: its effect, once per key, and its permanent failure
    dead-lettered with reasons. ``publish(job type, idempotency key, payload)`` sends a job."""
    ssm, sqs, dynamodb = clients("ssm"), clients("sqs"), clients("dynamodb")
    table = ssm.get_parameter(Name=Ssm.resource(stage, TABLE))["Parameter"]["Value"]
    dlq = ssm.get_parameter(Name=Ssm.tier(stage, TIER, Ssm.TIER_DLQ_URL))["Parameter"]["Value"]

    def amount(invoice: str) -> int | None:
        item = dynamodb.get_item(TableName=table, Key={"invoice_id": {"S": invoice}}).get("Item")
        return int(item["amount"]["N"]) if item else None

    publish("invoices.create", "inv-1", {"invoice_id": "inv-1", "amount": 100})
    wait_until(lambda: amount("inv-1") == 100, what="invoices.create wrote inv-1 to the app's table")
    publish("invoices.create", "inv-1", {"invoice_id": "inv-1", "amount": 999})  # the same key, another amount
    publish("invoices.create", "inv-2", {"invoice_id": "inv-2", "amount": -5})  # refused: a permanent error

    def letters() -> dict[str, dict[str, str]]:
        messages = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                       VisibilityTimeout=0).get("Messages", [])
        found = {json.loads(m["Body"])["idempotency_key"]: {k: v["StringValue"] for k, v in
                                                              m.get("MessageAttributes", {}).items()}
                 for m in messages}
        return found if len(found) == 2 else {}

    dead = wait_until(letters, what=f"both jobs in the {TIER} DLQ")
    assert (amount("inv-1"), amount("inv-2")) == (100, None)  # applied once; the refused one wrote nothing
    for key, error_type in (("inv-1", "IdempotencyConflictError"), ("inv-2", "PermanentError")):
        reasons = dead[key]
        assert reasons[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT, reasons
        assert (reasons[DeadLetter.ERROR_TYPE], reasons[DeadLetter.JOB_TYPE]) == (error_type, "invoices.create")
        assert reasons[DeadLetter.ATTEMPTS] == "1" and reasons[DeadLetter.SOURCE_QUEUE].endswith(f"-{TIER}")
    assert "amount must be a positive integer, got -5" in dead["inv-2"][DeadLetter.ERROR_MESSAGE]
