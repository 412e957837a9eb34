"""Triggers in the template: each an EventBridge rule to its routed tier queue, with its DLQ, retries and the
input transformer that builds the envelope; the queue policies admit exactly those rules (hop-walked)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.cdk.conftest import CUSTOM_TRIGGERS
from tests.cdk.hops import EVENTS_PRINCIPAL, walk
from tests.cdk.infra_support import find_queue
from tiered_jobs.contract.triggers import input_template

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth


def _trigger_rules(synth) -> dict[str, tuple[str, dict[str, Any]]]:
    """Trigger name -> (rule logical id, its properties): the rules whose one target carries an input transformer."""
    found = {}
    for logical_id, rule in synth.resources("AWS::Events::Rule").items():
        targets = rule["Properties"].get("Targets", [])
        if len(targets) == 1 and "InputTransformer" in targets[0]:
            found[targets[0]["Id"]] = (logical_id, rule["Properties"])
    return found


def _triggers_dlq(synth) -> str:
    (dlq,) = [k for k in synth.resources("AWS::SQS::Queue") if k.startswith("TriggersDlq")]
    return dlq


def _policy_statements(synth, queue: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in synth.resources("AWS::SQS::QueuePolicy").values()
        if {"Ref": queue} in policy["Properties"]["Queues"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_each_trigger_is_a_rule_to_its_routed_tier_queue_with_its_dlq_retries_and_envelope(custom_synth):
    rules = _trigger_rules(custom_synth)
    assert set(rules) == set(CUSTOM_TRIGGERS)
    dlq = _triggers_dlq(custom_synth)
    expected = {
        # routed as the publisher routes reports.* (the custom stage's reports tier), EventBridge's default retries
        "uploads": ("default", "reports", "$.id", "$.detail.object", 185, 86_400),
        # payments.update_balance is routed to transactional in the custom stage; a partner bus, its own key
        "stripe": ("aws.partner/stripe.com/ed_123/acct", "transactional", "$.detail.id", "$.detail", 10, 3600),
    }
    for name, (bus, tier, key_path, payload_path, attempts, age) in expected.items():
        _, props = rules[name]
        (target,) = props["Targets"]
        assert props["EventBusName"] == bus and props["State"] == "ENABLED"
        assert props["EventPattern"] == CUSTOM_TRIGGERS[name]["pattern"]
        assert target["Arn"] == {"Fn::GetAtt": [find_queue(custom_synth, "qa", tier)[0], "Arn"]}
        assert target["InputTransformer"] == {
            "InputPathsMap": {"key": key_path, "payload": payload_path, "time": "$.time"},
            "InputTemplate": input_template(CUSTOM_TRIGGERS[name]["job_type"]),
        }
        assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [dlq, "Arn"]}}
        assert target["RetryPolicy"] == {"MaximumRetryAttempts": attempts, "MaximumEventAgeInSeconds": age}
    # The DLQ pages when it holds an undeliverable event.
    (alarm,) = [
        a
        for a in custom_synth.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == "tiered-jobs-qa-triggers-undelivered"
    ]
    assert alarm["Properties"]["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}}]


def test_the_queue_policies_admit_exactly_the_rules_that_target_them(custom_synth):
    """EventBridge may send to a tier queue only for that tier's trigger rules (``aws:SourceArn``), and to the
    triggers' DLQ only for the stage's trigger rules: no statement admits events.amazonaws.com otherwise."""
    rules = _trigger_rules(custom_synth)
    admitted: dict[str, set[str]] = {}
    for queue in custom_synth.resources("AWS::SQS::Queue"):
        for statement in _policy_statements(custom_synth, queue):
            if statement.get("Principal") != {"Service": EVENTS_PRINCIPAL}:
                continue
            assert statement["Effect"] == "Allow" and statement["Action"] == "sqs:SendMessage"
            assert statement["Resource"] == {"Fn::GetAtt": [queue, "Arn"]}
            (rule,) = statement["Condition"]["ArnEquals"]["aws:SourceArn"]["Fn::GetAtt"][:1]
            admitted.setdefault(queue, set()).add(rule)
    uploads, stripe = rules["uploads"][0], rules["stripe"][0]
    assert admitted == {
        find_queue(custom_synth, "qa", "reports")[0]: {uploads},
        find_queue(custom_synth, "qa", "transactional")[0]: {stripe},
        _triggers_dlq(custom_synth): {uploads, stripe},
    }


def test_the_hop_walk_follows_each_trigger_to_its_queue_and_dlq_and_catches_another_rules_arn(custom_synth):
    hops, problems = walk(custom_synth.raw)
    assert problems == []
    rules = {logical_id for logical_id, _ in _trigger_rules(custom_synth).values()}
    trigger_hops = [h for h in hops if h.description.split()[1] in rules]
    assert len(trigger_hops) == 2 * len(rules)  # the tier queue and the DLQ
    assert {h.caller.principal for h in trigger_hops} == {EVENTS_PRINCIPAL}
    assert all(h.actions == ("sqs:SendMessage",) for h in trigger_hops)

    # The uploads rule's statement admitting the stripe rule instead: the walk reports the uploads hop.
    raw = copy.deepcopy(custom_synth.raw)
    uploads, stripe = _trigger_rules(custom_synth)["uploads"][0], _trigger_rules(custom_synth)["stripe"][0]
    text = json.dumps(raw).replace(
        json.dumps({"aws:SourceArn": {"Fn::GetAtt": [uploads, "Arn"]}}),
        json.dumps({"aws:SourceArn": {"Fn::GetAtt": [stripe, "Arn"]}}),
    )
    _, broken = walk(json.loads(text))
    assert broken and all(problem.startswith(f"AWS::Events::Rule {uploads} ") for problem in broken)
    assert len(broken) == 2  # its tier queue and the DLQ


def test_a_stage_without_triggers_has_no_trigger_rule_dlq_or_statement(default_synth):
    assert _trigger_rules(default_synth) == {}
    assert not [k for k in default_synth.resources("AWS::SQS::Queue") if k.startswith("Triggers")]
