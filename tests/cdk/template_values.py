"""Concrete values for a synthesized template, as CloudFormation would resolve them in one account.

``Concrete(template).value(node)`` turns a template value's intrinsics into the strings a
deployment in ``ACCOUNT`` / ``REGION`` would hold: queue URLs and ARNs, topic ARNs, alarm ARNs,
parameter ARNs... Physical names come from the resource's name property (``QueueName``,
``AlarmName``...) or, when CloudFormation would generate one, from the logical id. Policy tests
compare these strings with the ARNs AWS evaluates (and moto returns).

Only the lookups are here (what ``Ref`` and ``Fn::GetAtt`` return in that account); the grammar
(``Fn::Join``, ``Fn::Sub``, ``Fn::Select``...) is the emulator's resolver, :mod:`emulator.intrinsics`,
so the tests and local mode read a template by the same rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from emulator.intrinsics import Intrinsics

#: moto's default account and the region the tests use.
ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"

#: The property holding a resource's physical name.
NAME_PROPERTY = {
    "AWS::SQS::Queue": "QueueName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::SSM::Parameter": "Name",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::Scheduler::Schedule": "Name",
    "AWS::S3::Bucket": "BucketName",
    "AWS::Lambda::Alias": "Name",
}
#: ARN of a resource from its physical name (``{p}`` partition, ``{r}`` region, ``{a}`` account, ``{n}`` name).
ARN_FORMAT = {
    "AWS::SQS::Queue": "arn:{p}:sqs:{r}:{a}:{n}",
    "AWS::SNS::Topic": "arn:{p}:sns:{r}:{a}:{n}",
    "AWS::KMS::Key": "arn:{p}:kms:{r}:{a}:key/{n}",
    "AWS::CloudWatch::Alarm": "arn:{p}:cloudwatch:{r}:{a}:alarm:{n}",
    "AWS::Lambda::Function": "arn:{p}:lambda:{r}:{a}:function:{n}",
    "AWS::Lambda::EventSourceMapping": "arn:{p}:lambda:{r}:{a}:event-source-mapping:{n}",
    "AWS::IAM::Role": "arn:{p}:iam::{a}:role/{n}",
    "AWS::IAM::ManagedPolicy": "arn:{p}:iam::{a}:policy/{n}",
    "AWS::SSM::Parameter": "arn:{p}:ssm:{r}:{a}:parameter/{n}",
    "AWS::DynamoDB::Table": "arn:{p}:dynamodb:{r}:{a}:table/{n}",
    "AWS::Logs::LogGroup": "arn:{p}:logs:{r}:{a}:log-group:{n}:*",
    "AWS::Scheduler::Schedule": "arn:{p}:scheduler:{r}:{a}:schedule/default/{n}",
    "AWS::S3::Bucket": "arn:{p}:s3:::{n}",
}
#: What ``Ref`` returns, when it is not the physical name.
REF_FORMAT = {
    "AWS::SQS::Queue": "https://sqs.{r}.amazonaws.com/{a}/{n}",
    "AWS::SNS::Topic": ARN_FORMAT["AWS::SNS::Topic"],
    "AWS::IAM::ManagedPolicy": ARN_FORMAT["AWS::IAM::ManagedPolicy"],
}


class Concrete:
    """One template's intrinsic values, resolved for ``account`` / ``region``."""

    def __init__(
        self, template: Mapping[str, Any], *, account: str = ACCOUNT, region: str = REGION, partition: str = PARTITION
    ):
        self.template = template
        self.account, self.region, self.partition = account, region, partition
        self._pseudo = {
            "AWS::AccountId": account,
            "AWS::Region": region,
            "AWS::Partition": partition,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "stack",
        }
        self._intrinsics = Intrinsics(ref=self.ref, get_att=self.get_att)

    # -- resources ----------------------------------------------------------------------

    @property
    def resources_by_id(self) -> Mapping[str, Mapping[str, Any]]:
        return self.template["Resources"]

    def resources(self, type_: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for logical_id, resource in self.resources_by_id.items():
            if resource["Type"] == type_:
                yield logical_id, resource.get("Properties", {})

    def type_of(self, logical_id: str) -> str:
        return self.resources_by_id[logical_id]["Type"]

    def properties(self, logical_id: str) -> Mapping[str, Any]:
        return self.resources_by_id[logical_id].get("Properties", {})

    def name(self, logical_id: str) -> str:
        prop = NAME_PROPERTY.get(self.type_of(logical_id))
        value = self.properties(logical_id).get(prop) if prop else None
        name = logical_id if value is None else str(self.value(value))
        return name.lstrip("/") if self.type_of(logical_id) == "AWS::SSM::Parameter" else name

    def arn(self, logical_id: str) -> str:
        type_ = self.type_of(logical_id)
        if type_ == "AWS::Lambda::Alias":  # a qualified function ARN: <function ARN>:<alias name>
            function = str(self.value(self.properties(logical_id)["FunctionName"])).split(":")[-1]
            return self._format(ARN_FORMAT["AWS::Lambda::Function"], f"{function}:{self.name(logical_id)}")
        template = ARN_FORMAT.get(type_, "arn:{p}:unknown:{r}:{a}:" + type_ + "/{n}")
        return self._format(template, self.name(logical_id))

    def _format(self, template: str, name: str) -> str:
        return template.format(p=self.partition, r=self.region, a=self.account, n=name)

    # -- intrinsics ---------------------------------------------------------------------

    def ref(self, name: str) -> str:
        if name in self._pseudo:
            return self._pseudo[name]
        if name in self.template.get("Parameters", {}):
            return str(self.template["Parameters"][name].get("Default", name))
        type_ = self.type_of(name)
        if type_ == "AWS::SSM::Parameter":
            return str(self.value(self.properties(name)["Name"]))
        if type_ in REF_FORMAT:
            return self._format(REF_FORMAT[type_], self.name(name))
        if type_ == "AWS::Lambda::Alias":  # Ref of an alias is its ARN
            return self.arn(name)
        return self.name(name)

    def get_att(self, logical_id: str, attribute: str) -> str:
        if attribute in ("Arn", "TopicArn"):
            return self.arn(logical_id)
        if attribute in ("QueueName", "TopicName", "Name"):
            return self.name(logical_id)
        if attribute == "QueueUrl":
            return self.ref(logical_id)
        return f"{logical_id}.{attribute}"

    def value(self, node: Any) -> Any:
        """``node`` with every intrinsic replaced by its concrete value (an unknown ``Fn::*`` raises
        :class:`emulator.intrinsics.UnknownIntrinsic`)."""
        return self._intrinsics.resolve(node)

    def logical_id(self, node: Any) -> str | None:
        """The resource a ``Ref`` / ``Fn::GetAtt`` names (``None`` for anything else, e.g. an ARN string)."""
        if isinstance(node, dict) and len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref" and arg in self.resources_by_id:
                return arg
            if key == "Fn::GetAtt":
                return arg[0] if isinstance(arg, list) else arg.split(".", 1)[0]
        return None
