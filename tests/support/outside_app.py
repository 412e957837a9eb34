"""Someone else's CDK app that uses Tiered Jobs as a library, and what it must do on the embedded AWS.

A billing service, docs/library.md's example app (the page's ``app-file`` blocks, so the page is
what runs): ``app.py`` with a ``Billing`` stack holding ``TieredJobs`` (plus, here, a ``Web`` stack
without), ``cdk.json`` as ``cdk init`` writes it (the pinned CLI's recommended feature flags), its
own jobs in ``src/jobs`` (``invoices.create`` writes the invoice to the app's own table, declared
through ``resources``, and refuses a bad amount as a permanent error; its payload schema in
``src/jobs/schemas`` refuses unknown fields) and a service's ``publish.py``.

:func:`check_invoices` is the story both ``tests/emulator/test_local_any_app.py`` and
``tests/library/test_outside_app.py`` run against it: the job's effect, idempotency (the same
key with another amount runs once) and dead-lettering with reasons, by the job's own check and by the
job folder's schema alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.docs.blocks import app_files
from tests.emulator.local_support import wait_until
from tiered_jobs.contract import envelope
from tiered_jobs.contract.names import DeadLetter, Ssm

ROOT = Path(__file__).resolve().parents[2]
#: What `cdk init` puts in a new app's cdk.json context (the pinned CLI's own file).
RECOMMENDED_FLAGS = ROOT / "node_modules" / "aws-cdk" / "lib" / "init-templates" / ".recommended-feature-flags.json"

STACK = "Billing"
TIER = "transactional"
TABLE = "invoices"

#: The app's files, as docs/library.md shows them (``app-file`` blocks): the page's example is this app.
DOC_FILES = app_files(ROOT / "docs" / "library.md")
#: The app's other stack, without Tiered Jobs: local mode must pick the right one.
WEB_STACK = """\
from aws_cdk import aws_ssm as ssm

web = cdk.Stack(app, "Web")  # the app's other stack: no Tiered Jobs in it
ssm.StringParameter(web, "Domain", string_value="billing.example.com")
"""
APP_PY = DOC_FILES["app.py"].replace("add_nag_checks(app)", WEB_STACK + "add_nag_checks(app)", 1)
assert APP_PY != DOC_FILES["app.py"], "docs/library.md's app.py no longer calls add_nag_checks(app)"
#: What the page's publish.py sends, and the item it leaves in the app's table.
DOC_PUBLISHED = ("inv_2026_0001", 1200)


def write_app(folder: Path, python: Path | str) -> Path:
    """The app in ``folder`` (outside the repository), its ``cdk.json`` running it with ``python``."""
    for path, text in {**DOC_FILES, "app.py": APP_PY}.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    flags = json.loads(RECOMMENDED_FLAGS.read_text(encoding="utf-8"))
    (folder / "cdk.json").write_text(
        json.dumps({"app": f"{python} app.py", "context": flags}, indent=2), encoding="utf-8"
    )
    return folder


Publish = Callable[[str, str, dict[str, Any]], None]


def check_invoices(
    clients: Callable[[str], Any],
    publish: Publish,
    stage: str = "local",
    run_publish_py: Callable[[], None] | None = None,
) -> None:
    """The app's job runs on the embedded AWS: its effect, once per key, and its permanent failure
    dead-lettered with reasons. ``publish(job type, idempotency key, payload)`` sends a job;
    ``run_publish_py()`` runs the page's ``publish.py`` as a service would."""
    ssm, sqs, dynamodb = clients("ssm"), clients("sqs"), clients("dynamodb")
    table = ssm.get_parameter(Name=Ssm.resource(stage, TABLE))["Parameter"]["Value"]
    dlq = ssm.get_parameter(Name=Ssm.tier(stage, TIER, Ssm.TIER_DLQ_URL))["Parameter"]["Value"]

    def amount(invoice: str) -> int | None:
        item = dynamodb.get_item(TableName=table, Key={"invoice_id": {"S": invoice}}).get("Item")
        return int(item["amount_cents"]["N"]) if item else None

    if run_publish_py is not None:
        run_publish_py()
        key, cents = DOC_PUBLISHED
        wait_until(lambda: amount(key) == cents, what=f"publish.py's invoice {key} in the app's table")
    publish("invoices.create", "inv-1", {"amount_cents": 100})
    wait_until(lambda: amount("inv-1") == 100, what="invoices.create wrote inv-1 to the app's table")
    publish("invoices.create", "inv-1", {"amount_cents": 999})  # the same key, another amount
    publish("invoices.create", "inv-2", {"amount_cents": -5})  # refused by the job: a permanent error
    # Refused by the job folder's schema alone (no unknown fields): the job itself would write it. A
    # publisher that checks the schema refuses it before sending; sent raw, as one that skips it
    # would, the consumer must refuse it too.
    queue = ssm.get_parameter(Name=Ssm.tier(stage, TIER, Ssm.TIER_QUEUE_URL))["Parameter"]["Value"]
    sqs.send_message(
        QueueUrl=queue,
        MessageBody=envelope.build("invoices.create", {"amount_cents": 300, "currency": "EUR"}, "inv-3").to_json(),
    )

    def letters() -> dict[str, dict[str, str]]:
        messages = sqs.receive_message(
            QueueUrl=dlq, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=0
        ).get("Messages", [])
        found = {
            json.loads(m["Body"])["idempotency_key"]: {
                k: v["StringValue"] for k, v in m.get("MessageAttributes", {}).items()
            }
            for m in messages
        }
        return found if len(found) == 3 else {}

    dead = wait_until(letters, what=f"the three refused jobs in the {TIER} DLQ")
    # Applied once; the refused ones wrote nothing.
    assert (amount("inv-1"), amount("inv-2"), amount("inv-3")) == (100, None, None)
    for key, error_type in (
        ("inv-1", "IdempotencyConflictError"),
        ("inv-2", "PermanentError"),
        ("inv-3", "PayloadValidationError"),
    ):
        reasons = dead[key]
        assert reasons[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT, reasons
        assert (reasons[DeadLetter.ERROR_TYPE], reasons[DeadLetter.JOB_TYPE]) == (error_type, "invoices.create")
        assert reasons[DeadLetter.ATTEMPTS] == "1" and reasons[DeadLetter.SOURCE_QUEUE].endswith(f"-{TIER}")
    assert "amount_cents must be a positive integer, got -5" in dead["inv-2"][DeadLetter.ERROR_MESSAGE]
    assert dead["inv-3"][DeadLetter.ERROR_MESSAGE] == "payload has unknown field 'currency'; allowed: amount_cents"
