"""``encryption``: the stage's own KMS key on every queue, table, bucket, schedule, log group and the alarm topic,
a key policy naming exactly the services that use it as themselves, and every hop allowed by it (moto evaluates
no key policy: the hop walker does)."""

from __future__ import annotations

import copy
import fnmatch

import pytest

from tests.cdk.conftest import CUSTOM_TRIGGERS
from tests.cdk.hops import Policies, Request, evaluate, walk
from tests.cdk.infra_support import Synth, synthesize_once
from tests.cdk.template_values import Concrete
from tiered_jobs.cdk.encryption import ENCRYPTED_TYPES, LOGS_CONTEXT_KEY, service_statements
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.manifest import OUTPUT_KEY, StageManifest, parameter_name
from tiered_jobs.contract.names import STAGE_TAG, Schedules

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
OTHER_ACCOUNT = "210987654321"
ORGANIZATION = "o-a1b2c3d4e5"


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Synth:
    """A stage that makes its key, with every resource kind that can take it: subscriptions and their DLQ, a
    periodic schedule, triggers and their DLQ, a large-payload tier (the second bucket); and a publisher in
    another account of the organization."""
    return synthesize_once(
        tmp_path_factory,
        "stage-key",
        stage="sec",
        encryption={"create": True},
        alarm_email="oncall@example.com",
        tiers={"critical": {"large_payloads": True}, "transactional": {}, "bulk": {}},
        routes={"*": "bulk", "reports.*": "critical", "payments.*": "transactional"},
        schedules={"nightly": {"expression": "cron(0 2 * * ? *)", "job_type": "reports.nightly", "payload": {}}},
        triggers=CUSTOM_TRIGGERS,
        publishers={"accounts": [OTHER_ACCOUNT], "organization_id": ORGANIZATION},
    )


def _key(synth: Synth) -> str:
    (key,) = synth.resources("AWS::KMS::Key")
    return key


def _uses(value, key: str) -> bool:
    return value == {"Fn::GetAtt": [key, "Arn"]}


def test_the_setting_takes_a_key_arn_or_create_and_nothing_else():
    assert AppSettings.from_context({"encryption": {"kms_key_arn": KEY_ARN}}).encryption.kms_key_arn == KEY_ARN
    assert AppSettings.from_context({"encryption": {"create": True}}).encryption.create is True
    assert AppSettings.from_context({}).encryption is None
    for raw, message in (
        ({"create": True, "kms_key_arn": KEY_ARN}, "exactly one of kms_key_arn and create"),
        ({}, "exactly one of kms_key_arn and create"),
        ({"create": "yes"}, "create 'yes' must be true or false"),
        ({"kms_key_arn": "arn:aws:kms:eu-west-1:123456789012:alias/jobs"}, "is not a KMS key ARN"),
        ({"key": KEY_ARN}, "unknown key"),
        ("create", "must be an object"),
    ):
        with pytest.raises(SettingsError, match=message):
            AppSettings.from_context({"encryption": raw})


def test_every_resource_that_stores_data_uses_the_stage_key(synth):
    key = _key(synth)
    assert synth.raw["Resources"][key]["Properties"]["EnableKeyRotation"] is True
    assert synth.raw["Resources"][key]["DeletionPolicy"] == "Retain"
    # retained, so `tiered-jobs teardown` must find it: by the stage tag, as the stage's other leftovers
    assert {"Key": STAGE_TAG, "Value": "sec"} in synth.raw["Resources"][key]["Properties"]["Tags"]
    seen = {type_: 0 for type_ in ENCRYPTED_TYPES}
    for type_ in ENCRYPTED_TYPES:
        for logical_id, resource in synth.resources(type_).items():
            props = resource["Properties"]
            if type_ in ("AWS::SQS::Queue", "AWS::SNS::Topic"):
                assert _uses(props.get("KmsMasterKeyId"), key), logical_id
                assert "SqsManagedSseEnabled" not in props, logical_id
            elif type_ == "AWS::DynamoDB::Table":
                sse = props["SSESpecification"]
                assert sse["SSEType"] == "KMS" and _uses(sse["KMSMasterKeyId"], key), logical_id
            elif type_ == "AWS::S3::Bucket":
                (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
                default = rule["ServerSideEncryptionByDefault"]
                if "LoggingConfiguration" not in props and "AccessLogs" in logical_id:
                    # S3 delivers server access logs only to an SSE-S3 bucket: the one bucket left on AES256.
                    assert default == {"SSEAlgorithm": "AES256"}, logical_id
                    continue
                assert default["SSEAlgorithm"] == "aws:kms" and _uses(default["KMSMasterKeyID"], key), logical_id
                assert rule["BucketKeyEnabled"] is True
            elif type_ == "AWS::Scheduler::Schedule":
                assert _uses(props.get("KmsKeyArn"), key), logical_id
            else:
                assert _uses(props.get("KmsKeyId"), key), logical_id
            seen[type_] += 1
    # every kind is there: 3 tiers' queues and DLQs, the schedules', triggers' and subscriptions' DLQs; 4+ tables;
    # the archive and the large bodies; the periodic schedule; every function's log group; the alarm topic
    assert seen["AWS::SQS::Queue"] == 3 * 2 + 3
    assert seen["AWS::DynamoDB::Table"] >= 4
    assert seen["AWS::S3::Bucket"] == 2
    assert seen["AWS::Scheduler::Schedule"] == 1
    assert seen["AWS::Logs::LogGroup"] == len(synth.resources("AWS::Lambda::Function"))
    assert seen["AWS::SNS::Topic"] == 1


def test_a_stage_without_subscriptions_or_triggers_names_only_cloudwatch_and_its_logs():
    """SNS and EventBridge are in the key policy only when the stage has what they write to."""
    bare = service_statements(AppSettings.from_context({"encryption": {"create": True}}))
    assert [s.sid for s in bare] == ["AllowCloudWatchAlarmsToPublish", "AllowCloudWatchLogsForThisAccountsLogGroups"]
    paged = service_statements(AppSettings.from_context({"encryption": {"create": True}, "alarm_email": "a@b.io"}))
    assert [s.sid for s in paged][2:] == ["AllowSnsToKeepUndeliveredPages"]


def test_the_key_policy_names_exactly_the_services_that_use_the_key_as_themselves(synth):
    t = Concrete(synth.raw)
    statements = t.value(synth.raw["Resources"][_key(synth)]["Properties"]["KeyPolicy"])["Statement"]
    services = {s["Principal"]["Service"]: s for s in statements if "Service" in s.get("Principal", {})}
    assert set(services) == {
        "cloudwatch.amazonaws.com",
        f"logs.{t.region}.amazonaws.com",
        "sns.amazonaws.com",
        "events.amazonaws.com",
    }
    # CloudWatch Logs only for log groups of this account and region, on the encryption context it always gives
    logs = services[f"logs.{t.region}.amazonaws.com"]["Condition"]["ArnLike"][LOGS_CONTEXT_KEY]
    for logical_id in synth.resources("AWS::Logs::LogGroup"):
        group = f"arn:{t.partition}:logs:{t.region}:{t.account}:log-group:/aws/lambda/{logical_id}"
        assert fnmatch.fnmatchcase(group, logs)
    assert not fnmatch.fnmatchcase(f"arn:{t.partition}:logs:{t.region}:999999999999:log-group:x", logs)
    # the others for this account's resources only
    for principal in ("sns.amazonaws.com", "events.amazonaws.com"):
        assert services[principal]["Condition"] == {"StringEquals": {"aws:SourceAccount": t.account}}


def test_every_hop_is_allowed_by_the_key_policy_and_a_missing_service_is_caught(synth):
    hops, problems = walk(synth.raw)
    assert problems == []
    key = _key(synth)
    t = Concrete(synth.raw)
    encrypted = [
        hop
        for hop in hops
        if isinstance(hop.target, str)
        and _uses(synth.raw["Resources"].get(hop.target, {}).get("Properties", {}).get("KmsMasterKeyId"), key)
    ]
    callers = {type(hop.caller).__name__ + ":" + getattr(hop.caller, "principal", "role") for hop in encrypted}
    # alarms -> topic, SNS -> subscriptions' DLQ, rules -> queues, and roles (consumers, replay, schedules)
    assert {
        "ServiceCaller:cloudwatch.amazonaws.com",
        "ServiceCaller:sns.amazonaws.com",
        "ServiceCaller:events.amazonaws.com",
        "RoleCaller:role",
    } <= callers
    for principal in ("sns.amazonaws.com", "events.amazonaws.com", "cloudwatch.amazonaws.com"):
        broken = copy.deepcopy(synth.raw)
        policy = broken["Resources"][key]["Properties"]["KeyPolicy"]
        policy["Statement"] = [s for s in policy["Statement"] if s.get("Principal", {}).get("Service") != principal]
        _, problems = walk(broken)
        assert any(f"the key policy of {key} does not allow {principal}" in p for p in problems), principal
    assert t.account


def test_the_publisher_policy_may_use_the_stage_key_and_no_other(synth):
    (policy,) = synth.resources("AWS::IAM::ManagedPolicy").values()
    statements = Concrete(synth.raw).value(policy["Properties"]["PolicyDocument"])["Statement"]
    kms = [s for s in statements if any(str(a).startswith("kms:") for a in _list(s["Action"]))]
    (statement,) = kms
    assert sorted(_list(statement["Action"])) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert statement["Resource"] == Concrete(synth.raw).value({"Fn::GetAtt": [_key(synth), "Arn"]})


def _list(value) -> list:
    return value if isinstance(value, list) else [value]


#: Where each encrypted type names its key.
KEY_PROPERTIES = {
    "AWS::SQS::Queue": "KmsMasterKeyId",
    "AWS::DynamoDB::Table": "SSESpecification",
    "AWS::S3::Bucket": "BucketEncryption",
    "AWS::Scheduler::Schedule": "KmsKeyArn",
    "AWS::Logs::LogGroup": "KmsKeyId",
    "AWS::SNS::Topic": "KmsMasterKeyId",
}


def test_a_key_change_replaces_nothing_so_the_replacement_guard_has_nothing_to_refuse():
    """CloudFormation's resource schemas (as cfn-lint ships them) list the create-only properties, whose change
    replaces the resource: no key property is one, and none is a property the replacement guard watches."""
    import json
    from pathlib import Path

    import cfnlint

    from tiered_jobs.cdk.lock import REPLACEMENT_PROPERTIES

    schemas = Path(cfnlint.__file__).parent / "data" / "schemas"
    providers = json.loads((schemas / "providers" / "us-east-1.json").read_text())
    assert set(KEY_PROPERTIES) == set(ENCRYPTED_TYPES)
    for type_, key_property in KEY_PROPERTIES.items():
        schema = providers[type_]
        if isinstance(schema, str):
            schema = json.loads((schemas / "resources" / f"{schema.removesuffix('.json')}.json").read_text())
        assert key_property in schema["properties"], type_
        assert f"/properties/{key_property}" not in schema.get("createOnlyProperties", []), type_
        assert key_property not in REPLACEMENT_PROPERTIES.get(type_, ()), type_


# -- publishers in other accounts ------------------------------------------------------------------------


def _foreign_request(t: Concrete, action: str, resource: str, account: str, organization: str) -> Request:
    role = f"arn:{t.partition}:iam::{account}:role/orders-api"
    context = {
        "aws:securetransport": "true",
        "aws:principalarn": role,
        "aws:principalaccount": account,
        "aws:principalorgid": organization,
        "kms:viaservice": f"sqs.{t.region}.amazonaws.com",
    }
    return Request(action, resource, role, context)


def _foreign_verdict(t: Concrete, statements, action: str, resource: str, account: str, organization: str) -> str:
    """How a resource policy answers another account's role: ``account`` when it names that account (which then
    delegates to the role's own IAM policy, as AWS does across accounts), ``denied``, or ``refused``."""
    verdict = evaluate(
        statements,
        _foreign_request(t, action, resource, account, organization),
        f"arn:{t.partition}:iam::{account}:root",
    )
    if verdict.denied_by:
        return "denied"
    return verdict.allowed_by or "refused"


def test_a_publisher_in_another_account_of_the_organization_may_send_to_every_tier_queue_and_use_the_key(synth):
    t = Concrete(synth.raw)
    policies = Policies(t)
    key = _key(synth)
    tiers = {h.target for h in walk(synth.raw)[0] if h.description.startswith("AWS::Lambda::EventSourceMapping")}
    assert len(tiers) == 3
    for queue in tiers:
        statements = policies.resource_policy(queue)
        for account, organization, expected in (
            (OTHER_ACCOUNT, ORGANIZATION, "account"),
            (OTHER_ACCOUNT, "o-zzzzzzzzzz", "refused"),  # the account left the organization
            ("999999999999", ORGANIZATION, "refused"),  # an account not listed
        ):
            assert _foreign_verdict(t, statements, "sqs:SendMessage", t.arn(queue), account, organization) == expected
            for action in ("kms:GenerateDataKey", "kms:Decrypt"):
                verdict = _foreign_verdict(t, policies.key_policy(key), action, t.arn(key), account, organization)
                assert verdict == expected, (action, account, organization)
        # never a DLQ
        dlq = t.logical_id(t.properties(queue)["RedrivePolicy"]["deadLetterTargetArn"])
        verdict = _foreign_verdict(
            t, policies.resource_policy(dlq), "sqs:SendMessage", t.arn(dlq), OTHER_ACCOUNT, ORGANIZATION
        )
        assert verdict == "refused"


def test_the_stage_manifest_is_an_output_and_a_parameter_another_account_reads(synth):
    t = Concrete(synth.raw)
    text = t.value(synth.raw["Outputs"][OUTPUT_KEY]["Value"])
    manifest = StageManifest.from_json(text, "output")
    assert manifest.stage == "sec" and set(manifest.queues) == {"critical", "transactional", "bulk"}
    assert manifest.kms_key_arn == t.arn(_key(synth))
    assert manifest.routes["reports.*"] == "critical"
    (parameter,) = [
        p
        for p in synth.resources("AWS::SSM::Parameter").values()
        if p["Properties"].get("Name") == parameter_name("sec")
    ]
    assert t.value(parameter["Properties"]["Value"]) == text


def test_the_publishers_setting_is_checked_early():
    assert AppSettings.from_context({}).publishers is None
    for raw, message in (
        ({"accounts": []}, "non-empty list"),
        ({"accounts": [210987654321]}, "12-digit"),
        ({"accounts": [OTHER_ACCOUNT], "organization_id": "a1b2"}, "not an AWS Organizations ID"),
        ({"accounts": [OTHER_ACCOUNT], "org": ORGANIZATION}, "unknown key"),
    ):
        with pytest.raises(SettingsError, match=message):
            AppSettings.from_context({"publishers": raw})


def test_a_teams_own_key_is_used_by_arn_and_the_stack_makes_no_key(tmp_path_factory):
    """Its policy is the team's (docs/deploy.md); the stack puts its ARN everywhere and grants it to its roles."""
    team = synthesize_once(tmp_path_factory, "team-key", stage="teamkey", encryption={"kms_key_arn": KEY_ARN})
    assert team.resources("AWS::KMS::Key") == {}
    for logical_id, queue in team.resources("AWS::SQS::Queue").items():
        assert queue["Properties"]["KmsMasterKeyId"] == KEY_ARN, logical_id
    for logical_id, table in team.resources("AWS::DynamoDB::Table").items():
        assert table["Properties"]["SSESpecification"]["KMSMasterKeyId"] == KEY_ARN, logical_id
    (topic,) = team.resources("AWS::SNS::Topic").values()
    assert topic["Properties"]["KmsMasterKeyId"] == KEY_ARN
    (policy,) = team.resources("AWS::IAM::ManagedPolicy").values()
    (statement,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s.get("Sid") == "UseTheStageKey"]
    assert statement["Resource"] == KEY_ARN


def test_publishers_find_the_key_for_their_one_time_schedules_and_may_read_it(synth):
    t = Concrete(synth.raw)
    name = Schedules.ssm("sec", Schedules.SSM_KMS_KEY_ARN)
    (parameter,) = [p for p in synth.resources("AWS::SSM::Parameter").values() if p["Properties"]["Name"] == name]
    assert t.value(parameter["Properties"]["Value"]) == t.arn(_key(synth))
    assert t.value(synth.raw["Outputs"][Schedules.OUTPUT_KMS_KEY_ARN]["Value"]) == t.arn(_key(synth))
    (policy,) = synth.resources("AWS::IAM::ManagedPolicy").values()
    statements = t.value(policy["Properties"]["PolicyDocument"])["Statement"]
    (read,) = [s for s in statements if s.get("Sid") == "FindTheQueuesAndTheScheduleGroup"]
    assert f"arn:{t.partition}:ssm:{t.region}:{t.account}:parameter{name}" in read["Resource"]
