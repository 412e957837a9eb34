"""AWS errors are classified from AWS's own catalogue (botocore's service models), not by HTTP status.

moto never conflicts a DynamoDB transaction, so the conflict is played by botocore's Stubber and
by botocore's own JSON error parser fed the body DynamoDB documents.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import boto3
import botocore.session
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from tiered_jobs.runtime.aws_errors import (
    CATALOGUE,
    COMMON,
    KINDS,
    TRANSACTION_CANCELED,
    TRANSACTION_REASONS,
)
from tiered_jobs.runtime.errors import classify

ROOT = Path(__file__).resolve().parents[2]
#: Every service the runtime, the example's jobs and the library's test jobs call (checked against the code below).
SERVICES = ("dynamodb", "sqs", "sns", "kms", "sts", "lambda", "s3")
CONFLICT_MESSAGE = (
    "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict, None]"
)
CONFLICT_REASONS = [
    {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item."},
    {"Code": "None"},
]


def botocore_codes(service: str) -> set[str]:
    """Shape names of the model's errors, plus their wire code where the model gives another."""
    model = botocore.session.get_session().get_service_model(service)
    codes = set()
    for shape in model.error_shapes:
        codes.add(shape.name)
        code = (shape.metadata.get("error") or {}).get("code")
        if code:
            codes.add(code)
    return codes


@pytest.mark.parametrize("service", SERVICES)
def test_every_error_code_botocore_knows_is_decided(service):
    missing = sorted(botocore_codes(service) - CATALOGUE[service].keys())
    assert missing == [], (
        f"botocore {botocore.__version__} knows {service} error codes that tiered_jobs/runtime/aws_errors.py "
        f"has not decided transient or permanent: {missing}"
    )


def test_the_catalogue_covers_every_service_the_runtime_calls():
    called = set()
    for path in [*(ROOT / "functions" / "jobs").rglob("*.py"), *(ROOT / "tests" / "support" / "jobs").rglob("*.py")]:
        called |= set(re.findall(r"client\(\s*[\"']([a-z0-9-]+)[\"']", path.read_text(encoding="utf-8")))
    assert called and called <= set(CATALOGUE), f"uncatalogued services: {called - set(CATALOGUE)}"
    assert set(CATALOGUE) == set(SERVICES)


def test_no_code_is_decided_two_ways():
    seen: dict[str, dict[str, str]] = {}
    for name, table in {"common": COMMON, **CATALOGUE}.items():
        for code, kind in table.items():
            seen.setdefault(code, {})[name] = kind
    conflicts = {code: kinds for code, kinds in seen.items() if len(set(kinds.values())) > 1}
    assert conflicts == {}
    assert len(KINDS) == len(seen)


def test_every_documented_cancellation_reason_is_decided():
    model = botocore.session.get_session().get_service_model("dynamodb")
    docs = re.sub(r"<[^>]+>", " ", model.shape_for(TRANSACTION_CANCELED).documentation)
    documented = set(re.findall(r"Code:\s+(\w+)", docs))
    assert {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"} <= documented
    assert documented - TRANSACTION_REASONS.keys() == set()


def cancelled(*codes: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": TRANSACTION_CANCELED, "Message": f"Transaction cancelled [{', '.join(codes)}]"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
            "CancellationReasons": [{"Code": code} for code in codes],
        },
        "TransactWriteItems",
    )


@pytest.mark.parametrize(
    "codes, kind",
    [
        (("TransactionConflict", "None"), "transient"),
        (("None", "ThrottlingError"), "transient"),
        (("ProvisionedThroughputExceeded",), "transient"),
        (("ConditionalCheckFailed", "TransactionConflict"), "transient"),  # the next attempt sees the real state
        (("None", "ConditionalCheckFailed"), "permanent"),
        (("ValidationError", "None"), "permanent"),
        (("ItemCollectionSizeLimitExceeded",), "permanent"),
    ],
)
def test_transaction_cancellation_is_classified_by_its_reasons(codes, kind):
    assert classify(cancelled(*codes)) == kind


@pytest.mark.parametrize(
    "code, status, kind",
    [
        ("TransactionConflictException", 400, "transient"),
        ("ThrottlingException", 400, "transient"),
        ("KMSThrottlingException", 400, "transient"),
        ("ExpiredTokenException", 400, "transient"),
        ("ResourceConflictException", 409, "transient"),  # Lambda: the function is being updated
        ("ConditionalCheckFailedException", 400, "permanent"),
        ("KMSInvalidStateException", 400, "permanent"),
        ("EC2AccessDeniedException", 502, "permanent"),  # a 5xx that retrying cannot fix
    ],
)
def test_codes_are_classified_by_the_catalogue_before_the_status(code, status, kind):
    error = ClientError({"Error": {"Code": code, "Message": "x"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")
    assert classify(error) == kind


def test_sqs_query_compatible_codes_are_read_from_query_error_code():
    """SQS's JSON protocol answers with ``x-amzn-query-error``: Code is the legacy name."""
    error = ClientError(
        {
            "Error": {
                "Code": "AWS.SimpleQueueService.NonExistentQueue",
                "QueryErrorCode": "QueueDoesNotExist",
                "Message": "x",
            },
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        "SendMessage",
    )
    assert classify(error) == "permanent"
    throttled = ClientError(
        {
            "Error": {
                "Code": "AWS.SimpleQueueService.RequestThrottled",
                "QueryErrorCode": "RequestThrottled",
                "Message": "x",
            },
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        "SendMessage",
    )
    assert classify(throttled) == "transient"


class _Raw:
    def __init__(self, body: bytes):
        self._body = body

    def stream(self, **_):
        yield self._body


def test_botocore_parses_dynamodbs_conflict_body_into_a_transient_error():
    """The wire form AWS documents, through botocore's real parser: the reasons land in
    ``response["CancellationReasons"]`` and the error is transient (HTTP 400 alone said permanent)."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    body = json.dumps(
        {
            "__type": f"com.amazonaws.dynamodb.v20120810#{TRANSACTION_CANCELED}",
            "Message": CONFLICT_MESSAGE,
            "CancellationReasons": CONFLICT_REASONS,
        }
    ).encode()
    client.meta.events.register(
        "before-send.dynamodb.TransactWriteItems",
        lambda request, **_: AWSResponse(request.url, 400, {"x-amzn-requestid": "r"}, _Raw(body)),
    )
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(
            TransactItems=[
                {
                    "ConditionCheck": {
                        "TableName": "t",
                        "Key": {"k": {"S": "v"}},
                        "ConditionExpression": "attribute_exists(k)",
                    }
                }
            ]
        )
    assert caught.value.response["CancellationReasons"][0]["Code"] == "TransactionConflict"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert classify(caught.value) == "transient"


class ConflictingDynamoDB:
    """The tier's DynamoDB client (moto), except that the first ``conflicts`` TransactWriteItems
    calls are answered by botocore's Stubber with DynamoDB's TransactionConflict cancellation."""

    def __init__(self, real, conflicts: int):
        self._real = real
        self._conflicts_left = conflicts
        self.transactions = 0
        self._stubbed = boto3.client("dynamodb", region_name="us-east-1")
        self.stubber = Stubber(self._stubbed)
        for _ in range(conflicts):
            self.stubber.add_client_error(
                "transact_write_items",
                service_error_code=TRANSACTION_CANCELED,
                service_message=CONFLICT_MESSAGE,
                http_status_code=400,
                modeled_fields={"CancellationReasons": CONFLICT_REASONS},
            )
        self.stubber.activate()

    def __getattr__(self, name):
        return getattr(self._real, name)

    def transact_write_items(self, **kwargs):
        self.transactions += 1
        if self._conflicts_left:
            self._conflicts_left -= 1
            return self._stubbed.transact_write_items(**kwargs)
        return self._real.transact_write_items(**kwargs)


def test_an_effect_whose_transaction_conflicts_twice_is_retried_then_applied_once(tier):
    dynamodb = ConflictingDynamoDB(tier.dynamodb, conflicts=2)
    consumer = tier.consumer(client={"sqs": tier.sqs, "dynamodb": dynamodb}.__getitem__)
    message_id = tier.publish("testjobs.effect", {"counter": "acc-c", "amount": 25}, "pay-conflict")
    for _ in range(2):
        assert tier.run_batch(consumer)["batchItemFailures"] == [{"itemIdentifier": message_id}]
        assert tier.dlq_messages() == []
        tier.make_visible()
    assert tier.run_batch(consumer)["batchItemFailures"] == []
    dynamodb.stubber.assert_no_pending_responses()
    assert dynamodb.transactions == 3
    assert tier.counter("acc-c") == 25
    assert tier.receive() == [] and tier.dlq_messages() == []
