"""``resources`` in cdk.json: each one reaches exactly the consumers of the tiers that run its job types.

A stage declares a table the stack creates (read only, with a sort key), an existing table and an
existing queue by ARN. Each gets its variable, its least grant, an SSM parameter and an output on
exactly those tiers; malformed entries stop synthesis with a message that names the fix.
"""

from __future__ import annotations

import pytest

from tests.cdk.hops import Request, evaluate
from tests.cdk.infra_support import (
    EXAMPLE_ROUTES,
    find_consumer,
    logical_id,
    policy_statements,
    synthesize,
)
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.names import Env, Outputs, Ssm

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

INVOICES_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/invoices"
AUDIT_ARN = "arn:aws:sqs:us-east-1:123456789012:audit"
CUSTOMERS_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/customers"
LEDGER_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/ledger"
CUSTOMERS_KEY = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555"
LEDGER_KEY = "arn:aws:kms:us-east-1:123456789012:key/66666666-7777-8888-9999-000000000000"
AUDIT_KEY = "arn:aws:kms:us-east-1:123456789012:key/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
RESOURCES = {
    # Read only, created here; invoices.* routes to transactional (the route added below).
    "invoice_lines": {
        "kind": "table",
        "partition_key": "invoice_id",
        "sort_key": "line",
        "access": "read",
        "job_types": ["invoices.*"],
    },
    # Existing: analytics.* -> bulk, demo.* -> transactional.
    "archive": {"kind": "table", "arn": INVOICES_ARN, "job_types": ["analytics.*", "demo.flaky"]},
    "audit": {"kind": "queue", "arn": AUDIT_ARN, "job_types": ["payments.*"], "kms_key_arn": AUDIT_KEY},
    # Existing, encrypted with customer-managed keys, queried through indexes: one read, one read-write.
    "customers": {
        "kind": "table",
        "arn": CUSTOMERS_ARN,
        "job_types": ["invoices.*"],
        "access": "read",
        "kms_key_arn": CUSTOMERS_KEY,
        "indexes": ["by_email", "by_country"],
    },
    "ledger": {
        "kind": "table",
        "arn": LEDGER_ARN,
        "job_types": ["analytics.*"],
        "kms_key_arn": LEDGER_KEY,
        "indexes": ["*"],
    },
}
EXPECTED_TIERS = {
    "invoice_lines": {"transactional"},
    "archive": {"bulk", "transactional"},
    "audit": {"critical"},
    "customers": {"transactional"},
    "ledger": {"bulk"},
}
TABLE_READ = {
    "dynamodb:BatchGetItem",
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DescribeTable",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
}
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
    key = logical_id(
        synth,
        "AWS::DynamoDB::Table",
        KeySchema=[{"AttributeName": "invoice_id", "KeyType": "HASH"}, {"AttributeName": "line", "KeyType": "RANGE"}],
    )
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
    return AppSettings.from_context({"routes": EXAMPLE_ROUTES, "resources": resources, **raw})


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (
            {"Invoices": {"kind": "table", "partition_key": "id", "job_types": ["x.*"]}},
            "resource 'Invoices': invalid name; use lower-case words joined by '_'",
        ),
        ({"invoice__lines": {"kind": "table", "partition_key": "id", "job_types": ["x.*"]}}, "invalid name"),
        (
            {"invoices": {"kind": "bucket", "job_types": ["x.*"]}},
            "resource 'invoices': kind 'bucket' is not supported; use one of table, queue",
        ),
        (
            {"invoices": {"kind": "table", "job_types": ["payments.*"]}},
            "resource 'invoices': a table this stack creates needs a partition_key",
        ),
        (
            {"invoices": {"kind": "table", "partition_key": "id", "job_types": []}},
            "resource 'invoices': job_types must be a non-empty list of job-type globs",
        ),
        (
            {"invoices": {"kind": "table", "partition_key": "id", "job_types": ["invoices.*"]}},
            "resource 'invoices': no route carries job_types 'invoices.*', so no tier would use it; add a route",
        ),
        (
            {"invoices": {"kind": "table", "partition_key": "id", "access": "send", "job_types": ["payments.*"]}},
            "resource 'invoices': access 'send' does not apply to a table; use one of read_write, read",
        ),
        (
            {"audit": {"kind": "queue", "job_types": ["payments.*"]}},
            "resource 'audit': a queue must be an existing one, named by its arn",
        ),
        (
            {"audit": {"kind": "queue", "arn": INVOICES_ARN, "job_types": ["payments.*"]}},
            "resource 'audit': arn 'arn:aws:dynamodb:us-east-1:123456789012:table/invoices' "
            "is not the ARN of an existing queue",
        ),
        (
            {"old": {"kind": "table", "arn": INVOICES_ARN, "partition_key": "id", "job_types": ["payments.*"]}},
            "resource 'old': partition_key describe a table this stack creates",
        ),
        (
            {"invoices": {"kind": "table", "partition_key": "id", "job_types": ["payments.*"], "ttl": "x"}},
            "resource 'invoices': unknown key(s) 'ttl'",
        ),
        ([], "resources must be an object {name: {resource}}"),
    ],
)
def test_malformed_resources_fail_with_a_message_that_names_the_fix(resources, message):
    with pytest.raises(SettingsError) as raised:
        _settings(resources)
    assert message in str(raised.value)


# -- existing resources: their customer-managed keys and indexes ----------------------------------


def _cdk_key_actions(access: str) -> set[str]:
    """The key actions CDK's own grant gives on a table (or queue) of a stack encrypted with its own key."""
    import aws_cdk as cdk
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_sqs as sqs

    stack = cdk.Stack(cdk.App(), "Reference")
    key = kms.Key(stack, "Key")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    if access == "send":
        sqs.Queue(stack, "Queue", encryption_master_key=key).grant_send_messages(role)
    else:
        table = dynamodb.Table(
            stack,
            "Table",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            encryption_key=key,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
        )
        (table.grant_read_data if access == "read" else table.grant_read_write_data)(role)
    document = stack.resolve(role.node.find_child("DefaultPolicy").document.to_json())
    key_arn = stack.resolve(key.key_arn)
    return {
        action
        for statement in document["Statement"]
        if statement["Resource"] == key_arn
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    }


@pytest.fixture(scope="module")
def consumer_policies(synth):
    from tests.cdk.hops import Policies
    from tests.cdk.template_values import Concrete

    policies = Policies(Concrete(synth.raw))

    def allowed(tier: str, action: str, resource: str) -> bool:
        key, function = find_consumer(synth, synth.stage, tier)
        role = function["Properties"]["Role"]["Fn::GetAtt"][0]
        request = Request(action=action, resource=resource, principal=f"role:{role}", context={})
        verdict = evaluate(policies.identity_policy(role), request, policies.account_root)
        return verdict.allowed_by is not None and not verdict.denied_by

    return allowed


@pytest.mark.parametrize(
    ("name", "tier", "key", "access"),
    [
        ("customers", "transactional", CUSTOMERS_KEY, "read"),
        ("ledger", "bulk", LEDGER_KEY, "read_write"),
        ("audit", "critical", AUDIT_KEY, "send"),
    ],
)
def test_an_existing_resources_key_gets_cdks_own_key_grant_on_that_key_only(synth, name, tier, key, access):
    expected = _cdk_key_actions(access)
    assert "kms:Decrypt" in expected  # reading (or a consumer of the sent message) needs it at least
    assert _actions_on(synth, tier, lambda resource: resource == key) == expected
    for other in {"critical", "transactional", "bulk"} - {tier}:
        assert _actions_on(synth, other, lambda resource: resource == key) == set(), other
    # No key statement of the stack reaches further than the keys named (no "*" on kms actions).
    for statement in policy_statements(synth, find_consumer(synth, synth.stage, tier)[0]):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if any(action.startswith("kms:") for action in actions):
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            assert set(resources) <= {CUSTOMERS_KEY, LEDGER_KEY, AUDIT_KEY}, statement


def test_the_key_walks_as_aws_evaluates_it(consumer_policies):
    assert consumer_policies("transactional", "kms:Decrypt", CUSTOMERS_KEY)
    assert not consumer_policies("transactional", "kms:GenerateDataKey", CUSTOMERS_KEY)  # access "read"
    assert consumer_policies("bulk", "kms:GenerateDataKey", LEDGER_KEY)
    assert consumer_policies("critical", "kms:GenerateDataKey", AUDIT_KEY)  # SQS encrypts what it sends
    assert not consumer_policies("bulk", "kms:Decrypt", CUSTOMERS_KEY)
    assert not consumer_policies("transactional", "kms:Decrypt", LEDGER_KEY.replace("66666666", "12345678"))


def test_an_existing_tables_named_indexes_may_be_queried_and_no_other(consumer_policies):
    for index in ("by_email", "by_country"):
        assert consumer_policies("transactional", "dynamodb:Query", f"{CUSTOMERS_ARN}/index/{index}")
        assert consumer_policies("transactional", "dynamodb:Scan", f"{CUSTOMERS_ARN}/index/{index}")
    assert not consumer_policies("transactional", "dynamodb:Query", f"{CUSTOMERS_ARN}/index/by_secret")
    assert not consumer_policies("transactional", "dynamodb:PutItem", f"{CUSTOMERS_ARN}/index/by_email")
    assert consumer_policies("transactional", "dynamodb:Query", CUSTOMERS_ARN)  # the table itself, as before
    assert not consumer_policies("bulk", "dynamodb:Query", f"{CUSTOMERS_ARN}/index/by_email")  # not its tier


def test_every_index_with_a_star(consumer_policies):
    assert consumer_policies("bulk", "dynamodb:Query", f"{LEDGER_ARN}/index/anything")
    assert not consumer_policies("bulk", "dynamodb:Query", f"{CUSTOMERS_ARN}/index/anything")
    assert not consumer_policies("transactional", "dynamodb:Query", f"{LEDGER_ARN}/index/anything")


def test_an_existing_resource_without_them_gets_no_key_or_index_grant(consumer_policies):
    assert not consumer_policies("bulk", "dynamodb:Query", f"{INVOICES_ARN}/index/by_date")
    assert consumer_policies("bulk", "dynamodb:Query", INVOICES_ARN)


@pytest.mark.parametrize(
    ("resource", "message"),
    [
        (
            {"kind": "table", "partition_key": "id", "kms_key_arn": CUSTOMERS_KEY},
            "resource 'r': kms_key_arn describe an existing table or queue (named by its arn); a table this stack "
            "creates is encrypted with an AWS-managed key and has no indexes: remove kms_key_arn or add the arn",
        ),
        ({"kind": "table", "partition_key": "id", "indexes": ["by_email"]}, "remove indexes or add the arn"),
        (
            {
                "kind": "table",
                "arn": CUSTOMERS_ARN,
                "kms_key_arn": "arn:aws:kms:us-east-1:123456789012:alias/customers",
            },
            "resource 'r': kms_key_arn 'arn:aws:kms:us-east-1:123456789012:alias/customers' is not a KMS key ARN",
        ),
        (
            {"kind": "queue", "arn": AUDIT_ARN, "indexes": ["by_email"]},
            "resource 'r': indexes apply to a table, not a queue; remove indexes",
        ),
        ({"kind": "table", "arn": CUSTOMERS_ARN, "indexes": []}, "indexes must be a non-empty list"),
        ({"kind": "table", "arn": CUSTOMERS_ARN, "indexes": ["ab"]}, "indexes must be a non-empty list"),
        ({"kind": "table", "arn": CUSTOMERS_ARN, "indexes": "by_email"}, "indexes must be a non-empty list"),
        ({"kind": "table", "arn": CUSTOMERS_ARN, "indexes": ["*", "by_email"]}, "'*' already means every index"),
    ],
)
def test_a_key_or_indexes_that_cannot_apply_are_refused_with_the_fix(resource, message):
    with pytest.raises(SettingsError) as raised:
        _settings({"r": {"job_types": ["payments.*"], **resource}})
    assert message in str(raised.value)


def test_index_names_follow_dynamodbs_rule():
    """DynamoDB's IndexName: 3-255 characters of its pattern (botocore's model), here as the settings read it."""
    import botocore.session

    shape = botocore.session.get_session().get_service_model("dynamodb").shape_for("IndexName")
    low, high = shape.metadata["min"], shape.metadata["max"]
    for name, accepted in (
        ("a" * low, True),
        ("a" * (low - 1), False),
        ("a" * high, True),
        ("a" * (high + 1), False),
        ("a.b-c_D9", True),
        ("a b", False),
    ):
        raw = {"r": {"kind": "table", "arn": CUSTOMERS_ARN, "job_types": ["payments.*"], "indexes": [name]}}
        if accepted:
            assert _settings(raw).resources[0].indexes == (name,)
        else:
            with pytest.raises(SettingsError):
                _settings(raw)
