"""The injected AWS faults really happen through botocore: a lost answer is retried, a refusal is raised."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from tests.support.aws_faults import conflict_response, lose_answers, refuse


@pytest.fixture
def table():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def test_a_lost_answer_sends_the_applied_request_again_so_a_conditional_put_meets_its_own_item(table):
    with lose_answers(table, "PutItem") as lost:
        with pytest.raises(table.exceptions.ConditionalCheckFailedException):
            table.put_item(TableName="t", Item={"pk": {"S": "a"}}, ConditionExpression="attribute_not_exists(pk)")
    assert lost.count == 1
    assert table.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}}


def test_a_lost_answer_of_an_unconditional_put_is_harmless_and_only_the_chosen_calls_lose_it(table):
    with lose_answers(table, "PutItem", times=2, when=lambda request: b'"b"' in request["body"]) as lost:
        table.put_item(TableName="t", Item={"pk": {"S": "a"}})
        table.put_item(TableName="t", Item={"pk": {"S": "b"}})
    assert lost.count == 2  # the first answer of b's put and that of botocore's retry; a's is kept
    assert all(b'"b"' in request["body"] for request in lost.params)
    assert table.scan(TableName="t")["Count"] == 2


def test_a_refused_transaction_names_a_conflict_per_item_and_applies_nothing(table):
    items = [{"Put": {"TableName": "t", "Item": {"pk": {"S": key}}}} for key in ("a", "b")]
    with refuse(table, "TransactWriteItems", lambda params: conflict_response(len(params["TransactItems"]))) as hit:
        with pytest.raises(table.exceptions.TransactionCanceledException) as refused:
            table.transact_write_items(TransactItems=items)
    assert hit.count == 1
    assert [reason["Code"] for reason in refused.value.response["CancellationReasons"]] == ["TransactionConflict"] * 2
    assert table.scan(TableName="t")["Count"] == 0
    table.transact_write_items(TransactItems=items)  # the fault is spent: the next call goes through
    assert table.scan(TableName="t")["Count"] == 2
