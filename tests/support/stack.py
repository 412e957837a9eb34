"""Test doubles: a miniature of the real stack deployed into moto through CloudFormation, and a flaky SQS.

The stack holds only what the publisher and the CLI read: per tier a queue and its DLQ, the SSM parameters and
the stack outputs named by the contract. Creating it through CloudFormation (not by hand) means
discovery is tested against resolved ``Ref`` values, as on AWS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import boto3

from tiered_jobs.contract import batches, unique
from tiered_jobs.contract.names import (
    DEFAULT_TIERS,
    Outputs,
    Ssm,
    function_name,
    stack_name,
)

STAGE = "test"
#: Each tier's idempotency window: the default, queue retention (4 days) + DLQ retention (14 days).
IDEMPOTENCY_TTL_SECONDS = 18 * 86400
#: The default routing table of ``cdk.json``.
ROUTES = {
    "payments.*": "critical",
    "notifications.*": "transactional",
    "analytics.*": "bulk",
    "demo.*": "transactional",
}


@dataclass(frozen=True)
class FakeDeployment:
    stage: str
    stack_name: str
    queue_urls: dict[str, str]
    dlq_urls: dict[str, str]
    routes: dict[str, str]
    replay_function_name: str
    idempotency_table: str = ""
    #: The unique-jobs table (``publish(..., unique_for=)``), key ``lock`` as the construct makes it.
    unique_table: str = ""
    #: The batches table (``publisher.batch``, ``publisher.chain``), keys ``batch`` and ``member``.
    batch_table: str = ""


def _logical(tier: str, what: str) -> str:
    return Outputs.tier(tier, what)


def template(stage: str, tiers: tuple[str, ...], routes: dict[str, str]) -> dict:
    resources: dict = {}
    outputs: dict = {}
    parameters = {
        "TiersParameter": (Ssm.tiers(stage), ",".join(tiers)),
        "RoutesParameter": (Ssm.routes(stage), json.dumps(routes)),
        "ReplayParameter": (Ssm.replay_function_name(stage), function_name(stage, "replay")),
    }
    for tier in tiers:
        resources[_logical(tier, "Dlq")] = {
            "Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": f"tiered-jobs-{stage}-{tier}-dlq"},
        }
        resources[_logical(tier, "Queue")] = {
            "Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": f"tiered-jobs-{stage}-{tier}"},
        }
        for key, logical in ((Ssm.TIER_QUEUE_URL, "Queue"), (Ssm.TIER_DLQ_URL, "Dlq")):
            parameters[_logical(tier, logical + "Parameter")] = (
                Ssm.tier(stage, tier, key),
                {"Ref": _logical(tier, logical)},
            )
        parameters[_logical(tier, "IdempotencyTtlParameter")] = (
            Ssm.tier(stage, tier, Ssm.TIER_IDEMPOTENCY_TTL),
            str(IDEMPOTENCY_TTL_SECONDS),
        )
        outputs[Outputs.tier(tier, Outputs.QUEUE_URL)] = {"Value": {"Ref": _logical(tier, "Queue")}}
        outputs[Outputs.tier(tier, Outputs.DLQ_URL)] = {"Value": {"Ref": _logical(tier, "Dlq")}}
    for logical, (name, value) in parameters.items():
        resources[logical] = {
            "Type": "AWS::SSM::Parameter",
            "Properties": {"Name": name, "Type": "String", "Value": value},
        }
    resources["IdempotencyTable"] = {  # what `tiered-jobs job` reads: Powertools' key schema
        "Type": "AWS::DynamoDB::Table",
        "Properties": {
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    }
    outputs[Outputs.IDEMPOTENCY_TABLE_NAME] = {"Value": {"Ref": "IdempotencyTable"}}
    resources["UniqueTable"] = {
        "Type": "AWS::DynamoDB::Table",
        "Properties": {
            "AttributeDefinitions": [{"AttributeName": unique.KEY_ATTRIBUTE, "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": unique.KEY_ATTRIBUTE, "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    }
    outputs[Outputs.UNIQUE_TABLE_NAME] = {"Value": {"Ref": "UniqueTable"}}
    resources["UniqueTableParameter"] = {
        "Type": "AWS::SSM::Parameter",
        "Properties": {"Name": Ssm.unique_table_name(stage), "Type": "String", "Value": {"Ref": "UniqueTable"}},
    }
    resources["BatchTable"] = {
        "Type": "AWS::DynamoDB::Table",
        "Properties": {
            "AttributeDefinitions": [
                {"AttributeName": batches.KEY, "AttributeType": "S"},
                {"AttributeName": batches.MEMBER, "AttributeType": "S"},
            ],
            "KeySchema": [
                {"AttributeName": batches.KEY, "KeyType": "HASH"},
                {"AttributeName": batches.MEMBER, "KeyType": "RANGE"},
            ],
            "BillingMode": "PAY_PER_REQUEST",
        },
    }
    outputs[Outputs.BATCH_TABLE_NAME] = {"Value": {"Ref": "BatchTable"}}
    resources["BatchTableParameter"] = {
        "Type": "AWS::SSM::Parameter",
        "Properties": {"Name": Ssm.batch_table_name(stage), "Type": "String", "Value": {"Ref": "BatchTable"}},
    }
    outputs[Outputs.ROUTES] = {"Value": json.dumps(routes)}
    outputs[Outputs.REPLAY_FUNCTION_NAME] = {"Value": function_name(stage, "replay")}
    return {"Resources": resources, "Outputs": outputs}


def deploy(
    stage: str = STAGE, tiers: tuple[str, ...] = DEFAULT_TIERS, routes: dict[str, str] | None = None
) -> FakeDeployment:
    """Create the stack in moto (inside ``mock_aws``) and return what it made."""
    routes = dict(ROUTES if routes is None else routes)
    name = stack_name(stage)
    cloudformation = boto3.client("cloudformation")
    cloudformation.create_stack(StackName=name, TemplateBody=json.dumps(template(stage, tiers, routes)))
    outputs = {
        o["OutputKey"]: o["OutputValue"] for o in cloudformation.describe_stacks(StackName=name)["Stacks"][0]["Outputs"]
    }
    return FakeDeployment(
        stage=stage,
        stack_name=name,
        queue_urls={tier: outputs[Outputs.tier(tier, Outputs.QUEUE_URL)] for tier in tiers},
        dlq_urls={tier: outputs[Outputs.tier(tier, Outputs.DLQ_URL)] for tier in tiers},
        routes=routes,
        replay_function_name=function_name(stage, "replay"),
        idempotency_table=outputs[Outputs.IDEMPOTENCY_TABLE_NAME],
        unique_table=outputs[Outputs.UNIQUE_TABLE_NAME],
        batch_table=outputs[Outputs.BATCH_TABLE_NAME],
    )


def received_bodies(queue_url: str) -> list[dict]:
    """Every message now visible on ``queue_url``, as parsed JSON (the queue is left empty)."""
    sqs = boto3.client("sqs")
    bodies = []
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return bodies
        for message in messages:
            bodies.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


class FlakySqs:
    """An SQS client that reports chosen entries (by idempotency key) failed for their first N sends.

    Everything else goes to the real (moto) client, so accepted messages really are on the queue.
    """

    def __init__(self, sqs, failures: dict[str, int], *, code: str = "InternalError", sender_fault: bool = False):
        self.sqs = sqs
        self.remaining = dict(failures)
        self.code = code
        self.sender_fault = sender_fault
        self.calls: list[list[str]] = []

    def send_message_batch(self, QueueUrl, Entries):
        keys = {e["Id"]: json.loads(e["MessageBody"])["idempotency_key"] for e in Entries}
        self.calls.append(list(keys.values()))
        failing = [e for e in Entries if self.remaining.get(keys[e["Id"]], 0) > 0]
        for entry in failing:
            self.remaining[keys[entry["Id"]]] -= 1
        passing = [e for e in Entries if e not in failing]
        response = self.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=passing) if passing else {}
        response.setdefault("Successful", [])
        response.setdefault("Failed", []).extend(
            {"Id": e["Id"], "SenderFault": self.sender_fault, "Code": self.code, "Message": f"injected {self.code}"}
            for e in failing
        )
        return response
