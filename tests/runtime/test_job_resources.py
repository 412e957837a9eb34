"""Jobs find the resources of ``cdk.json`` through ``ctx.resource(name)``: one variable per resource."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.jobs.effect import TABLE
from tiered_jobs.contract.names import DeadLetter, Env
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.errors import PermanentError, ResourceNotConfiguredError
from tiered_jobs.runtime.registry import JobContext
from tiered_jobs.runtime.registry import registry as default_registry

BASE_ENV = {Env.STAGE: "dev", Env.TIER: "bulk", Env.QUEUE_URL: "q", Env.DLQ_URL: "d", Env.IDEMPOTENCY_TABLE: "i"}


def _context(resources: dict[str, str]) -> JobContext:
    config = TierConfig.from_env({**BASE_ENV, **{Env.resource_var(n): v for n, v in resources.items()}})
    return JobContext(
        job_type="invoices.create",
        idempotency_key="k",
        attempt=1,
        max_attempts=5,
        tier="bulk",
        message_id="m",
        logger=None,
        lambda_remaining_ms=lambda: 30_000,
        settings=config,
    )


def test_each_resource_variable_reads_back_under_its_name():
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/audit"
    ctx = _context({"invoice_lines": "TieredJobs-dev-InvoiceLines", "audit": url})
    assert Env.resource_var("invoice_lines") == "TIERED_JOBS_RESOURCE_INVOICE_LINES"
    assert ctx.settings.resources == {"invoice_lines": "TieredJobs-dev-InvoiceLines", "audit": url}
    assert ctx.resource("invoice_lines") == "TieredJobs-dev-InvoiceLines" and ctx.resource("audit") == url


def test_a_missing_resource_is_permanent_and_names_the_variable_and_the_fix():
    ctx = _context({"audit": "u"})
    with pytest.raises(ResourceNotConfiguredError) as raised:
        ctx.resource("invoices")
    assert isinstance(raised.value, PermanentError)
    message = str(raised.value)
    assert "TIERED_JOBS_RESOURCE_INVOICES" in message and "bulk consumer" in message
    assert "tiered_jobs.resources.invoices" in message and "'invoices.create'" in message


def test_a_job_on_a_tier_without_its_table_is_dead_lettered_with_that_reason(tier):
    config = dataclasses.replace(tier.config(), resources={})
    consumer = Consumer(config, default_registry, client={"sqs": tier.sqs, "dynamodb": tier.dynamodb}.__getitem__)
    tier.publish("testjobs.effect", {"counter": "acc-1", "amount": 5}, "pay-unbound")
    assert tier.run_batch(consumer)["batchItemFailures"] == []
    (letter,) = tier.dlq_messages()
    attributes = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert attributes[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert attributes[DeadLetter.ERROR_TYPE] == "ResourceNotConfiguredError"
    assert Env.resource_var(TABLE) in attributes[DeadLetter.ERROR_MESSAGE]
    assert tier.counter("acc-1") == 0
