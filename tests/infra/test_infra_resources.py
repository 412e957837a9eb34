"""``resources`` in cdk.json: each one reaches exactly the consumers of the tiers that run its job types.

A stage declares a table the stack creates (read only, with a sort key), an existing table and an
existing queue by ARN. Each gets its variable, its least grant, an SSM parameter and an output on
exactly those tiers; malformed entries stop synthesis with a message that names the fix.
"""

from __future__ import annotations

import pytest

from tests.infra.infra_support import (
    find_consumer,
    logical_id,
    policy_statements,
    synthesize,
)
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.names import Env, Outputs, Ssm

INVOICES_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/invoices"
AUDIT_ARN = "arn:aws:sqs:us-east-1:123456789012:audit"
RESOURCES = {
    # Read only, created here; invoices.* routes to transactional (the route added below).
    "invoice_lines": {"kind": "table", "partition_key": "invoice_id", "sort_key": "line", "access": "read",
                      "job_types": ["invoices.*"]},
    # Existing: analytics.* -> bulk, demo.* -> transactional.
    "archive": {"kind": "table", "arn": INVOICES_ARN, "job_types": ["analytics.*", "demo.flaky"]},
    "audit": {"kind": "queue", "arn": AUDIT_ARN, "job_types": ["payments.*"]},
}
EXPECTED_TIERS = {"invoice_lines": {"transactional"}, "archive": {"bulk", "transactional"}, "audit": {"critical"}}
TABLE_READ = {"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan",
              "dynamodb:ConditionCheckItem", "dynamodb:DescribeTable", "dynamodb:GetRecords",
              "dynamodb:GetShardIterator"}
TABLE_WRITE = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    from infra.app import load_cdk_context

    routes = {**load_cdk_context()["tiered_jobs"]["routes"], "invoices.*": "transactional"}
    return synthesize(tmp_path_factory, "resources", stage="res", routes=routes, resources=RESOURCES)


def _consumer_env(synth, tier):
    return find_consumer(synth, synth.stage, tier)[1]["Properties"]["Environment"]["Variables"]


def _actions_on(synth, tier, matches) -> set[str]:
    """The actions the tier's consumer may take on resources whose template value satisfies ``matches``."""
    actions: set[str] = set()
    for statement in policy_statements(synth, find_consumer(synth, synth.stage, tier)[0]):
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if any(matches(resource) for resource in resources):
            actions |= set(statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
    return actions


def test_each_resource_reaches_exactly_the_tiers_of_its_job_types(synth):
    for name, tiers in EXPECTED_TIERS.items():
        for tier in ("critical", "transactional", "bulk"):
            assert (Env.resource_var(name) in _consumer_env(synth, tier)) == (tier in tiers), (name, tier)


def test_a_created_table_has_its_keys_and_only_its_tiers_may_read_it(synth):
    key = logical_id(synth, "AWS::DynamoDB::Table", KeySchema=[
        {"AttributeName": "invoice_id", "KeyType": "HASH"}, {"AttributeName": "line", "KeyType": "RANGE"}])
    table = synth.raw["Resources"][key]
    assert table["DeletionPolicy"] == "Retain" and table["Properties"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["Properties"]["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert _consumer_env(synth, "transactional")[Env.resource_var("invoice_lines")] == {"Ref": key}

    def on_table(resource):
        return resource == {"Fn::GetAtt": [key, "Arn"]}

    granted = _actions_on(synth, "transactional", on_table)
    assert granted and granted <= TABLE_READ  # access "read": no write action
    assert _actions_on(synth, "critical", on_table) == _actions_on(synth, "bulk", on_table) == set()


def test_an_existing_table_is_granted_read_write_by_its_arn(synth):
    assert "archive" not in str(synth.resources("AWS::DynamoDB::Table"))  # not created
    for tier in ("bulk", "transactional"):
        assert _consumer_env(synth, tier)[Env.resource_var("archive")] == "invoices"
        assert TABLE_WRITE <= _actions_on(synth, tier, lambda resource: resource == INVOICES_ARN)
    assert _actions_on(synth, "critical", lambda resource: resource == INVOICES_ARN) == set()


def test_an_existing_queue_is_granted_send_only(synth):
    url = _consumer_env(synth, "critical")[Env.resource_var("audit")]
    assert "audit" in str(url)  # the URL CDK builds from the ARN (region, account, name)
    granted = _actions_on(synth, "critical", lambda resource: resource == AUDIT_ARN)
    assert "sqs:SendMessage" in granted and not granted & {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:PurgeQueue"}


def test_each_resource_has_an_output_and_an_ssm_parameter(synth):
    parameters = {
        p["Properties"]["Name"]: p["Properties"]["Value"] for p in synth.resources("AWS::SSM::Parameter").values()
    }
    for name in RESOURCES:
        value = synth.raw["Outputs"][Outputs.resource(name)]["Value"]
        assert parameters[Ssm.resource("res", name)] == value
    assert Outputs.resource("invoice_lines") == "ResourceInvoiceLines"
    assert Ssm.resource("res", "invoice_lines") == "/tiered-jobs/res/resources/invoice_lines"


def _settings(resources, **raw):
    return AppSettings.from_context({"resources": resources, **raw})


@pytest.mark.parametrize(("resources", "message"), [
    ({"Invoices": {"kind": "table", "partition_key": "id", "job_types": ["x.*"]}},
     "resource 'Invoices': invalid name; use lower-case words joined by '_'"),
    ({"invoice__lines": {"kind": "table", "partition_key": "id", "job_types": ["x.*"]}}, "invalid name"),
    ({"invoices": {"kind": "bucket", "job_types": ["x.*"]}},
     "resource 'invoices': kind 'bucket' is not supported; use one of table, queue"),
    ({"invoices": {"kind": "table", "job_types": ["payments.*"]}},
     "resource 'invoices': a table this stack creates needs a partition_key"),
    ({"invoices": {"kind": "table", "partition_key": "id", "job_types": []}},
     "resource 'invoices': job_types must be a non-empty list of job-type globs"),
    ({"invoices": {"kind": "table", "partition_key": "id", "job_types": ["invoices.*"]}},
     "resource 'invoices': no route carries job_types 'invoices.*', so no tier would use it; add a route"),
    ({"invoices": {"kind": "table", "partition_key": "id", "access": "send", "job_types": ["payments.*"]}},
     "resource 'invoices': access 'send' does not apply to a table; use one of read_write, read"),
    ({"audit": {"kind": "queue", "job_types": ["payments.*"]}},
     "resource 'audit': a queue must be an existing one, named by its arn"),
    ({"audit": {"kind": "queue", "arn": INVOICES_ARN, "job_types": ["payments.*"]}},
     "resource 'audit': arn 'arn:aws:dynamodb:us-east-1:123456789012:table/invoices' "
     "is not the ARN of an existing queue"),
    ({"old": {"kind": "table", "arn": INVOICES_ARN, "partition_key": "id", "job_types": ["payments.*"]}},
     "resource 'old': partition_key describe a table this stack creates"),
    ({"invoices": {"kind": "table", "partition_key": "id", "job_types": ["payments.*"], "ttl": "x"}},
     "resource 'invoices': unknown key(s) 'ttl'"),
    ([], "resources must be an object {name: {resource}}"),
])
def test_malformed_resources_fail_with_a_message_that_names_the_fix(resources, message):
    with pytest.raises(SettingsError) as raised:
        _settings(resources)
    assert message in str(raised.value)
