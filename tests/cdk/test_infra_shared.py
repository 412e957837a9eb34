"""Alarms, alarm topic, tables, replay, console events, discovery (outputs + SSM), cdk-nag and the asset."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match

from infra.app import build_app, load_cdk_context
from tests.cdk.infra_support import (
    EXAMPLE_ROUTES,
    find_consumer,
    find_queue,
    logical_id,
    policy_statements,
    referenced_ids,
    synthesize,
)
from tiered_jobs.cdk.dashboard import dashboard_name
from tiered_jobs.cdk.packaging import RUNTIME_PARTS
from tiered_jobs.cdk.replay import (
    CONSOLE_EVENTS_REGISTRY,
    MESSAGE_MOVE_ACTIONS,
    console_schema_name,
)
from tiered_jobs.cdk.settings import AppSettings
from tiered_jobs.contract.names import (
    DEFAULT_TIERS,
    TEMPLATE_METADATA_KEY,
    Alarms,
    Env,
    Handlers,
    Metrics,
    Outputs,
    Ssm,
    function_name,
    queue_name,
)
from tiered_jobs.contract.replay_events import console_events

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

SETTINGS = AppSettings.from_context(None)


def _alarm(synth, stage: str, tier: str, kind: str) -> dict:
    key = logical_id(synth, "AWS::CloudWatch::Alarm", AlarmName=Alarms.name(stage, tier, kind))
    return synth.raw["Resources"][key]["Properties"]


def _topic_key(synth) -> str:
    (key,) = synth.resources("AWS::SNS::Topic")
    return key


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
@pytest.mark.parametrize("kind", Alarms.KINDS)
def test_every_alarm_notifies_on_alarm_and_ok_and_ignores_missing_data(default_synth, tier, kind):
    alarm = _alarm(default_synth, "dev", tier, kind)
    topic = {"Ref": _topic_key(default_synth)}
    assert alarm["AlarmActions"] == [topic] and alarm["OKActions"] == [topic]
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"


def _queries(alarm: dict) -> tuple[dict, dict[str, dict]]:
    """The returned query of a metric-math alarm, and every query by id."""
    (returned,) = [q for q in alarm["Metrics"] if q.get("ReturnData", True)]
    return returned, {q["Id"]: q for q in alarm["Metrics"]}


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_queue_alarms_watch_the_right_queue_with_the_tier_threshold(default_synth, tier):
    settings = SETTINGS.tier(tier)
    age = _alarm(default_synth, "dev", tier, Alarms.OLDEST_MESSAGE_AGE)
    assert age["MetricName"] == "ApproximateAgeOfOldestMessage"
    assert age["Dimensions"][0]["Value"] == {"Fn::GetAtt": [find_queue(default_synth, "dev", tier)[0], "QueueName"]}
    assert age["Threshold"] == settings.oldest_message_age_alarm_seconds


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_the_job_age_alarm_reads_the_consumers_job_age_with_the_tier_threshold(default_synth, tier):
    """Held and deferred jobs are new messages (SQS's age restarts): the consumer's ``JobAge`` does not."""
    age = _alarm(default_synth, "dev", tier, Alarms.JOB_AGE)
    assert (age["Namespace"], age["MetricName"], age["Statistic"], age["Period"]) == (
        Metrics.NAMESPACE,
        Metrics.JOB_AGE,
        "Maximum",
        60,
    )
    assert {d["Name"]: d["Value"] for d in age["Dimensions"]} == {
        Metrics.DIM_SERVICE: Metrics.SERVICE,
        Metrics.DIM_STAGE: "dev",
        Metrics.DIM_TIER: tier,
    }
    assert age["Threshold"] == SETTINGS.tier(tier).oldest_message_age_alarm_seconds


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_dlq_alarm_counts_letters_held_in_flight(default_synth, tier):
    """Visible + not visible: a filtered replay holding non-matching letters must not turn the alarm OK."""
    dlq = _alarm(default_synth, "dev", tier, Alarms.DLQ_DEPTH)
    returned, queries = _queries(dlq)
    assert returned["Expression"] == "visible + held"
    queue = {
        "Name": "QueueName",
        "Value": {"Fn::GetAtt": [find_queue(default_synth, "dev", tier, dlq=True)[0], "QueueName"]},
    }
    for query_id, metric_name in (
        ("visible", "ApproximateNumberOfMessagesVisible"),
        ("held", "ApproximateNumberOfMessagesNotVisible"),
    ):
        stat = queries[query_id]["MetricStat"]
        assert (stat["Metric"]["Namespace"], stat["Metric"]["MetricName"], stat["Stat"], stat["Period"]) == (
            "AWS/SQS",
            metric_name,
            "Maximum",
            60,
        )
        assert stat["Metric"]["Dimensions"] == [queue]
        assert queries[query_id]["ReturnData"] is False
    assert dlq["Threshold"] == SETTINGS.tier(tier).dlq_alarm_threshold
    assert (dlq["EvaluationPeriods"], dlq.get("DatapointsToAlarm", 1)) == (1, 1)


def test_critical_pages_on_the_first_dead_letter(default_synth):
    assert _alarm(default_synth, "dev", "critical", Alarms.DLQ_DEPTH)["Threshold"] == 0
    assert _alarm(default_synth, "dev", "bulk", Alarms.DLQ_DEPTH)["Threshold"] == 10


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_failure_rate_is_failed_jobs_over_finished_jobs_with_a_minimum_volume(default_synth, tier):
    """JobsFailed / (JobsSucceeded + JobsFailed), 0 under 20 jobs in 5 minutes; retries are not an input."""
    alarm = _alarm(default_synth, "dev", tier, Alarms.FAILURE_RATE)
    assert alarm["Threshold"] == 1.0
    assert (alarm["EvaluationPeriods"], alarm.get("DatapointsToAlarm", 1)) == (1, 1)
    assert alarm["TreatMissingData"] == "notBreaching"
    returned, queries = _queries(alarm)
    assert returned["Expression"] == "IF(jobs >= 20, 100 * FILL(failed, 0) / jobs, 0)"
    assert queries["jobs"]["Expression"] == "FILL(succeeded, 0) + FILL(failed, 0)"
    assert queries["jobs"]["ReturnData"] is False
    dimensions = [
        {"Name": Metrics.DIM_STAGE, "Value": "dev"},
        {"Name": Metrics.DIM_TIER, "Value": tier},
        {"Name": Metrics.DIM_SERVICE, "Value": Metrics.SERVICE},
    ]
    stats = {q["Id"]: q["MetricStat"] for q in queries.values() if "MetricStat" in q}
    assert {i: (s["Metric"]["MetricName"], s["Stat"], s["Period"]) for i, s in stats.items()} == {
        "failed": (Metrics.FAILED, "Sum", 300),
        "succeeded": (Metrics.SUCCEEDED, "Sum", 300),
    }
    assert Metrics.RETRIED not in json.dumps(alarm) and Metrics.PROCESSED not in json.dumps(alarm)
    for stat in stats.values():
        metric = stat["Metric"]
        assert metric["Namespace"] == Metrics.NAMESPACE
        assert sorted(metric["Dimensions"], key=lambda d: d["Name"]) == sorted(dimensions, key=lambda d: d["Name"])


def test_failure_rate_minimum_volume_is_a_tier_setting(tmp_path_factory):
    synth = synthesize(
        tmp_path_factory,
        "min-jobs",
        tiers={"critical": {}, "transactional": {}, "bulk": {"failure_rate_min_jobs": 200}},
    )
    returned, _ = _queries(_alarm(synth, "dev", "bulk", Alarms.FAILURE_RATE))
    assert returned["Expression"] == "IF(jobs >= 200, 100 * FILL(failed, 0) / jobs, 0)"


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_consumer_alarms_watch_duration_errors_and_throttles(default_synth, tier):
    settings = SETTINGS.tier(tier)
    consumer = {"Ref": find_consumer(default_synth, "dev", tier)[0]}
    duration = _alarm(default_synth, "dev", tier, Alarms.DURATION)
    assert (duration["MetricName"], duration["ExtendedStatistic"]) == ("Duration", "p99")
    assert duration["Threshold"] == settings.timeout_seconds * 1000 * 0.8
    for kind, metric in ((Alarms.DURATION, "Duration"), (Alarms.ERRORS, "Errors"), (Alarms.THROTTLES, "Throttles")):
        alarm = _alarm(default_synth, "dev", tier, kind)
        assert alarm["MetricName"] == metric and alarm["Namespace"] == "AWS/Lambda"
        assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": consumer}]
    assert _alarm(default_synth, "dev", tier, Alarms.ERRORS)["Threshold"] == 0
    assert _alarm(default_synth, "dev", tier, Alarms.THROTTLES)["Threshold"] == 0


def test_alarm_topic_is_ssl_only_and_encrypted_with_a_key_cloudwatch_may_use(default_synth):
    topic_key = _topic_key(default_synth)
    topic = default_synth.raw["Resources"][topic_key]["Properties"]
    key_id = topic["KmsMasterKeyId"]["Fn::GetAtt"][0]
    key = default_synth.raw["Resources"][key_id]["Properties"]
    assert key["EnableKeyRotation"] is True
    assert {
        "Sid": "AllowCloudWatchAlarmsToPublish",
        "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
        "Effect": "Allow",
        "Principal": {"Service": "cloudwatch.amazonaws.com"},
        "Resource": "*",
    } in key["KeyPolicy"]["Statement"]
    default_synth.template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic_key}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            },
        },
    )
    assert default_synth.resources("AWS::SNS::Subscription") == {}


def test_alarm_subscriptions_keep_undelivered_pages(custom_synth):
    subscriptions = {
        s["Properties"]["Protocol"]: s["Properties"] for s in custom_synth.resources("AWS::SNS::Subscription").values()
    }
    assert subscriptions["email"]["Endpoint"] == "oncall@example.com"
    assert subscriptions["https"]["Endpoint"] == "https://events.pagerduty.com/integration/abc/enqueue"
    for sub in subscriptions.values():
        assert sub["TopicArn"] == {"Ref": _topic_key(custom_synth)}
        assert "deadLetterTargetArn" in sub["RedrivePolicy"]


@pytest.mark.parametrize(
    ("key", "ttl"), [("id", {"AttributeName": "expiration", "Enabled": True}), ("account_id", None)]
)
def test_tables_are_on_demand_with_pitr_encryption_and_retained(default_synth, key, ttl):
    (table,) = [
        t
        for t in default_synth.resources("AWS::DynamoDB::Table").values()
        if t["Properties"]["KeySchema"] == [{"AttributeName": key, "KeyType": "HASH"}]
    ]
    props = table["Properties"]
    assert props["AttributeDefinitions"] == [{"AttributeName": key, "AttributeType": "S"}]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"] == {"SSEEnabled": True}
    assert props.get("TimeToLiveSpecification") == ttl
    assert table["DeletionPolicy"] == "Retain"


def test_replay_function_knows_every_tier_and_has_its_handler(default_synth):
    key = logical_id(default_synth, "AWS::Lambda::Function", FunctionName=function_name("dev", "replay"))
    props = default_synth.raw["Resources"][key]["Properties"]
    assert props["Handler"] == Handlers.REPLAY
    assert props["Timeout"] == 300
    env = props["Environment"]["Variables"]
    assert env[Env.STAGE] == "dev"
    assert Env.IDEMPOTENCY_TABLE not in env
    # The JSON is rendered by CloudFormation from the queue references: check the references.
    rendered = json.dumps(env[Env.REPLAY_TIERS])
    for tier in DEFAULT_TIERS:
        for dlq in (False, True):
            assert find_queue(default_synth, "dev", tier, dlq=dlq)[0] in rendered
        assert f'\\"{tier}\\":' in rendered


def test_replay_may_consume_dlqs_send_to_main_queues_and_move_messages(default_synth):
    key = logical_id(default_synth, "AWS::Lambda::Function", FunctionName=function_name("dev", "replay"))
    statements = policy_statements(default_synth, key)
    actions_on: dict[str, set[str]] = {}
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for ref in referenced_ids(statement["Resource"]):
            actions_on.setdefault(ref, set()).update(actions)
    for tier in DEFAULT_TIERS:
        main, dlq = find_queue(default_synth, "dev", tier)[0], find_queue(default_synth, "dev", tier, dlq=True)[0]
        assert {
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:ChangeMessageVisibility",
            "sqs:GetQueueAttributes",
            *MESSAGE_MOVE_ACTIONS,
        } <= actions_on[dlq]
        assert "sqs:SendMessage" not in actions_on[dlq]
        assert "sqs:SendMessage" in actions_on[main]
        assert "sqs:ReceiveMessage" not in actions_on[main] and "sqs:DeleteMessage" not in actions_on[main]
    tables = set(default_synth.resources("AWS::DynamoDB::Table"))
    assert not tables & set(actions_on)


def test_console_test_events_are_opt_in(default_synth):
    assert default_synth.resources("AWS::EventSchemas::Schema") == {}
    assert default_synth.resources("AWS::EventSchemas::Registry") == {}


def test_console_test_events_go_into_the_existing_registry(custom_synth):
    (schema,) = custom_synth.resources("AWS::EventSchemas::Schema").values()
    props = schema["Properties"]
    assert props["RegistryName"] == CONSOLE_EVENTS_REGISTRY == "lambda-testevent-schemas"
    assert props["SchemaName"] == "_tiered-jobs-qa-replay-schema" == console_schema_name(function_name("qa", "replay"))
    assert props["Type"] == "OpenApi3"
    content = json.loads(props["Content"])
    assert content["openapi"] == "3.0.0" and "Event" in content["components"]["schemas"]
    expected = {}
    # each tier's job-type replay names a pattern the app routes to it (reports.* for the added tier)
    globs = {"critical": "payments.*", "transactional": "demo.*", "bulk": "analytics.*", "reports": "reports.*"}
    for tier in ("critical", "transactional", "bulk", "reports"):
        expected.update({name: {"value": event} for name, event in console_events(tier, globs[tier]).items()})
    assert content["components"]["examples"] == expected
    assert custom_synth.resources("AWS::EventSchemas::Registry") == {}
    assert "DependsOn" not in schema


def test_console_test_events_can_create_the_registry(tmp_path_factory):
    synth = synthesize(tmp_path_factory, "registry", console_test_events="create_registry")
    ((registry_key, registry),) = synth.resources("AWS::EventSchemas::Registry").items()
    assert registry["Properties"]["RegistryName"] == CONSOLE_EVENTS_REGISTRY
    (schema,) = synth.resources("AWS::EventSchemas::Schema").values()
    assert schema["DependsOn"] == [registry_key]
    assert schema["Properties"]["SchemaName"] == console_schema_name(function_name("dev", "replay"))


def _outputs_and_parameters(synth) -> tuple[dict, dict]:
    parameters = {
        p["Properties"]["Name"]: p["Properties"]["Value"] for p in synth.resources("AWS::SSM::Parameter").values()
    }
    return synth.raw["Outputs"], parameters


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_each_tier_is_discoverable_by_output_and_ssm_parameter(default_synth, tier):
    outputs, parameters = _outputs_and_parameters(default_synth)
    main, dlq = find_queue(default_synth, "dev", tier)[0], find_queue(default_synth, "dev", tier, dlq=True)[0]
    for what, key, value in (
        (Outputs.QUEUE_URL, Ssm.TIER_QUEUE_URL, {"Ref": main}),
        (Outputs.QUEUE_ARN, Ssm.TIER_QUEUE_ARN, {"Fn::GetAtt": [main, "Arn"]}),
        (Outputs.DLQ_URL, Ssm.TIER_DLQ_URL, {"Ref": dlq}),
        (Outputs.DLQ_ARN, Ssm.TIER_DLQ_ARN, {"Fn::GetAtt": [dlq, "Arn"]}),
    ):
        assert outputs[Outputs.tier(tier, what)]["Value"] == value
        assert parameters[Ssm.tier("dev", tier, key)] == value
    assert outputs[Outputs.tier(tier, Outputs.CONSUMER_FUNCTION_NAME)]["Value"] == {
        "Ref": find_consumer(default_synth, "dev", tier)[0]
    }


def test_shared_resources_are_discoverable(default_synth):
    outputs, parameters = _outputs_and_parameters(default_synth)
    assert parameters[Ssm.routes("dev")] == json.dumps(EXAMPLE_ROUTES, sort_keys=True)
    assert json.loads(outputs[Outputs.ROUTES]["Value"]) == {
        "payments.*": "critical",
        "notifications.*": "transactional",
        "analytics.*": "bulk",
        "demo.*": "transactional",
    }
    assert parameters[Ssm.tiers("dev")] == "critical,transactional,bulk"
    replay = logical_id(default_synth, "AWS::Lambda::Function", FunctionName=function_name("dev", "replay"))
    assert (
        outputs[Outputs.REPLAY_FUNCTION_NAME]["Value"] == parameters[Ssm.replay_function_name("dev")] == {"Ref": replay}
    )
    for output, parameter in (
        (Outputs.IDEMPOTENCY_TABLE_NAME, Ssm.idempotency_table_name("dev")),
        *((Outputs.resource(r.name), Ssm.resource("dev", r.name)) for r in SETTINGS.resources),
    ):
        assert outputs[output]["Value"] == parameters[parameter]
    assert outputs[Outputs.ALARM_TOPIC_ARN]["Value"] == {"Ref": _topic_key(default_synth)}
    assert outputs[Outputs.DASHBOARD_NAME]["Value"] == dashboard_name("dev") == "tiered-jobs-dev"


def test_stages_do_not_collide(default_synth, custom_synth):
    """Everything named in an account (functions, queues, alarms, SSM paths, dashboard) carries the stage."""

    def names(synth):
        found = set()
        for type_, prop in (
            ("AWS::Lambda::Function", "FunctionName"),
            ("AWS::SQS::Queue", "QueueName"),
            ("AWS::CloudWatch::Alarm", "AlarmName"),
            ("AWS::SSM::Parameter", "Name"),
            ("AWS::CloudWatch::Dashboard", "DashboardName"),
        ):
            found |= {r["Properties"][prop] for r in synth.resources(type_).values() if prop in r["Properties"]}
        return found

    dev, qa = names(default_synth), names(custom_synth)
    # Functions, queues, alarms (7 per tier + the schedules alarm), SSM parameters (per tier 4 + TTL + mapping UUID
    # + large payloads; 8 shared: tiers, routes, replay function, idempotency table, unique jobs' table, batches
    # table, the resource, the discard archive; the publisher policy; 3 schedules), dashboard.
    assert len(dev) == 6 + 4 + 3 * len(Alarms.KINDS) + 1 + (3 * 7 + 8 + 1 + 3) + 1
    assert not dev & qa
    assert queue_name("qa", "critical") in qa and f"/tiered-jobs/qa/tiers/critical/{Ssm.TIER_QUEUE_URL}" in qa


def test_dashboard_shows_every_tier_and_alarm(default_synth):
    (dashboard,) = default_synth.resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for tier in DEFAULT_TIERS:
        assert f"{tier}: DLQ depth (visible + in flight)" in body and f"{tier}: jobs, and failure rate (%)" in body
    for name in (
        Metrics.PROCESSED,
        Metrics.SUCCEEDED,
        Metrics.FAILED,
        Metrics.RETRIED,
        Metrics.DEAD_LETTERED,
        Metrics.DUPLICATE,
        "ApproximateAgeOfOldestMessage",
        "ApproximateNumberOfMessagesNotVisible",
        "Duration",
        Metrics.JOB_AGE,
    ):
        assert name in body
    # 7 per tier + schedules undelivered (no tier of this stage is rate-limited: no limiter alarm)
    assert len(default_synth.resources("AWS::CloudWatch::Alarm")) == 3 * len(Alarms.KINDS) + 1
    assert '\\"type\\":\\"alarm\\"' in body


@pytest.mark.parametrize("synth_name", ["default_synth", "custom_synth"])
def test_cdk_nag_reports_no_finding(request, synth_name):
    """Synthesis would have raised on an error; the report also holds no warning."""
    synth = request.getfixturevalue(synth_name)
    report = json.loads((synth.outdir / "validation-report.json").read_text())
    assert report["pluginReports"] == []


def test_cdk_nag_checks_are_live(tmp_path):
    """An insecure queue added to the stack fails synthesis with the rule that catches it."""
    app = build_app(load_cdk_context(), outdir=str(tmp_path))
    (stack,) = [c for c in app.node.children if isinstance(c, cdk.Stack)]
    sqs.Queue(stack, "Insecure", encryption=sqs.QueueEncryption.UNENCRYPTED)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    rules = {v["ruleName"] for p in report["pluginReports"] for v in p["violations"]}
    assert {"AwsSolutions-SQS2", "AwsSolutions-SQS3", "AwsSolutions-SQS4"} <= rules


ROOT = Path(__file__).resolve().parents[2]


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_lambda_asset_ships_the_job_folder_and_the_runtime_parts_only(default_synth):
    (asset,) = default_synth.asset_dirs()
    shipped = _files(asset)
    expected = {f"functions/jobs/{f}" for f in _files(ROOT / "functions" / "jobs")}
    expected |= {"functions/__init__.py"}  # the parent package of ``functions.jobs``, created empty
    for part in RUNTIME_PARTS:
        source = ROOT / "tiered_jobs" / part
        expected |= {f"tiered_jobs/{part}"} if source.is_file() else {f"tiered_jobs/{part}/{f}" for f in _files(source)}
    expected = {f for f in expected if "__pycache__" not in f and not f.endswith(".pyc")}
    source = {f for f in shipped if "/__pycache__/" not in f}
    assert source == expected
    # Bytecode only where the runtime's interpreter compiled it (tiered_jobs/cdk/bytecode.py): its
    # version's files beside the sources, never a cache brought from this checkout.
    assert all(f.endswith(".cpython-313.pyc") for f in shipped - source)
    assert (asset / "functions" / "__init__.py").read_text() == ""
    assert "functions/jobs/schemas/payments.update_balance.schema.json" in shipped
    assert not any(
        f.startswith(
            (
                "emulator",
                "demo",
                "infra",
                "functions/events",
                "tests",
                "tiered_jobs/cli",
                "tiered_jobs/publisher",
                "tiered_jobs/console",
            )
        )
        for f in shipped
    )
    for function in default_synth.resources("AWS::Lambda::Function").values():
        assert function["Properties"]["Code"]["S3Key"] == asset.name.removeprefix("asset.") + ".zip"
    consumers = [
        f
        for f in default_synth.resources("AWS::Lambda::Function").values()
        if Env.JOB_MODULES in f["Properties"]["Environment"]["Variables"]
    ]
    assert {f["Properties"]["Environment"]["Variables"][Env.JOB_MODULES] for f in consumers} == {"functions.jobs"}
    assert default_synth.raw["Metadata"][TEMPLATE_METADATA_KEY]["jobs"] == {
        "path": "functions/jobs",
        "module": "functions.jobs",
    }


def _widgets(synth) -> list[dict]:
    """The dashboard's widgets, with the body's CloudFormation references replaced by their text."""
    (dashboard,) = synth.resources("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    text = "".join(p if isinstance(p, str) else "REF" for p in parts)
    return json.loads(text)["widgets"]


def test_retries_have_their_own_widget_and_no_alarm(default_synth):
    for tier in DEFAULT_TIERS:
        (retries,) = [
            w for w in _widgets(default_synth) if w["properties"].get("title", "").startswith(f"{tier}: retries")
        ]
        assert [m[1] for m in retries["properties"]["metrics"]] == [Metrics.RETRIED]
        (jobs,) = [w for w in _widgets(default_synth) if w["properties"].get("title", "").startswith(f"{tier}: jobs")]
        assert Metrics.RETRIED not in json.dumps(jobs)
    for alarm in default_synth.resources("AWS::CloudWatch::Alarm").values():
        assert Metrics.RETRIED not in json.dumps(alarm)


def test_replay_knows_each_tiers_idempotency_window(default_synth):
    key = logical_id(default_synth, "AWS::Lambda::Function", FunctionName=function_name("dev", "replay"))
    rendered = default_synth.raw["Resources"][key]["Properties"]["Environment"]["Variables"][Env.REPLAY_TIERS]
    text = "".join(p if isinstance(p, str) else "REF" for p in rendered["Fn::Join"][1])
    tiers = json.loads(text)
    assert set(tiers) == set(DEFAULT_TIERS)
    for tier in DEFAULT_TIERS:
        assert tiers[tier]["idempotency_ttl_seconds"] == SETTINGS.tier(tier).idempotency_ttl_seconds == 18 * 86_400
    _, parameters = _outputs_and_parameters(default_synth)
    for tier in DEFAULT_TIERS:
        assert parameters[Ssm.tier("dev", tier, Ssm.TIER_IDEMPOTENCY_TTL)] == str(18 * 86_400)
    assert Ssm.TIER_IDEMPOTENCY_TTL == "idempotency-ttl-seconds"


def test_a_tiers_own_retention_and_opt_out_reach_replay_and_consumer(tmp_path_factory):
    synth = synthesize(
        tmp_path_factory,
        "ttl",
        tiers={
            "critical": {},
            "transactional": {"retention_days": 2, "dlq_retention_days": 7},
            "bulk": {"idempotency_ttl_seconds": 3600, "allow_short_idempotency_window": True},
        },
    )
    _, parameters = _outputs_and_parameters(synth)
    expected = {"critical": 18 * 86_400, "transactional": 9 * 86_400, "bulk": 3600}
    for tier, ttl in expected.items():
        assert parameters[Ssm.tier("dev", tier, Ssm.TIER_IDEMPOTENCY_TTL)] == str(ttl)
        env = find_consumer(synth, "dev", tier)[1]["Properties"]["Environment"]["Variables"]
        assert env[Env.IDEMPOTENCY_TTL_SECONDS] == str(ttl)
