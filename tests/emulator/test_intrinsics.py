"""The one resolver of CloudFormation intrinsics: its grammar with plain lookups, and what it does with
an intrinsic it does not know (a clear error naming it, never the value passed through)."""

from __future__ import annotations

import pytest

from emulator import template
from emulator.intrinsics import KNOWN, Intrinsics, UnknownIntrinsic
from tests.cdk.template_values import Concrete

LOOKED_UP = {"Queue": "https://q-url", "AWS::Region": "eu-west-3", "Names": "a,b,c"}


def lookups() -> Intrinsics:
    return Intrinsics(
        ref=lambda name: LOOKED_UP[name], get_att=lambda logical_id, attribute: f"{logical_id}|{attribute}"
    )


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ({"Ref": "Queue"}, "https://q-url"),
        ({"Fn::GetAtt": ["Queue", "Arn"]}, "Queue|Arn"),
        ({"Fn::GetAtt": "Db.Endpoint.Address"}, "Db|Endpoint.Address"),  # only the first dot splits
        ({"Fn::Join": ["/", [{"Ref": "AWS::Region"}, "x", 3]]}, "eu-west-3/x/3"),
        ({"Fn::Select": [1, {"Fn::Split": [",", {"Ref": "Names"}]}]}, "b"),
        ({"Fn::Select": ["2", ["a", "b", {"Ref": "Queue"}]]}, "https://q-url"),
        (
            {"Fn::Sub": "${AWS::Region}:${Queue}:${Queue.Arn}:${!Literal}"},
            "eu-west-3:https://q-url:Queue|Arn:${Literal}",
        ),
        ({"Fn::Sub": ["${Mine}-${Queue}", {"Mine": {"Fn::GetAtt": ["T", "Name"]}}]}, "T|Name-https://q-url"),
        ({"Fn::Sub": "no variables"}, "no variables"),
        (
            {"A": [{"Ref": "Queue"}, 1, None], "B": {"C": "plain"}},
            {"A": ["https://q-url", 1, None], "B": {"C": "plain"}},
        ),
        ({"Ref": "Queue", "Other": "x"}, {"Ref": "Queue", "Other": "x"}),  # two keys: a map, not an intrinsic
    ],
)
def test_the_grammar_with_plain_lookups(node, expected):
    assert lookups().resolve(node) == expected


@pytest.mark.parametrize(
    "node",
    [
        {"Fn::If": ["IsProd", "a", "b"]},
        {"Fn::ImportValue": "SharedQueueArn"},
        {"Fn::FindInMap": ["Map", "Key", "Value"]},
        {"Fn::Base64": "text"},
    ],
)
def test_an_unknown_intrinsic_is_refused_by_name(node):
    (name,) = node
    with pytest.raises(UnknownIntrinsic, match=f"{name} is not resolved here") as refused:
        lookups().resolve(node)
    assert all(known in str(refused.value) for known in KNOWN)  # says what it does resolve
    assert isinstance(refused.value, NotImplementedError)


@pytest.mark.parametrize(
    "node",
    [
        {"Fn::Join": ["/", ["a", {"Fn::If": ["C", "x", "y"]}]]},
        {"Statement": [{"Resource": {"Fn::If": ["C", "x", "y"]}}]},
        {"Fn::Sub": ["${A}", {"A": {"Fn::If": ["C", "x", "y"]}}]},
        {"Fn::Select": [0, {"Fn::If": ["C", ["x"], ["y"]]}]},
    ],
)
def test_an_unknown_intrinsic_deep_inside_a_value_is_refused_too(node):
    with pytest.raises(UnknownIntrinsic, match="Fn::If"):
        lookups().resolve(node)


@pytest.mark.parametrize(
    ("node", "named"),
    [
        ({"Fn::Join": "a,b"}, "Fn::Join takes a list of two"),
        ({"Fn::Select": [0]}, "Fn::Select takes a list of two"),
        ({"Fn::Split": [",", "a", "b"]}, "Fn::Split takes a list of two"),
        ({"Fn::Sub": ["${A}"]}, "Fn::Sub takes a list of two"),
        ({"Fn::GetAtt": "NoAttribute"}, "Fn::GetAtt takes"),
        ({"Fn::GetAtt": ["Queue", "Arn", "Extra"]}, "Fn::GetAtt takes"),
    ],
)
def test_a_known_intrinsic_in_a_shape_cloudformation_refuses_is_refused(node, named):
    with pytest.raises(UnknownIntrinsic, match=named):
        lookups().resolve(node)


def test_what_the_lookups_do_not_know_is_theirs_to_refuse():
    with pytest.raises(KeyError, match="Nope"):
        lookups().resolve({"Fn::Sub": "${Nope}"})


def test_every_user_of_the_resolver_refuses_an_unknown_intrinsic():
    """The emulator's deployed-stack resolver and the tests' concrete values share the refusal: neither
    leaves ``{"Fn::If": ...}`` in a value (the tests' one used to pass it through unresolved)."""
    deployed = template.Resolver(
        physical_ids={"Queue": "https://q-url"},
        types={"Queue": "AWS::SQS::Queue"},
        parameters={},
        pseudo={},
        attribute=lambda kind, physical_id, name: "",
    )
    concrete = Concrete({"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "q"}}}})
    node = {"Fn::Join": ["", [{"Ref": "Queue"}, {"Fn::If": ["C", "x", "y"]}]]}
    with pytest.raises(UnknownIntrinsic, match="Fn::If"):
        deployed.resolve(node)
    with pytest.raises(UnknownIntrinsic, match="Fn::If"):
        concrete.value(node)
    assert concrete.value({"Fn::Sub": "${Queue.Arn}|${!Literal}"}) == "arn:aws:sqs:us-east-1:123456789012:q|${Literal}"
