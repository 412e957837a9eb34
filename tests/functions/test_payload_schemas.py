"""The example app's payload schemas: one per example job, valid draft 2020-12, checked by our validator
exactly as ``jsonschema`` checks them (the consumer and publisher cannot use jsonschema: stdlib only).

How schemas are found and enforced, on the library's own test jobs: ``tests/contract/test_payload_schemas.py``."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.support.schema_agreement import disagreements
from tiered_jobs.contract import payloads

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_SCHEMAS = ROOT / "functions" / "jobs" / "schemas"

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
        {"to": "nobody", "subject": "s"},
        {"to": "a@b.c", "subject": "s"},
        {"to": "a b@c.de", "subject": "s"},
        {"to": "a@@b.cc", "subject": "s"},
        {"to": "x" * 65 + "@b.cc", "subject": "s"},
        {"to": "a@" + "b" * 250 + ".cc", "subject": "s"},
        {"to": "a@b.cc", "subject": "s" * 999},
        {"to": "a@b.cc"},
        {"to": ["a@b.cc"], "subject": "s"},
    ],
    "analytics.record_event": [
        {},
        {"event": ""},
        {"event": "a b"},
        {"event": "e", "properties": []},
        {"event": "x" * 129},
        {"event": None},
    ],
    "demo.flaky": [
        {},
        {"fail_times": -1},
        {"fail_times": "1"},
        {"fail_times": 1, "error": "fatal"},
        {"fail_times": False},
        {"fail_times": 1.5},
    ],
}


def test_every_example_job_declares_its_payload_and_nothing_else_ships():
    import functions.jobs  # noqa: F401  (registers the example jobs)
    from tiered_jobs.runtime.registry import registry

    examples = [t for t in registry.types() if registry.get(t).handler.__module__.startswith("functions.jobs.")]
    assert examples == sorted(VALID)
    assert [
        path.name.removesuffix(payloads.SCHEMA_SUFFIX) for path in sorted(EXAMPLE_SCHEMAS.glob("*.json"))
    ] == sorted(VALID)
    # The package ships none: the only folders searched are the example's and the suite's own test jobs'.
    assert payloads.schema_dirs() == [EXAMPLE_SCHEMAS, ROOT / "tests" / "support" / "jobs" / "schemas"]
    # Every job type of the example's and the suite's, and no other, has a schema (a test module
    # that ran before on this worker may have registered types of its own: the bench's, say).
    mine = ("functions.jobs.", "tests.support.jobs.")
    ours = [t for t in registry.types() if registry.get(t).handler.__module__.startswith(mine)]
    assert payloads.known_types() == ours


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
        "",
        "a",
        "a@b.cc",
        "page_view",
        "transient",
        "x" * 200,
        [],
        [1],
        {},
        {"k": 1},
    ]
    for job_type in sorted(VALID):
        fields = payloads.schema(job_type)["properties"]
        assert disagreements(job_type, VALID[job_type][0], fields, values) == [], job_type


def test_messages_name_the_field_and_say_what_is_wrong():
    assert payloads.problems("payments.update_balance", {"account_id": "acc_1", "amount_cents": -5}) == [
        "payload is missing required field 'amount'"
    ]
    assert payloads.problems("payments.update_balance", {"account_id": "acc_1", "amount": 0}) == [
        "payload field 'amount' must not be 0"
    ]
    assert payloads.problems("payments.update_balance", {"account_id": "a", "amount": "10"}) == [
        "payload field 'amount' must be an integer, got a string"
    ]
    assert payloads.problems("demo.flaky", {"fail_times": 1, "error": "fatal"}) == [
        "payload field 'error' must be one of 'transient', 'permanent', got 'fatal'"
    ]
    assert payloads.problems("analytics.record_event", {"event": "e", "properties": []}) == [
        "payload field 'properties' must be an object, got an array"
    ]


def test_dollar_ends_the_string_as_in_ecma_262():
    """Python's ``$`` would also match before a final newline; other languages' validators do not."""
    assert payloads.problems("notifications.send_email", {"to": "a@b.cc\n", "subject": "s"})
