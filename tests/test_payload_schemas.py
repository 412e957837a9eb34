"""Payload schemas: one per example job, valid draft 2020-12, checked by our validator exactly as
``jsonschema`` checks them (the consumer and publisher cannot use jsonschema: stdlib only)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tiered_jobs.contract import payloads
from tiered_jobs.contract.names import Env

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_SCHEMAS = ROOT / "example" / "jobs" / "schemas"

VALID = {
    "payments.update_balance": [
        {"account_id": "acc_1", "amount": 500},
        {"account_id": "a:b-c.d", "amount": -5},
        {"account_id": "a", "amount": 10**12},
        {"account_id": "a", "amount": 7.0},
        {"account_id": "a", "amount": 1, "note": "x"},
    ],
    "notifications.send_email": [{"to": "a@b.cc", "subject": ""}, {"to": "ünï@exämple.org", "subject": "s" * 998}],
    "analytics.record_event": [{"event": "page_view"}, {"event": "e", "properties": {"n": 1}}],
    "demo.flaky": [{"fail_times": 0}, {"fail_times": 3, "error": "permanent"}, {"fail_times": 1, "error": "transient"}],
}
INVALID = {
    "payments.update_balance": [
        {"account_id": "acc_1", "amount_cents": -5},
        {"account_id": "acc_1", "amount": 0},
        {"account_id": "a", "amount": 0.0},
        {"account_id": "a", "amount": 10**12 + 1},
        {"account_id": "a", "amount": -(10**12) - 1},
        {"account_id": "a", "amount": "10"},
        {"account_id": "a", "amount": True},
        {"account_id": "a", "amount": 1.5},
        {"account_id": "a b", "amount": 1},
        {"account_id": "", "amount": 1},
        {"account_id": "x" * 129, "amount": 1},
        {"account_id": 5, "amount": 1},
        {},
        {"amount": None},
    ],
    "notifications.send_email": [
        {"to": "nobody", "subject": "s"}, {"to": "a@b.c", "subject": "s"}, {"to": "a b@c.de", "subject": "s"},
        {"to": "a@@b.cc", "subject": "s"}, {"to": "x" * 65 + "@b.cc", "subject": "s"},
        {"to": "a@" + "b" * 250 + ".cc", "subject": "s"}, {"to": "a@b.cc", "subject": "s" * 999}, {"to": "a@b.cc"},
        {"to": ["a@b.cc"], "subject": "s"},
    ],
    "analytics.record_event": [{}, {"event": ""}, {"event": "a b"}, {"event": "e", "properties": []},
                               {"event": "x" * 129}, {"event": None}],
    "demo.flaky": [{}, {"fail_times": -1}, {"fail_times": "1"}, {"fail_times": 1, "error": "fatal"},
                   {"fail_times": False}, {"fail_times": 1.5}],
}


def test_every_example_job_declares_its_payload_and_nothing_else_ships():
    import example.jobs  # noqa: F401  (registers the example jobs)
    from tiered_jobs.runtime.registry import registry

    examples = [t for t in registry.types() if registry.get(t).handler.__module__.startswith("example.jobs.")]
    assert examples == sorted(VALID)
    assert [path.name.removesuffix(payloads.SCHEMA_SUFFIX) for path in sorted(EXAMPLE_SCHEMAS.glob("*.json"))] == \
        sorted(VALID)
    # The package ships none: the only folders searched are the example's and the suite's own test jobs'.
    assert payloads.schema_dirs() == [EXAMPLE_SCHEMAS, ROOT / "tests" / "support" / "jobs" / "schemas"]
    assert payloads.known_types() == registry.types()


@pytest.mark.parametrize("job_type", sorted(VALID))
def test_schema_is_valid_draft_2020_12_within_the_supported_subset(job_type):
    document = json.loads(payloads.schema_path(job_type).read_text())
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert payloads.schema(job_type) == document  # loads: every keyword is one the validator implements


@pytest.mark.parametrize("job_type", sorted(VALID))
def test_our_validator_agrees_with_jsonschema(job_type):
    checker = jsonschema.Draft202012Validator(payloads.schema(job_type))
    for payload in VALID[job_type]:
        assert payloads.problems(job_type, payload) == [], payload
        assert checker.is_valid(payload), payload
    for payload in INVALID[job_type]:
        assert payloads.problems(job_type, payload), payload
        assert not checker.is_valid(payload), payload


def test_agreement_on_every_kind_of_value_for_every_field():
    values = [None, True, False, 0, 1, -1, 0.0, 1.0, 2.5, 10**12, -(10**12), "", "a", "a@b.cc", "page_view",
              "transient", "x" * 200, [], [1], {}, {"k": 1}]
    for job_type in sorted(VALID):
        schema = payloads.schema(job_type)
        checker = jsonschema.Draft202012Validator(schema)
        base = VALID[job_type][0]
        for field, value in itertools.product(list(schema["properties"]), values):
            payload = {**base, field: value}
            assert (payloads.problems(job_type, payload) == []) == checker.is_valid(payload), (job_type, payload)


def test_messages_name_the_field_and_say_what_is_wrong():
    assert payloads.problems("payments.update_balance", {"account_id": "acc_1", "amount_cents": -5}) == [
        "payload is missing required field 'amount'"]
    assert payloads.problems("payments.update_balance", {"account_id": "acc_1", "amount": 0}) == [
        "payload field 'amount' must not be 0"]
    assert payloads.problems("payments.update_balance", {"account_id": "a", "amount": "10"}) == [
        "payload field 'amount' must be an integer, got a string"]
    assert payloads.problems("demo.flaky", {"fail_times": 1, "error": "fatal"}) == [
        "payload field 'error' must be one of 'transient', 'permanent', got 'fatal'"]
    assert payloads.problems("analytics.record_event", {"event": "e", "properties": []}) == [
        "payload field 'properties' must be an object, got an array"]


def test_dollar_ends_the_string_as_in_ecma_262():
    """Python's ``$`` would also match before a final newline; other languages' validators do not."""
    assert payloads.problems("notifications.send_email", {"to": "a@b.cc\n", "subject": "s"})


def test_a_type_without_a_schema_is_not_checked_here():
    assert payloads.problems("analytics.page_view", {"anything": 1}) == []
    assert payloads.problems("../names", {}) == []


def test_a_schema_outside_the_subset_is_refused(tmp_path, monkeypatch):
    (tmp_path / "x.y.schema.json").write_text(json.dumps({"type": "object", "oneOf": [{}]}))
    monkeypatch.setenv(Env.SCHEMA_DIRS, str(tmp_path))
    with pytest.raises(payloads.SchemaError, match="unsupported keyword.*oneOf"):
        payloads.problems("x.y", {})


INVOICE_SCHEMA = {"type": "object", "required": ["amount_cents"],
                  "properties": {"amount_cents": {"type": "integer", "minimum": 1}}}


def _schemas(folder, **documents):
    folder.mkdir(parents=True, exist_ok=True)
    for job_type, document in documents.items():
        (folder / f"{job_type}.schema.json").write_text(json.dumps(document))
    return folder


def test_an_apps_own_schemas_are_found_through_the_environment_and_the_publisher_refuses_before_sending(
        tmp_path, monkeypatch):
    """A library user's service names a copy of its job folder's ``schemas/`` in TIERED_JOBS_SCHEMA_DIRS."""
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import InvalidJobError, Publisher

    folder = _schemas(tmp_path / "schemas", **{"invoices.create": INVOICE_SCHEMA})
    assert payloads.problems("invoices.create", {"amount_cents": -5}) == []  # unknown here: not checked
    monkeypatch.setenv(Env.SCHEMA_DIRS, f"{tmp_path / 'missing'}{os.pathsep}{folder}")
    assert payloads.problems("invoices.create", {"amount_cents": -5}) == [
        "payload field 'amount_cents' must be >= 1, got -5"]
    assert "invoices.create" in payloads.known_types() and "payments.update_balance" in payloads.known_types()

    class NoSqs:
        def __getattr__(self, name):
            raise AssertionError(f"nothing may be sent, but {name} was called")

    publisher = Publisher({"transactional": "https://sqs.us-east-1.amazonaws.com/1/q"},
                          Routes({"invoices.*": "transactional"}), sqs=NoSqs())
    with pytest.raises(InvalidJobError, match="amount_cents"):
        publisher.publish("invoices.create", {"amount_cents": -5}, "inv-1")


def test_an_added_folder_is_searched_before_the_packages_own(tmp_path, monkeypatch):
    monkeypatch.setattr(payloads, "_added_dirs", [])
    stricter = {"type": "object", "required": ["account_id", "amount", "currency"]}
    payloads.add_schema_dir(_schemas(tmp_path, **{"payments.update_balance": stricter}))
    payloads.add_schema_dir(tmp_path)  # once is enough
    assert payloads.schema_dirs().count(tmp_path.resolve()) == 1
    assert payloads.problems("payments.update_balance", {"account_id": "a", "amount": 1}) == [
        "payload is missing required field 'currency'"]


def test_the_consumer_checks_the_schemas_of_its_job_folder(tmp_path):
    """The consumer's handler adds ``<job folder>/schemas/`` when it imports the jobs (a cold start)."""
    package = tmp_path / "billing_jobs"
    _schemas(package / "schemas", **{"invoices.create": INVOICE_SCHEMA})
    (package / "__init__.py").write_text("")
    probe = ("import tiered_jobs.handlers.consumer\n"
             "from tiered_jobs.contract import payloads\n"
             "print(payloads.problems('invoices.create', {'amount_cents': 0}))\n")
    env = {**os.environ, Env.JOB_MODULES: "billing_jobs", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
           "POWERTOOLS_METRICS_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
    env.pop(Env.SCHEMA_DIRS, None)
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(["payload field 'amount_cents' must be >= 1, got 0"])


def test_the_consumer_enforces_its_job_folders_schemas_on_the_jobs_it_imports(tmp_path):
    """The handler adds ``<job folder>/schemas/`` before it imports the jobs, and a job registered by
    that import (``@job``) is held to its schema: a payload only the schema refuses is a permanent error."""
    package = tmp_path / "billing_jobs"
    _schemas(package / "schemas", **{"invoices.create": INVOICE_SCHEMA})
    (package / "__init__.py").write_text(
        "from tiered_jobs.contract import payloads\n"
        "from tiered_jobs.runtime import job\n"
        "SEEN_WHILE_IMPORTING = [str(folder) for folder in payloads.schema_dirs()]\n"
        "@job('invoices.create')\n"
        "def create(payload, ctx):\n"
        "    return payload\n")
    probe = ("import json, tiered_jobs.handlers.consumer, billing_jobs\n"
             "from tiered_jobs.runtime.errors import PayloadValidationError\n"
             "from tiered_jobs.runtime.registry import registry\n"
             "check = registry.get('invoices.create').validate\n"
             "check({'amount_cents': 5})\n"
             "try:\n"
             "    check({'amount_cents': 0})\n"
             "except PayloadValidationError as error:\n"
             "    refused = str(error)\n"
             "print(json.dumps({'refused': refused, 'seen': billing_jobs.SEEN_WHILE_IMPORTING}))\n")
    env = {**os.environ, Env.JOB_MODULES: "billing_jobs", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
           "POWERTOOLS_METRICS_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
    env.pop(Env.SCHEMA_DIRS, None)
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found["refused"] == "payload field 'amount_cents' must be >= 1, got 0"
    assert str((package / "schemas").resolve()) in found["seen"]
