"""moto gap 7: concurrent transactions on the embedded server lose nothing (DynamoDB's atomicity)."""

from __future__ import annotations

import threading

import boto3
import pytest
from botocore.exceptions import ClientError

from emulator.server import EmbeddedAws, client_environment

#: Fifteen seconds of concurrent transactions against the embedded moto server.
pytestmark = pytest.mark.e2e


def test_concurrent_transactions_with_failed_conditions_keep_every_commit():
    with EmbeddedAws() as endpoint, client_environment(endpoint):
        dynamodb = boto3.client("dynamodb")
        dynamodb.create_table(
            TableName="ledger",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        )
        for i in range(200):  # a table big enough that a snapshot takes a while
            dynamodb.put_item(TableName="ledger", Item={"pk": {"S": f"filler-{i}"}})

        def apply(worker: int) -> None:
            client = boto3.client("dynamodb")
            for n in range(15):
                for _attempt in range(2):  # the second one always fails its condition and rolls back
                    try:
                        client.transact_write_items(
                            TransactItems=[
                                {
                                    "Update": {
                                        "TableName": "ledger",
                                        "Key": {"pk": {"S": "balance"}},
                                        "UpdateExpression": "ADD amount :one",
                                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                                    }
                                },
                                {
                                    "Put": {
                                        "TableName": "ledger",
                                        "Item": {"pk": {"S": f"marker-{worker}-{n}"}},
                                        "ConditionExpression": "attribute_not_exists(pk)",
                                    }
                                },
                            ]
                        )
                    except ClientError as exc:
                        assert exc.response["Error"]["Code"] == "TransactionCanceledException"

        threads = [threading.Thread(target=apply, args=(w,)) for w in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        item = dynamodb.get_item(TableName="ledger", Key={"pk": {"S": "balance"}})["Item"]
        markers = dynamodb.scan(
            TableName="ledger",
            Select="COUNT",
            ScanFilter={"pk": {"AttributeValueList": [{"S": "marker-"}], "ComparisonOperator": "BEGINS_WITH"}},
        )["Count"]
    assert (int(item["amount"]["N"]), markers) == (90, 90)
