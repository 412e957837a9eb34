"""The local alarm evaluator and the metrics it reads (EMF, Lambda's own), on moto in-process."""

from __future__ import annotations

import json

import boto3
import pytest

from emulator.alarms import EMULATION_LABEL, AlarmEvaluator, decide, evaluate_expression
from emulator.esm import FunctionConfig, Invocation, InvocationError
from emulator.intrinsics import Intrinsics
from emulator.metrics import MetricStore, emf_datapoints, statistic

NOW = 1_800_000_000.0
DIMS = {"service": "tiered-jobs", "Stage": "local", "Tier": "critical"}


def emf_line(processed: int, failed: int, timestamp: float = NOW) -> str:
    return json.dumps(
        {
            "_aws": {
                "Timestamp": int(timestamp * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": "TieredJobs",
                        "Dimensions": [["Stage", "Tier", "service"], ["Stage", "Tier", "JobType"]],
                        "Metrics": [
                            {"Name": "JobsProcessed", "Unit": "Count"},
                            {"Name": "JobsFailed", "Unit": "Count"},
                            {"Name": "JobDuration", "Unit": "Milliseconds"},
                        ],
                    }
                ],
            },
            "Stage": "local",
            "Tier": "critical",
            "service": "tiered-jobs",
            "JobType": "payments.update_balance",
            "JobsProcessed": [float(processed)],
            "JobsFailed": [float(failed)],
            "JobDuration": [10.0, 30.0],
        }
    )


def test_emf_lines_become_one_datapoint_per_dimension_set_and_value():
    points = emf_datapoints(emf_line(processed=4, failed=1))
    processed = [p for p in points if p.name == "JobsProcessed"]
    assert {p.dimensions for p in processed} == {
        frozenset(DIMS.items()),
        frozenset({"Stage": "local", "Tier": "critical", "JobType": "payments.update_balance"}.items()),
    }
    assert [p.value for p in points if p.name == "JobDuration"] == [10.0, 30.0, 10.0, 30.0]
    assert all(p.timestamp == NOW and p.namespace == "TieredJobs" for p in points)


@pytest.mark.parametrize("line", ["plain text", '{"level": "INFO"}', '{"_aws": "broken"}', '{"_aws": {'])
def test_other_log_lines_are_not_metrics(line):
    assert emf_datapoints(line) == []


@pytest.mark.parametrize(
    ("stat", "expected"),
    [
        ("Sum", 10.0),
        ("Average", 2.5),
        ("Minimum", 1.0),
        ("Maximum", 4.0),
        ("SampleCount", 4.0),
        ("p50", 2.0),
        ("p99", 4.0),
    ],
)
def test_statistics(stat, expected):
    assert statistic([4.0, 1.0, 3.0, 2.0], stat) == expected


def test_statistic_of_nothing_is_no_data():
    assert statistic([], "Sum") is None


def test_store_answers_over_the_period_only():
    clock = [NOW]
    store = MetricStore(now=lambda: clock[0])
    store.log_line("fn", emf_line(processed=2, failed=0, timestamp=NOW - 400))
    store.log_line("fn", emf_line(processed=3, failed=1, timestamp=NOW - 10))
    assert store.values("TieredJobs", "JobsProcessed", DIMS, 300) == [3.0]
    assert store.values("TieredJobs", "JobsProcessed", DIMS, 600) == [2.0, 3.0]
    assert store.values("TieredJobs", "JobsProcessed", {"Tier": "critical"}, 600) == []  # exact dimension sets


def test_store_records_lambdas_own_metrics_per_invocation():
    store = MetricStore(now=lambda: NOW)
    function = FunctionConfig("fn", "arn", "h.h", {}, 3, 128, "us-east-1", ".")
    store.invocation(function, Invocation(response={}, duration_ms=12.0))
    store.invocation(function, Invocation(error=InvocationError("Sandbox.Timedout", "x", True), duration_ms=3000.0))
    dims = {"FunctionName": "fn"}
    assert store.values("AWS/Lambda", "Errors", dims, 60) == [0.0, 1.0]
    assert store.values("AWS/Lambda", "Duration", dims, 60) == [12.0, 3000.0]
    assert store.values("AWS/Lambda", "Invocations", dims, 60) == [1.0, 1.0]


@pytest.mark.parametrize(
    ("expression", "values", "expected"),
    [
        ("IF(processed > 0, 100 * failed / processed, 0)", {"processed": 4.0, "failed": 1.0}, 25.0),
        ("IF(processed > 0, 100 * failed / processed, 0)", {"processed": 0.0, "failed": 0.0}, 0.0),
        ("a - -b", {"a": 1.0, "b": 2.0}, 3.0),
    ],
)
def test_metric_math(expression, values, expected):
    assert evaluate_expression(expression, values) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"succeeded": 30.0, "failed": 3.0}, 100 * 3 / 33),
        ({"succeeded": None, "failed": 25.0}, 100.0),  # only failures in the period: FILL makes it 100 %
        ({"succeeded": 5.0, "failed": None}, 0.0),  # below the minimum volume
        ({"succeeded": 19.0, "failed": 1.0}, 5.0),
    ],
)
def test_metric_math_with_fill_and_an_expression_that_uses_another(values, expected):
    expressions = {"jobs": "FILL(succeeded, 0) + FILL(failed, 0)"}
    rate = "IF(jobs >= 20, 100 * FILL(failed, 0) / jobs, 0)"
    assert evaluate_expression(rate, values, expressions) == pytest.approx(expected)


def test_metric_math_refuses_what_it_does_not_evaluate():
    with pytest.raises(ValueError, match="not evaluated locally"):
        evaluate_expression("RATE(m)", {"m": 1.0})
    with pytest.raises(ValueError, match="refers to itself"):
        evaluate_expression("a", {}, {"a": "a + 1"})
    with pytest.raises(ValueError, match="unknown metric id"):
        evaluate_expression("x + 1", {})


@pytest.mark.parametrize(
    ("treat", "current", "expected"),
    [
        ("notBreaching", "ALARM", "OK"),
        ("breaching", "OK", "ALARM"),
        ("ignore", "ALARM", "ALARM"),
        ("missing", "OK", "INSUFFICIENT_DATA"),
    ],
)
def test_missing_data_follows_treat_missing_data(treat, current, expected):
    assert decide({"TreatMissingData": treat, "StateValue": current}, None) == expected


def test_comparisons():
    alarm = {"ComparisonOperator": "GreaterThanThreshold", "Threshold": 0.0}
    assert decide(alarm, 1.0) == "ALARM"
    assert decide(alarm, 0.0) == "OK"
    assert decide({**alarm, "ComparisonOperator": "GreaterThanOrEqualToThreshold"}, 0.0) == "ALARM"


@pytest.fixture
def world(aws):
    """An alarm topic with an SQS inbox, a DLQ, and two alarms like the stack's."""
    sqs, sns, cloudwatch = (boto3.client(s, region_name="us-east-1") for s in ("sqs", "sns", "cloudwatch"))
    topic = sns.create_topic(Name="alarms")["TopicArn"]
    inbox = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=inbox_arn, Attributes={"RawMessageDelivery": "true"})
    dlq = sqs.create_queue(QueueName="jobs-dlq")["QueueUrl"]
    cloudwatch.put_metric_alarm(
        AlarmName="tiered-jobs-local-critical-dlq-depth",
        Namespace="AWS/SQS",
        MetricName="ApproximateNumberOfMessagesVisible",
        Dimensions=[{"Name": "QueueName", "Value": "jobs-dlq"}],
        Statistic="Maximum",
        Period=60,
        EvaluationPeriods=1,
        Threshold=0,
        ComparisonOperator="GreaterThanThreshold",
        TreatMissingData="notBreaching",
        AlarmActions=[topic],
        OKActions=[topic],
    )
    metric = {"Namespace": "TieredJobs", "Dimensions": [{"Name": k, "Value": v} for k, v in DIMS.items()]}
    cloudwatch.put_metric_alarm(
        AlarmName="tiered-jobs-local-critical-failure-rate",
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanThreshold",
        TreatMissingData="notBreaching",
        AlarmActions=[topic],
        OKActions=[topic],
        Metrics=[
            {"Id": "expr_1", "Expression": "IF(processed > 0, 100 * failed / processed, 0)", "ReturnData": True},
            {
                "Id": "failed",
                "MetricStat": {"Metric": {**metric, "MetricName": "JobsFailed"}, "Period": 300, "Stat": "Sum"},
                "ReturnData": False,
            },
            {
                "Id": "processed",
                "MetricStat": {"Metric": {**metric, "MetricName": "JobsProcessed"}, "Period": 300, "Stat": "Sum"},
                "ReturnData": False,
            },
        ],
    )
    clients = {"sqs": sqs, "sns": sns, "cloudwatch": cloudwatch}
    return clients, dlq, inbox


def notifications(sqs, inbox) -> list[dict]:
    messages = sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


def test_dlq_alarm_fires_notifies_and_recovers(world):
    clients, dlq, inbox = world
    evaluator = AlarmEvaluator(clients.__getitem__, MetricStore(), "tiered-jobs-local-", lambda name: 0.0)
    assert evaluator.evaluate_once() == []  # an empty DLQ: stays OK, nothing published

    clients["sqs"].send_message(QueueUrl=dlq, MessageBody="letter")
    (change,) = evaluator.evaluate_once()
    assert (change.alarm_name, change.old_state, change.new_state, change.value) == (
        "tiered-jobs-local-critical-dlq-depth",
        "OK",
        "ALARM",
        1.0,
    )
    alarm = clients["cloudwatch"].describe_alarms(AlarmNames=[change.alarm_name])["MetricAlarms"][0]
    assert alarm["StateValue"] == "ALARM" and alarm["StateReason"].startswith(EMULATION_LABEL)
    (note,) = notifications(clients["sqs"], inbox)
    assert (note["NewStateValue"], note["OldStateValue"], note["Emulated"]) == ("ALARM", "OK", True)
    assert evaluator.evaluate_once() == []  # no change, no second page

    clients["sqs"].purge_queue(QueueUrl=dlq)
    (back,) = evaluator.evaluate_once()
    assert back.new_state == "OK"
    assert [n["NewStateValue"] for n in notifications(clients["sqs"], inbox)] == ["OK"]


def test_failure_rate_alarm_evaluates_metric_math_on_emf_metrics(world):
    clients, _, inbox = world
    store = MetricStore(now=lambda: NOW)  # the period's window on a fixed clock: no wall-clock seconds to outlast
    evaluator = AlarmEvaluator(clients.__getitem__, store, "tiered-jobs-local-", lambda name: 0.0)
    store.put(emf_datapoints(emf_line(processed=200, failed=1, timestamp=NOW)))
    assert evaluator.evaluate_once() == []  # 0.5 % is under the 1 % threshold
    store.put(emf_datapoints(emf_line(processed=10, failed=5, timestamp=NOW)))
    (change,) = evaluator.evaluate_once()
    assert change.alarm_name.endswith("failure-rate") and change.new_state == "ALARM"
    assert change.value == pytest.approx(100 * 6 / 210)


def test_an_alarm_over_three_periods_fires_only_when_each_of_them_breaches(world):
    """The rate limiter's alarm (``EvaluationPeriods`` 3): a minute of errors is a blip, three an outage."""
    clients, _, _ = world
    clock = [NOW]
    store = MetricStore(now=lambda: clock[0])
    clients["cloudwatch"].put_metric_alarm(
        AlarmName="tiered-jobs-local-critical-rate-limiter",
        Namespace="TieredJobs",
        MetricName="JobsFailed",
        Dimensions=[{"Name": k, "Value": v} for k, v in DIMS.items()],
        Statistic="Sum",
        Period=60,
        EvaluationPeriods=3,
        Threshold=0,
        ComparisonOperator="GreaterThanThreshold",
        TreatMissingData="notBreaching",
    )
    evaluator = AlarmEvaluator(clients.__getitem__, store, "tiered-jobs-local-critical-rate", lambda name: 0.0)
    for minute in range(3):
        store.put(emf_datapoints(emf_line(processed=1, failed=1, timestamp=clock[0])))
        changes = evaluator.evaluate_once()
        assert [c.new_state for c in changes] == ([] if minute < 2 else ["ALARM"]), minute
        clock[0] += 60


def test_queue_age_comes_from_the_given_source(world):
    clients, _, _ = world
    evaluator = AlarmEvaluator(clients.__getitem__, MetricStore(), "x", lambda name: 42.0 if name == "q" else None)
    dims = [{"Name": "QueueName", "Value": "q"}]
    assert evaluator.metric_value("AWS/SQS", "ApproximateAgeOfOldestMessage", dims, "Maximum", 60) == 42.0


# -- the stack's own alarms (synthesized), evaluated as local mode does --------------------------

STAGE = "local"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> dict:
    """The real template of stage ``local``: its alarms are what the evaluator must understand."""
    from infra.app import build_app, load_cdk_context
    from tiered_jobs.contract.names import stack_name

    outdir = tmp_path_factory.mktemp("alarms-synth")
    build_app(load_cdk_context(stage=STAGE, disposable=True), outdir=str(outdir)).synth()
    return json.loads((outdir / f"{stack_name(STAGE)}.template.json").read_text())


def _concrete(node, template: dict, topic_arn: str):
    """The alarm's properties with the template's references replaced by the local names: the alarm
    topic (``Ref``) and the queues' names (``Fn::GetAtt ... QueueName``); any other reference raises."""

    def ref(name: str) -> str:
        if template["Resources"][name]["Type"] != "AWS::SNS::Topic":
            raise KeyError(f"an alarm refers to {name}, which this test does not deploy")
        return topic_arn

    def get_att(logical_id: str, attribute: str) -> str:
        if attribute != "QueueName":
            raise KeyError(f"an alarm reads {logical_id}.{attribute}, which this test does not deploy")
        return template["Resources"][logical_id]["Properties"]["QueueName"]

    return Intrinsics(ref=ref, get_att=get_att).resolve(node)


@pytest.fixture
def stack_alarms(aws, template):
    """The template's DLQ-depth and failure-rate alarms in moto, the DLQs, and an evaluator on a metric store."""
    from tiered_jobs.contract.names import DEFAULT_TIERS, Alarms, queue_name

    sqs, sns, cloudwatch = (boto3.client(s, region_name="us-east-1") for s in ("sqs", "sns", "cloudwatch"))
    topic = sns.create_topic(Name="alarms")["TopicArn"]
    dlqs = {tier: sqs.create_queue(QueueName=queue_name(STAGE, tier, dlq=True))["QueueUrl"] for tier in DEFAULT_TIERS}
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::CloudWatch::Alarm" and resource["Properties"]["AlarmName"].endswith(
            (Alarms.DLQ_DEPTH, Alarms.FAILURE_RATE)
        ):
            cloudwatch.put_metric_alarm(**_concrete(resource["Properties"], template, topic))
    store = MetricStore(now=lambda: NOW)  # a fixed clock: every line below lands in the alarms' current period
    clients = {"sqs": sqs, "sns": sns, "cloudwatch": cloudwatch}
    evaluator = AlarmEvaluator(clients.__getitem__, store, f"tiered-jobs-{STAGE}-", lambda name: 0.0)
    return evaluator, store, sqs, dlqs["critical"]


def jobs_line(tier: str, **counts: float) -> str:
    """One EMF line as the consumer writes it: ``JobsSucceeded`` / ``JobsFailed`` / ``JobsRetried`` counts."""
    return json.dumps(
        {
            "_aws": {
                "Timestamp": int(NOW * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": "TieredJobs",
                        "Dimensions": [["Stage", "Tier", "service"]],
                        "Metrics": [{"Name": name, "Unit": "Count"} for name in counts],
                    }
                ],
            },
            "Stage": STAGE,
            "Tier": tier,
            "service": "tiered-jobs",
            **{name: [float(v)] for name, v in counts.items()},
        }
    )


def _state(evaluator: AlarmEvaluator, tier: str, kind: str) -> tuple[str, float | None]:
    evaluator.evaluate_once()
    return evaluator.states[f"tiered-jobs-{STAGE}-{tier}-{kind}"]


@pytest.mark.synth  # the stack's own alarms: a synthesis of the example app
def test_a_flaky_job_that_fails_once_then_succeeds_does_not_page(stack_alarms):
    evaluator, store, _, _ = stack_alarms
    for _ in range(3):  # three demo.flaky jobs: one retried attempt each, then success
        store.log_line("fn", jobs_line("critical", JobsRetried=1))
        store.log_line("fn", jobs_line("critical", JobsSucceeded=1))
    assert _state(evaluator, "critical", "failure-rate") == ("OK", 0.0)
    store.log_line("fn", jobs_line("critical", JobsSucceeded=40, JobsRetried=40))  # many retries, no failure
    assert _state(evaluator, "critical", "failure-rate") == ("OK", 0.0)


@pytest.mark.synth  # the stack's own alarms: a synthesis of the example app
def test_an_unknown_job_type_dead_lettered_below_the_minimum_volume_does_not_page(stack_alarms):
    evaluator, store, _, _ = stack_alarms
    store.log_line("fn", jobs_line("bulk", JobsFailed=1))
    assert _state(evaluator, "bulk", "failure-rate") == ("OK", 0.0)
    store.log_line("fn", jobs_line("bulk", JobsSucceeded=18))
    assert _state(evaluator, "bulk", "failure-rate") == ("OK", 0.0)  # 19 jobs: still under 20


@pytest.mark.synth  # the stack's own alarms: a synthesis of the example app
def test_failed_jobs_above_the_minimum_volume_page(stack_alarms):
    evaluator, store, _, _ = stack_alarms
    store.log_line("fn", jobs_line("bulk", JobsSucceeded=99, JobsFailed=1))
    assert _state(evaluator, "bulk", "failure-rate") == ("OK", 1.0)  # 1 % is not above 1 %
    store.log_line("fn", jobs_line("bulk", JobsSucceeded=0, JobsFailed=5))
    state, value = _state(evaluator, "bulk", "failure-rate")
    assert state == "ALARM" and value == pytest.approx(100 * 6 / 105)
    (change,) = [t for t in evaluator.transitions if t.alarm_name.endswith("bulk-failure-rate")]
    assert change.new_state == "ALARM"


@pytest.mark.synth  # the stack's own alarms: a synthesis of the example app
def test_only_failures_above_the_volume_are_100_percent(stack_alarms):
    evaluator, store, _, _ = stack_alarms
    store.log_line("fn", jobs_line("critical", JobsFailed=25))
    assert _state(evaluator, "critical", "failure-rate") == ("ALARM", 100.0)


@pytest.mark.synth  # the stack's own alarms: a synthesis of the example app
def test_the_dlq_alarm_stays_in_alarm_while_a_filtered_replay_holds_letters(stack_alarms):
    evaluator, _, sqs, dlq = stack_alarms
    sqs.send_message(QueueUrl=dlq, MessageBody="letter")
    assert _state(evaluator, "critical", "dlq-depth") == ("ALARM", 1.0)
    held = sqs.receive_message(QueueUrl=dlq, VisibilityTimeout=300)["Messages"]  # in flight, not visible
    assert len(held) == 1
    assert _state(evaluator, "critical", "dlq-depth") == ("ALARM", 1.0)
    sqs.delete_message(QueueUrl=dlq, ReceiptHandle=held[0]["ReceiptHandle"])
    assert _state(evaluator, "critical", "dlq-depth") == ("OK", 0.0)
