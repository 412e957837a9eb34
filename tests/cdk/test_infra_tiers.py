"""Per tier: queues, redrive, encryption, SSL, event source mapping, consumer settings and IAM scope."""

from __future__ import annotations

import json

import pytest

from functions.jobs.payments import TABLE as PAYMENTS_TABLE
from tests.cdk.infra_support import (
    find_consumer,
    find_queue,
    policy_statements,
    referenced_ids,
)
from tiered_jobs.cdk.settings import AppSettings
from tiered_jobs.contract.names import (
    DEFAULT_TIERS,
    SQS_MAX_MESSAGE_BYTES,
    Env,
    Handlers,
    Metrics,
    queue_name,
)

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

SETTINGS = AppSettings.from_context(None)
DAY = 86_400


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_main_queue_redrives_to_its_own_dlq_after_max_attempts(default_synth, tier):
    settings = SETTINGS.tier(tier)
    dlq_key, dlq = find_queue(default_synth, "dev", tier, dlq=True)
    _, main = find_queue(default_synth, "dev", tier)
    assert main["Properties"]["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_key, "Arn"]},
        "maxReceiveCount": settings.max_attempts,
    }
    assert main["Properties"]["MessageRetentionPeriod"] == 4 * DAY
    assert dlq["Properties"]["MessageRetentionPeriod"] == 14 * DAY
    assert main["Properties"]["VisibilityTimeout"] == 6 * settings.timeout_seconds + settings.batching_window_seconds


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_dlq_admits_only_its_own_main_queue(default_synth, tier):
    _, dlq = find_queue(default_synth, "dev", tier, dlq=True)
    policy = dlq["Properties"]["RedriveAllowPolicy"]
    assert policy["redrivePermission"] == "byQueue"
    (source,) = policy["sourceQueueArns"]
    assert source == {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":sqs:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                f":{queue_name('dev', tier)}",
            ],
        ]
    }


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
@pytest.mark.parametrize("dlq", [False, True], ids=["main", "dlq"])
def test_queues_are_encrypted_ssl_only_and_retained(default_synth, tier, dlq):
    key, queue = find_queue(default_synth, "dev", tier, dlq=dlq)
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    assert queue["UpdateReplacePolicy"] == "Retain" and queue["DeletionPolicy"] == "Retain"
    policies = [
        p
        for p in default_synth.resources("AWS::SQS::QueuePolicy").values()
        if {"Ref": key} in p["Properties"]["Queues"]
    ]
    assert len(policies) == 1
    assert {
        "Action": "sqs:*",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Resource": {"Fn::GetAtt": [key, "Arn"]},
    } in policies[0]["Properties"]["PolicyDocument"]["Statement"]


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_every_queue_sets_the_largest_message_size_explicitly(request, synth_name):
    """A retained queue created while SQS's default was 256 KiB keeps it unless the template says 1 MiB."""
    synth = request.getfixturevalue(synth_name)
    queues = synth.resources("AWS::SQS::Queue")
    assert len(queues) >= 2 * len(DEFAULT_TIERS)
    for key, queue in queues.items():
        assert queue["Properties"].get("MaximumMessageSize") == SQS_MAX_MESSAGE_BYTES == 1_048_576, key


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_event_source_mapping_uses_tier_batching_and_reports_item_failures(default_synth, tier):
    settings = SETTINGS.tier(tier)
    consumer_key, _ = find_consumer(default_synth, "dev", tier)
    queue_key, _ = find_queue(default_synth, "dev", tier)
    expected = {
        "EventSourceArn": {"Fn::GetAtt": [queue_key, "Arn"]},
        "FunctionName": {"Ref": consumer_key},
        "BatchSize": settings.batch_size,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "ScalingConfig": {"MaximumConcurrency": settings.max_concurrency},
    }
    if settings.batching_window_seconds:
        expected["MaximumBatchingWindowInSeconds"] = settings.batching_window_seconds
    default_synth.template.has_resource_properties("AWS::Lambda::EventSourceMapping", expected)


def test_tier_presets_differ_where_it_matters():
    critical, transactional, bulk = (SETTINGS.tier(t) for t in DEFAULT_TIERS)
    assert (critical.batch_size, critical.dlq_alarm_threshold, critical.memory_mb) == (5, 0, 512)
    assert critical.max_concurrency > transactional.max_concurrency > bulk.max_concurrency
    assert (bulk.batching_window_seconds, bulk.oldest_message_age_alarm_seconds) == (5, 3600)
    assert transactional.dlq_alarm_threshold == 10


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_consumer_function_settings_and_environment(default_synth, tier):
    settings = SETTINGS.tier(tier)
    _, consumer = find_consumer(default_synth, "dev", tier)
    props = consumer["Properties"]
    assert props["Handler"] == Handlers.CONSUMER
    assert props["Runtime"] == "python3.13"
    assert props["Architectures"] == ["arm64"]
    assert props["Timeout"] == settings.timeout_seconds
    assert props["MemorySize"] == settings.memory_mb
    assert props["TracingConfig"] == {"Mode": "Active"}
    env = props["Environment"]["Variables"]
    assert {
        k: env[k]
        for k in (
            Env.STAGE,
            Env.TIER,
            Env.MAX_ATTEMPTS,
            Env.RETRY_SCHEDULE,
            Env.RETRY_JITTER,
            Env.IDEMPOTENCY_TTL_SECONDS,
            Env.POWERTOOLS_SERVICE_NAME,
            Env.POWERTOOLS_METRICS_NAMESPACE,
            Env.POWERTOOLS_LOG_LEVEL,
        )
    } == {
        Env.STAGE: "dev",
        Env.TIER: tier,
        Env.MAX_ATTEMPTS: "5",
        Env.RETRY_SCHEDULE: "5,30,120,600",
        Env.RETRY_JITTER: "0.2",
        Env.IDEMPOTENCY_TTL_SECONDS: str((4 + 14) * 86_400),
        Env.POWERTOOLS_SERVICE_NAME: Metrics.SERVICE,
        Env.POWERTOOLS_METRICS_NAMESPACE: Metrics.NAMESPACE,
        Env.POWERTOOLS_LOG_LEVEL: "INFO",
    }
    queue_key, _ = find_queue(default_synth, "dev", tier)
    dlq_key, _ = find_queue(default_synth, "dev", tier, dlq=True)
    assert env[Env.QUEUE_URL] == {"Ref": queue_key}
    assert env[Env.DLQ_URL] == {"Ref": dlq_key}
    assert (Env.resource_var(PAYMENTS_TABLE) in env) == (tier == "critical")  # payments.* -> critical


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_consumer_log_group_has_retention_and_no_managed_policy(default_synth, tier):
    key, consumer = find_consumer(default_synth, "dev", tier)
    log_group_key = consumer["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    assert consumer["Properties"]["LoggingConfig"]["LogFormat"] == "JSON"
    log_group = default_synth.raw["Resources"][log_group_key]
    assert log_group["Properties"]["RetentionInDays"] == 30
    role = default_synth.raw["Resources"][consumer["Properties"]["Role"]["Fn::GetAtt"][0]]
    assert "ManagedPolicyArns" not in role["Properties"]
    writes = [s for s in policy_statements(default_synth, key) if "logs:PutLogEvents" in s["Action"]]
    assert writes == [
        {
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [log_group_key, "Arn"]},
        }
    ]


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_consumer_consumes_only_its_own_queues_and_sends_only_to_tier_queues(default_synth, tier):
    key, _ = find_consumer(default_synth, "dev", tier)
    statements = policy_statements(default_synth, key)
    main_key, dlq_key = find_queue(default_synth, "dev", tier)[0], find_queue(default_synth, "dev", tier, dlq=True)[0]
    all_queues = set(default_synth.resources("AWS::SQS::Queue"))
    other_mains = {find_queue(default_synth, "dev", t)[0] for t in DEFAULT_TIERS if t != tier}
    by_resource: dict[str, set[str]] = {}
    for s in statements:
        for ref in referenced_ids(s["Resource"]) & all_queues:
            actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
            by_resource.setdefault(ref, set()).update(actions)
    # Its own queue and DLQ, and the other tiers' queues: a batch's callback or a chain's next link is
    # routed like any job, to whichever tier its type names. Never another tier's DLQ.
    assert set(by_resource) == {main_key, dlq_key} | other_mains
    # Consume the main queue and send it the copies of held or deferred jobs; only send to the DLQ;
    # only send to the other tiers' queues; nothing wider than sqs actions on them.
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"} <= by_resource[main_key]
    assert "sqs:SendMessage" in by_resource[main_key]
    assert "sqs:SendMessage" in by_resource[dlq_key]
    assert "sqs:ReceiveMessage" not in by_resource[dlq_key]
    for other in other_mains:
        assert by_resource[other] == {"sqs:SendMessage"}, other
    assert not any(
        a == "*" or a.endswith(":*")
        for s in statements
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    )


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_only_routed_tiers_reach_the_payments_table(default_synth, tier):
    key, _ = find_consumer(default_synth, "dev", tier)
    tables = default_synth.resources("AWS::DynamoDB::Table")
    payments = next(k for k, r in tables.items() if r["Properties"]["KeySchema"][0]["AttributeName"] == "account_id")
    idempotency = next(k for k, r in tables.items() if r["Properties"]["KeySchema"][0]["AttributeName"] == "id")
    referenced = set().union(*(referenced_ids(s["Resource"]) for s in policy_statements(default_synth, key)))
    assert idempotency in referenced
    assert (payments in referenced) == (tier == "critical")


def test_metrics_need_no_put_metric_data(default_synth):
    """Consumers publish metrics as EMF log lines: no cloudwatch:PutMetricData (and no `*` action) anywhere."""
    text = json.dumps([p["Properties"] for p in default_synth.resources("AWS::IAM::Policy").values()])
    assert "cloudwatch:PutMetricData" not in text
    assert '"*"' not in text.replace('"Resource": "*"', "")


def test_powertools_layer_comes_from_the_public_ssm_parameter(default_synth):
    parameters = default_synth.raw["Parameters"]
    (name,) = [k for k, p in parameters.items() if p["Default"].startswith("/aws/service/powertools/")]
    assert parameters[name] == {
        "Type": "AWS::SSM::Parameter::Value<String>",
        "Default": "/aws/service/powertools/python/arm64/python3.13/3.37.0",
    }
    for function in default_synth.resources("AWS::Lambda::Function").values():
        assert function["Properties"]["Layers"] == [{"Ref": name}]


def test_x86_and_latest_select_the_matching_layer(custom_synth):
    defaults = [p["Default"] for p in custom_synth.raw["Parameters"].values()]
    assert "/aws/service/powertools/python/x86_64/python3.13/latest" in defaults
    for function in custom_synth.resources("AWS::Lambda::Function").values():
        assert function["Properties"]["Architectures"] == ["x86_64"]


def test_added_tier_gets_generic_defaults_and_its_overrides(custom_synth):
    _, consumer = find_consumer(custom_synth, "qa", "reports")
    assert consumer["Properties"]["Timeout"] == 120
    _, queue = find_queue(custom_synth, "qa", "reports")
    assert queue["Properties"]["VisibilityTimeout"] == 720
    # Its mapping invokes the consumer's alias: the tier deploys by canary (test_infra_deployment.py).
    custom_synth.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": {"Fn::GetAtt": [find_queue(custom_synth, "qa", "reports")[0], "Arn"]},
            "BatchSize": 10,
            "ScalingConfig": {"MaximumConcurrency": 2},
        },
    )


def test_the_payments_table_follows_the_route_of_update_balance(custom_synth):
    """The custom routes send ``payments.update_balance`` (exact match) to transactional, not critical."""
    env = {
        t: find_consumer(custom_synth, "qa", t)[1]["Properties"]["Environment"]["Variables"]
        for t in ("critical", "transactional")
    }
    assert (
        Env.resource_var(PAYMENTS_TABLE) in env["transactional"]
        and Env.resource_var(PAYMENTS_TABLE) not in env["critical"]
    )


def test_disposable_stage_destroys_queues_tables_and_logs(custom_synth):
    for type_ in ("AWS::SQS::Queue", "AWS::DynamoDB::Table", "AWS::Logs::LogGroup"):
        for key, resource in custom_synth.resources(type_).items():
            assert resource.get("DeletionPolicy") == "Delete", key


def test_default_stage_retains_data(default_synth):
    for type_ in ("AWS::SQS::Queue", "AWS::DynamoDB::Table", "AWS::Logs::LogGroup", "AWS::KMS::Key"):
        for key, resource in default_synth.resources(type_).items():
            assert resource["DeletionPolicy"] == "Retain", key


def test_template_has_no_custom_resources(default_synth, custom_synth):
    for synth in (default_synth, custom_synth):
        types = {r["Type"] for r in synth.raw["Resources"].values()}
        assert not {t for t in types if t.startswith("Custom::") or t == "AWS::CloudFormation::CustomResource"}
        assert (
            len(synth.resources("AWS::Lambda::Function")) == len(synth.resources("AWS::Lambda::EventSourceMapping")) + 1
        )


def test_reserved_concurrency_is_set_only_when_configured(default_synth):
    for function in default_synth.resources("AWS::Lambda::Function").values():
        assert "ReservedConcurrentExecutions" not in function["Properties"]
