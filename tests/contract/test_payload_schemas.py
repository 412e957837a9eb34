"""Payload schemas: found in a job folder's ``schemas/`` or through ``TIERED_JOBS_SCHEMA_DIRS``, loaded
only within the supported subset of JSON Schema, checked by our validator exactly as ``jsonschema``
checks them (the consumer and publisher cannot use jsonschema: stdlib only), and enforced by the
publisher and by the consumer's handler. On the library's own test jobs (``tests/support/jobs``); the
example app's schemas are tested in ``tests/functions/test_payload_schemas.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import tiered_jobs
from tests.support.schema_agreement import disagreements
from tiered_jobs.contract import payloads
from tiered_jobs.contract.names import Env

ROOT = Path(__file__).resolve().parents[2]
TEST_JOBS = ("testjobs.effect", "testjobs.ok", "testjobs.permanent", "testjobs.slow", "testjobs.transient")
#: One payload each test job's schema accepts: the base every field's value is varied on.
BASE = {
    "testjobs.effect": {"counter": "c", "amount": 1},
    "testjobs.ok": {"label": "a"},
    "testjobs.permanent": {},
    "testjobs.slow": {"steps": 1, "step_ms": 0},
    "testjobs.transient": {"fail_times": 0},
}


def test_the_package_ships_no_payload_schema():
    """Every job type is an app's, and so is its schema: the package holds only the envelope's."""
    package = Path(tiered_jobs.__file__).parent
    assert [p.name for p in package.rglob("*.schema.json")] == ["envelope.schema.json"]
    assert not [folder for folder in payloads.schema_dirs() if package in folder.parents]


def test_agreement_on_every_kind_of_value_for_every_field():
    values = [
        None,
        True,
        False,
        0,
        1,
        -1,
        0.0,
        1.0,
        2.5,
        10**12,
        -(10**12),
        10**12 + 1,
        "",
        "a",
        "a b",
        "x" * 200,
        "x" * 201,
        "low",
        [],
        [1],
        {},
        {"k": 1},
    ]
    assert sorted(BASE) == list(TEST_JOBS) == [t for t in payloads.known_types() if t.startswith("testjobs.")]
    for job_type in TEST_JOBS:
        fields = [*payloads.schema(job_type)["properties"], "unknown"]
        assert disagreements(job_type, BASE[job_type], fields, values) == [], job_type


def test_messages_name_the_field_and_say_what_is_wrong():
    assert payloads.problems("testjobs.effect", {"counter": "c", "amount_cents": -5}) == [
        "payload is missing required field 'amount'"
    ]
    assert payloads.problems("testjobs.effect", {"counter": "c", "amount": 0}) == [
        "payload field 'amount' must not be 0"
    ]
    assert payloads.problems("testjobs.effect", {"counter": "c", "amount": "10"}) == [
        "payload field 'amount' must be an integer, got a string"
    ]
    assert payloads.problems("testjobs.ok", {"label": "a", "priority": "urgent"}) == [
        "payload field 'priority' must be one of 'low', 'normal', 'high', got 'urgent'"
    ]
    assert payloads.problems("testjobs.ok", {"label": "a", "data": []}) == [
        "payload field 'data' must be an object, got an array"
    ]
    assert payloads.problems("testjobs.slow", {"steps": 1, "step_ms": 0, "extra": 1}) == [
        "payload has unknown field 'extra'; allowed: steps, step_ms"
    ]


def test_dollar_ends_the_string_as_in_ecma_262():
    """Python's ``$`` would also match before a final newline; other languages' validators do not."""
    assert payloads.problems("testjobs.ok", {"label": "a\n"})
    assert jsonschema.Draft202012Validator(payloads.schema("testjobs.ok")).is_valid({"label": "a"})


def test_a_type_without_a_schema_is_not_checked_here():
    assert payloads.problems("analytics.page_view", {"anything": 1}) == []
    assert payloads.problems("../names", {}) == []


def test_a_schema_outside_the_subset_is_refused(tmp_path, monkeypatch):
    (tmp_path / "x.y.schema.json").write_text(json.dumps({"type": "object", "oneOf": [{}]}))
    monkeypatch.setenv(Env.SCHEMA_DIRS, str(tmp_path))
    with pytest.raises(payloads.SchemaError, match="unsupported keyword.*oneOf"):
        payloads.problems("x.y", {})


INVOICE_SCHEMA = {
    "type": "object",
    "required": ["amount_cents"],
    "properties": {"amount_cents": {"type": "integer", "minimum": 1}},
}


def _schemas(folder, **documents):
    folder.mkdir(parents=True, exist_ok=True)
    for job_type, document in documents.items():
        (folder / f"{job_type}.schema.json").write_text(json.dumps(document))
    return folder


def test_an_apps_own_schemas_are_found_through_the_environment_and_the_publisher_refuses_before_sending(
    tmp_path, monkeypatch
):
    """A library user's service names a copy of its job folder's ``schemas/`` in TIERED_JOBS_SCHEMA_DIRS."""
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import InvalidJobError, Publisher

    folder = _schemas(tmp_path / "schemas", **{"invoices.create": INVOICE_SCHEMA})
    assert payloads.problems("invoices.create", {"amount_cents": -5}) == []  # unknown here: not checked
    monkeypatch.setenv(Env.SCHEMA_DIRS, f"{tmp_path / 'missing'}{os.pathsep}{folder}")
    assert payloads.problems("invoices.create", {"amount_cents": -5}) == [
        "payload field 'amount_cents' must be >= 1, got -5"
    ]
    assert "invoices.create" in payloads.known_types() and "testjobs.effect" in payloads.known_types()

    class NoSqs:
        def __getattr__(self, name):
            raise AssertionError(f"nothing may be sent, but {name} was called")

    publisher = Publisher(
        {"transactional": "https://sqs.us-east-1.amazonaws.com/1/q"},
        Routes({"invoices.*": "transactional"}),
        sqs=NoSqs(),
    )
    with pytest.raises(InvalidJobError, match="amount_cents"):
        publisher.publish("invoices.create", {"amount_cents": -5}, "inv-1")


def test_an_added_folder_is_searched_before_the_packages_own(tmp_path, monkeypatch):
    monkeypatch.setattr(payloads, "_added_dirs", [])
    stricter = {"type": "object", "required": ["counter", "amount", "currency"]}
    payloads.add_schema_dir(_schemas(tmp_path, **{"testjobs.effect": stricter}))
    payloads.add_schema_dir(tmp_path)  # once is enough
    assert payloads.schema_dirs().count(tmp_path.resolve()) == 1
    assert payloads.problems("testjobs.effect", {"counter": "a", "amount": 1}) == [
        "payload is missing required field 'currency'"
    ]


def test_the_consumer_checks_the_schemas_of_its_job_folder(tmp_path):
    """The consumer's handler adds ``<job folder>/schemas/`` when it imports the jobs (a cold start)."""
    package = tmp_path / "billing_jobs"
    _schemas(package / "schemas", **{"invoices.create": INVOICE_SCHEMA})
    (package / "__init__.py").write_text("")
    probe = (
        "import tiered_jobs.handlers.consumer\n"
        "from tiered_jobs.contract import payloads\n"
        "print(payloads.problems('invoices.create', {'amount_cents': 0}))\n"
    )
    env = {
        **os.environ,
        Env.JOB_MODULES: "billing_jobs",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        "POWERTOOLS_METRICS_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
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
        "    return payload\n"
    )
    probe = (
        "import json, tiered_jobs.handlers.consumer, billing_jobs\n"
        "from tiered_jobs.runtime.errors import PayloadValidationError\n"
        "from tiered_jobs.runtime.registry import registry\n"
        "check = registry.get('invoices.create').validate\n"
        "check({'amount_cents': 5})\n"
        "try:\n"
        "    check({'amount_cents': 0})\n"
        "except PayloadValidationError as error:\n"
        "    refused = str(error)\n"
        "print(json.dumps({'refused': refused, 'seen': billing_jobs.SEEN_WHILE_IMPORTING}))\n"
    )
    env = {
        **os.environ,
        Env.JOB_MODULES: "billing_jobs",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        "POWERTOOLS_METRICS_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    env.pop(Env.SCHEMA_DIRS, None)
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found["refused"] == "payload field 'amount_cents' must be >= 1, got 0"
    assert str((package / "schemas").resolve()) in found["seen"]
