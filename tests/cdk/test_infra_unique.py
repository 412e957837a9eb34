"""Unique jobs in the template: the locks' table (secure defaults, TTL), how publishers and consumers find it, and
exactly the access each needs (publishers lock and unlock, consumers only release)."""

from __future__ import annotations

import pytest

from tests.cdk.infra_support import find_consumer, policy_statements, referenced_ids
from tiered_jobs.cdk.publishers import UNIQUE_LOCK_ACTIONS
from tiered_jobs.contract import unique
from tiered_jobs.contract.names import STAGE_TAG, Env, Outputs, Ssm

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth


def unique_table(synth) -> str:
    (key,) = [
        k
        for k, r in synth.resources("AWS::DynamoDB::Table").items()
        if r["Properties"]["KeySchema"] == [{"AttributeName": unique.KEY_ATTRIBUTE, "KeyType": "HASH"}]
    ]
    return key


def test_the_locks_table_is_on_demand_encrypted_recoverable_retained_and_expires_its_locks(default_synth):
    table = default_synth.raw["Resources"][unique_table(default_synth)]
    props = table["Properties"]
    assert props["AttributeDefinitions"] == [{"AttributeName": unique.KEY_ATTRIBUTE, "AttributeType": "S"}]
    assert props["BillingMode"] == "PAY_PER_REQUEST"  # no fixed cost: a stage that never uses it pays nothing
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"] == {"SSEEnabled": True}
    assert props["TimeToLiveSpecification"] == {"AttributeName": unique.EXPIRES_ATTRIBUTE, "Enabled": True}
    assert table["DeletionPolicy"] == "Retain"
    assert {"Key": STAGE_TAG, "Value": "dev"} in props["Tags"]  # teardown finds it


def test_publishers_and_operators_find_it_by_output_and_ssm_parameter(default_synth):
    key = unique_table(default_synth)
    parameters = {
        p["Properties"]["Name"]: p["Properties"]["Value"]
        for p in default_synth.resources("AWS::SSM::Parameter").values()
    }
    assert default_synth.raw["Outputs"][Outputs.UNIQUE_TABLE_NAME]["Value"] == {"Ref": key}
    assert parameters[Ssm.unique_table_name("dev")] == {"Ref": key}


@pytest.mark.parametrize("tier", ["critical", "transactional", "bulk"])
def test_each_consumer_may_only_delete_a_lock(default_synth, tier):
    key = unique_table(default_synth)
    function, consumer = find_consumer(default_synth, "dev", tier)
    assert consumer["Properties"]["Environment"]["Variables"][Env.UNIQUE_TABLE] == {"Ref": key}
    on_table = [s for s in policy_statements(default_synth, function) if key in referenced_ids(s["Resource"])]
    assert [(s["Effect"], s["Action"]) for s in on_table] == [("Allow", "dynamodb:DeleteItem")]


def test_the_publisher_policy_locks_and_unlocks_on_that_table_only(default_synth):
    key = unique_table(default_synth)
    (policy,) = default_synth.resources("AWS::IAM::ManagedPolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    (lock,) = [s for s in statements if s.get("Sid") == "LockAndUnlockUniqueJobs"]
    assert sorted(lock["Action"]) == sorted(UNIQUE_LOCK_ACTIONS) == ["dynamodb:DeleteItem", "dynamodb:PutItem"]
    assert referenced_ids(lock["Resource"]) == {key}
    assert [s for s in statements if s is not lock and key in referenced_ids(s["Resource"])] == []
