"""The moto adapter: which resources are held back, and how their intrinsics are resolved."""

from __future__ import annotations

import copy
import json

import pytest

from emulator import moto_patches, template

TEMPLATE = {
    "Parameters": {
        "Layer": {
            "Type": "AWS::SSM::Parameter::Value<String>",
            "Default": "/aws/service/powertools/python/x86_64/python3.11/3.37.0",
        },
        "BootstrapVersion": {
            "Type": "AWS::SSM::Parameter::Value<String>",
            "Default": "/cdk-bootstrap/hnb659fds/version",
        },
    },
    "Resources": {
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "q"}},
        "QueuePolicy": {
            "Type": "AWS::SQS::QueuePolicy",
            "Properties": {
                "Queues": [{"Ref": "Queue"}],
                "PolicyDocument": {"Statement": [{"Effect": "Deny", "Resource": {"Fn::GetAtt": ["Queue", "Arn"]}}]},
            },
        },
        "Alarm": {"Type": "AWS::CloudWatch::Alarm", "Properties": {"AlarmName": "a"}},
        "Dashboard": {
            "Type": "AWS::CloudWatch::Dashboard",
            "Properties": {"DashboardBody": {"Fn::Join": ["", ["[", {"Fn::GetAtt": ["Alarm", "Arn"]}, "]"]]}},
        },
        "Waiter": {"Type": "AWS::SQS::Queue", "DependsOn": ["Queue", "Alarm"], "Properties": {}},
    },
    "Outputs": {"QueueUrl": {"Value": {"Ref": "Queue"}}},
}


def test_unsupported_types_come_from_motos_own_registry():
    assert moto_patches.unsupported_types(TEMPLATE) == {"AWS::SQS::QueuePolicy", "AWS::CloudWatch::Alarm"}


def test_split_holds_back_unsupported_resources_and_what_refers_to_them():
    deployable, held = moto_patches.split_template(TEMPLATE)
    assert set(deployable["Resources"]) == {"Queue", "Waiter"}
    assert deployable["Resources"]["Waiter"]["DependsOn"] == ["Queue"]
    assert set(held) == {"QueuePolicy", "Alarm", "Dashboard"}
    assert list(held).index("Alarm") < list(held).index("Dashboard")  # created after what it names
    assert "Alarm" in TEMPLATE["Resources"]  # the synthesized template itself is untouched


def test_an_output_on_a_held_back_resource_is_refused():
    template = {**TEMPLATE, "Outputs": {"AlarmName": {"Value": {"Ref": "Alarm"}}}}
    with pytest.raises(RuntimeError, match="output AlarmName"):
        moto_patches.split_template(template)


def resolver(**attributes):
    return template.Resolver(
        physical_ids={"Queue": "https://q-url", "Topic": "arn:aws:sns:us-east-1:1:t"},
        types={"Queue": "AWS::SQS::Queue", "Topic": "AWS::SNS::Topic"},
        parameters={"Param": "p"},
        pseudo={"AWS::Region": "us-east-1", "AWS::AccountId": "123"},
        attribute=lambda kind, physical_id, name: f"{kind}|{physical_id}|{name}",
    )


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ({"Ref": "Queue"}, "https://q-url"),
        ({"Ref": "AWS::Region"}, "us-east-1"),
        ({"Ref": "Param"}, "p"),
        ({"Fn::GetAtt": ["Queue", "Arn"]}, "AWS::SQS::Queue|https://q-url|Arn"),
        ({"Fn::GetAtt": "Queue.Arn"}, "AWS::SQS::Queue|https://q-url|Arn"),
        ({"Fn::Join": [":", ["a", {"Ref": "AWS::AccountId"}]]}, "a:123"),
        (
            {"Fn::Sub": "x-${AWS::Region}-${Queue}-${Queue.Arn}-${!Literal}"},
            "x-us-east-1-https://q-url-AWS::SQS::Queue|https://q-url|Arn-${Literal}",
        ),
        ({"Fn::Sub": ["${A}/${AWS::AccountId}", {"A": {"Ref": "Param"}}]}, "p/123"),
        ({"Key": [{"Ref": "Topic"}]}, {"Key": ["arn:aws:sns:us-east-1:1:t"]}),
    ],
)
def test_resolver_intrinsics(node, expected):
    assert resolver().resolve(node) == expected


def test_resolver_refuses_what_it_does_not_know():
    with pytest.raises(NotImplementedError, match="Fn::If"):  # Fn::Select is known since the resolvers merged
        resolver().resolve({"Fn::If": ["IsProd", "a", "b"]})
    with pytest.raises(KeyError, match="Nope"):
        resolver().resolve({"Ref": "Nope"})


def test_references_sees_refs_getatts_and_sub_variables():
    assert template.references(
        {"a": [{"Ref": "A"}, {"Fn::GetAtt": ["B", "Arn"]}], "b": {"Fn::Sub": "${C.Arn}/${AWS::Region}/${!D}"}}
    ) == {"A", "B", "C", "AWS::Region"}


def test_seeding_writes_bootstrap_version_and_the_reserved_powertools_parameter(aws):
    import boto3

    ssm = boto3.client("ssm", region_name="us-east-1")
    seeded = moto_patches.seed_parameters(TEMPLATE, ssm, "123456789012", "us-east-1")
    assert ssm.get_parameter(Name="/cdk-bootstrap/hnb659fds/version")["Parameter"]["Value"] == "30"
    layer = ssm.get_parameter(Name=TEMPLATE["Parameters"]["Layer"]["Default"])["Parameter"]["Value"]
    assert layer == seeded[TEMPLATE["Parameters"]["Layer"]["Default"]]
    assert layer.startswith("arn:aws:lambda:us-east-1:123456789012:layer:AWSLambdaPowertoolsPythonV3-python311-x8664")


def test_seeding_refuses_an_unknown_ssm_parameter(aws):
    import boto3

    template = {"Parameters": {"X": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/team/secret"}}}
    with pytest.raises(RuntimeError, match="/team/secret"):
        moto_patches.seed_parameters(
            template, boto3.client("ssm", region_name="us-east-1"), "123456789012", "us-east-1"
        )


def test_an_alarm_subscription_is_created_with_its_delivery_dead_letter_queue(aws):
    """moto's CloudFormation skips ``AWS::SNS::Subscription`` (``alarm_email``): created with ``Subscribe``,
    its ``RedrivePolicy`` kept. Nothing is ever delivered locally (moto sends no e-mail)."""
    import json

    import boto3

    sns, sqs = boto3.client("sns", region_name="us-east-1"), boto3.client("sqs", region_name="us-east-1")
    topic = sns.create_topic(Name="alarms")["TopicArn"]
    dlq = sqs.get_queue_attributes(
        QueueUrl=sqs.create_queue(QueueName="delivery-dlq")["QueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    held = {
        "Email": {
            "Type": "AWS::SNS::Subscription",
            "Properties": {
                "TopicArn": {"Ref": "Topic"},
                "Protocol": "email",
                "Endpoint": "oncall@example.com",
                "RedrivePolicy": {"deadLetterTargetArn": dlq},
            },
        }
    }
    resolve = template.Resolver(
        physical_ids={"Topic": topic},
        types={"Topic": "AWS::SNS::Topic"},
        parameters={},
        pseudo={},
        attribute=lambda *args: "",
    )
    assert moto_patches.unsupported_types({"Resources": held}) == {"AWS::SNS::Subscription"}
    moto_patches.create_held_back(
        held, resolve, lambda service: boto3.client(service, region_name="us-east-1"), "123456789012", "us-east-1"
    )
    (subscription,) = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert (subscription["Protocol"], subscription["Endpoint"]) == ("email", "oncall@example.com")
    assert resolve.physical_ids["Email"] == subscription["SubscriptionArn"]
    attributes = sns.get_subscription_attributes(SubscriptionArn=subscription["SubscriptionArn"])["Attributes"]
    assert json.loads(attributes["RedrivePolicy"]) == {"deadLetterTargetArn": dlq}


def test_a_message_move_task_moves_every_visible_letter_as_a_new_message(aws):
    """Gap 11, SQS's documented redrive: body and message attributes unchanged; a new message id,
    enqueue time and receive count; gone from the source; the task listed as completed."""
    import json

    import boto3

    from emulator.moto_patches import sqs_message_move_tasks

    sqs_message_move_tasks()
    sqs = boto3.client("sqs", region_name="us-east-1")
    dlq = sqs.create_queue(QueueName="jobs-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue = sqs.create_queue(
        QueueName="jobs",
        Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 5})},
    )["QueueUrl"]
    sqs.send_message(QueueUrl=dlq, MessageBody="in-flight")
    assert sqs.receive_message(QueueUrl=dlq, VisibilityTimeout=600)["Messages"]  # held: it stays
    reason = {"DeadLetter.Reason": {"DataType": "String", "StringValue": "permanent"}}
    letter = sqs.send_message(QueueUrl=dlq, MessageBody="letter-1", MessageAttributes=reason)["MessageId"]
    sqs.receive_message(QueueUrl=dlq, VisibilityTimeout=0)  # received once in the DLQ: a count to reset

    handle = sqs.start_message_move_task(SourceArn=dlq_arn)["TaskHandle"]  # back to its source queue

    (moved,) = sqs.receive_message(QueueUrl=queue, MessageAttributeNames=["All"], MessageSystemAttributeNames=["All"])[
        "Messages"
    ]
    assert moved["Body"] == "letter-1" and moved["MessageId"] != letter
    assert moved["MessageAttributes"]["DeadLetter.Reason"]["StringValue"] == "permanent"
    assert moved["Attributes"]["ApproximateReceiveCount"] == "1"
    (task,) = sqs.list_message_move_tasks(SourceArn=dlq_arn)["Results"]
    assert (task["TaskHandle"], task["Status"], task["ApproximateNumberOfMessagesMoved"]) == (handle, "COMPLETED", 1)
    left = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["All"])["Attributes"]
    assert (left["ApproximateNumberOfMessages"], left["ApproximateNumberOfMessagesNotVisible"]) == ("0", "1")


def test_the_in_flight_message_groups_are_read_from_a_whole_snapshot():
    """Gap 12: a set another thread changes while it is copied is copied again, never read half-way."""
    from moto.sqs.models import Queue

    from emulator.moto_patches import sqs_thread_safe_message_groups

    sqs_thread_safe_message_groups()

    class Grouped:
        def __init__(self, group_id):
            self.group_id = group_id

    class Flaky(set):
        """Fails the first copy as a set changed by another thread does."""

        copies = 0

        def __iter__(self):
            Flaky.copies += 1
            if Flaky.copies == 1:
                raise RuntimeError("Set changed size during iteration")
            return super().__iter__()

    queue = Queue.__new__(Queue)
    queue._pending_messages = Flaky({Grouped("acme"), Grouped(None), Grouped("globex")})
    assert queue.pending_message_groups == {"acme", "globex"} and Flaky.copies == 2


def test_the_servers_module_list_is_read_once_and_unchanged():
    """Gap 13: the same modules, listed once per process."""
    from moto import backends

    from emulator.moto_patches import moto_server_module_list_once

    before = tuple(backends.list_of_moto_modules())
    moto_server_module_list_once()
    assert backends.list_of_moto_modules() == before and "sqs" in before
    assert backends.list_of_moto_modules() is backends.list_of_moto_modules()  # no second listing


@pytest.mark.parametrize(
    "attributes",
    [
        {},
        {"FifoQueue": "true", "ContentBasedDeduplication": "true"},
        {"KmsMasterKeyId": "alias/aws/sqs", "DelaySeconds": "3"},
    ],
    ids=["standard", "fifo", "encrypted"],
)
def test_queue_attributes_on_demand_are_the_attributes_moto_computes(aws, attributes):
    """Gap 14: each attribute asked alone equals what moto's every-attribute answer holds."""
    import json

    import boto3
    from moto.sqs import models

    from emulator.moto_patches import queue_attribute, sqs_fast_clock_and_attributes

    sqs = boto3.client("sqs", region_name="us-east-1")
    fifo = bool(attributes.get("FifoQueue"))
    dlq = sqs.create_queue(QueueName="dl.fifo" if fifo else "dl", Attributes={"FifoQueue": "true"} if fifo else {})
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq["QueueUrl"], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    name = "jobs.fifo" if fifo else "jobs"
    url = sqs.create_queue(
        QueueName=name,
        Attributes={**attributes, "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3})},
    )["QueueUrl"]
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{i}", **({"MessageGroupId": "g"} if "fifo" in name else {}))
    sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)
    backend = models.sqs_backends["123456789012"]["us-east-1"]
    queue = backend.get_queue(name)
    every = queue.attributes
    sqs_fast_clock_and_attributes()
    for attribute in (*queue.BASE_ATTRIBUTES, *queue.FIFO_ATTRIBUTES, *queue.KMS_ATTRIBUTES):
        assert queue_attribute(queue, attribute) == every.get(attribute), attribute
        answered = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[attribute]).get("Attributes", {})
        assert answered == ({attribute: str(every[attribute])} if every.get(attribute) is not None else {}), attribute
    assert (
        int(every["ApproximateNumberOfMessages"])
        + int(every["ApproximateNumberOfMessagesNotVisible"])
        + int(every["ApproximateNumberOfMessagesDelayed"])
        == 3
    )  # the counts were really computed


@pytest.mark.parametrize("tier", ["critical", "transactional", "zzz"])
def test_get_metric_data_takes_a_metrics_dimensions_as_a_set(aws, tier):
    """The runtime's datapoints list their dimensions by name; the status read lists them service first."""
    from datetime import datetime, timedelta, timezone

    import boto3

    moto_patches.cloudwatch_dimensions_as_a_set()
    cloudwatch, now = boto3.client("cloudwatch"), datetime.now(timezone.utc)
    put = [{"Name": "Stage", "Value": "local"}, {"Name": "Tier", "Value": tier}, {"Name": "service", "Value": "tj"}]
    cloudwatch.put_metric_data(
        Namespace="N",
        MetricData=[{"MetricName": "M", "Value": 2.0, "Timestamp": now - timedelta(minutes=1), "Dimensions": put}],
    )

    for dimensions in (put, [put[2], put[0], put[1]], [put[1], put[2], put[0]]):
        answer = cloudwatch.get_metric_data(
            MetricDataQueries=[
                {
                    "Id": "m",
                    "MetricStat": {
                        "Metric": {"Namespace": "N", "MetricName": "M", "Dimensions": dimensions},
                        "Period": 60,
                        "Stat": "Sum",
                    },
                }
            ],
            StartTime=now - timedelta(minutes=10),
            EndTime=now + timedelta(minutes=1),
        )
        assert answer["MetricDataResults"][0]["Values"] == [2.0], dimensions


def test_list_metrics_lists_a_series_once_whatever_its_datapoints(aws):
    """A series of three dimensions put four times, in two orders, is one metric (moto listed four)."""
    from datetime import datetime, timezone

    import boto3

    moto_patches.cloudwatch_list_metrics_by_series()
    cloudwatch = boto3.client("cloudwatch")
    one = [{"Name": "Stage", "Value": "local"}, {"Name": "Tier", "Value": "bulk"}, {"Name": "JobType", "Value": "a.b"}]
    other = [{**one[2], "Value": "a.c"}, one[0], one[1]]
    for dimensions in (one, one[::-1], one, other):
        cloudwatch.put_metric_data(
            Namespace="N",
            MetricData=[
                {"MetricName": "M", "Value": 1.0, "Timestamp": datetime.now(timezone.utc), "Dimensions": dimensions}
            ],
        )

    listed = cloudwatch.list_metrics(Namespace="N", MetricName="M")["Metrics"]

    assert sorted(next(d["Value"] for d in m["Dimensions"] if d["Name"] == "JobType") for m in listed) == ["a.b", "a.c"]


def test_get_metric_data_by_series_answers_as_moto_does(aws):
    """The same answers as moto's own code (gap 17), for sums, averages, maxima and counts by minute and
    by hour, a unit filter, both scan orders, a query not returned, a series without a datapoint."""
    import random
    from datetime import datetime, timedelta, timezone

    import boto3
    from moto.cloudwatch.models import CloudWatchBackend, cloudwatch_backends

    moto_patches.cloudwatch_metric_data_by_series()
    cloudwatch, rng = boto3.client("cloudwatch"), random.Random(17)
    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    series = [[{"Name": "Stage", "Value": "s"}, {"Name": "Tier", "Value": t}] for t in ("a", "b", "c")]
    for dimensions in series[:2]:
        cloudwatch.put_metric_data(
            Namespace="N",
            MetricData=[
                {
                    "MetricName": rng.choice(["M", "Other"]),
                    "Value": float(rng.randint(0, 9)),
                    "Unit": rng.choice(["Count", "Seconds"]),
                    "Timestamp": now - timedelta(seconds=rng.randint(0, 4000)),
                    "Dimensions": dimensions,
                }
                for _ in range(300)
            ],
        )
    queries = [
        {
            "Id": f"q{n}",
            "ReturnData": n != 3,
            "MetricStat": {
                "Metric": {"Namespace": "N", "MetricName": "M", "Dimensions": dimensions},
                "Period": period,
                "Stat": stat,
                **({"Unit": "Count"} if n % 4 == 1 else {}),
            },
        }
        for n, (dimensions, period, stat) in enumerate(
            (d, p, s) for d in series for p in (60, 3600) for s in ("Sum", "Average", "Maximum", "SampleCount")
        )
    ]
    backend = cloudwatch_backends["123456789012"]["us-east-1"]
    # What moto's API hands its backend: naive UTC times.
    start, end = (now - timedelta(hours=1)).replace(tzinfo=None), (now + timedelta(minutes=1)).replace(tzinfo=None)

    for scan_by in ("TimestampAscending", "TimestampDescending"):
        ours = backend.get_metric_data(queries, start, end, scan_by)
        moto = CloudWatchBackend.get_metric_data.moto_original(backend, queries, start, end, scan_by)
        assert ours == moto
        assert any(result["values"] for result in ours) and not any(r["id"] == "q3" for r in ours)


#: A canary tier's parts as CDK writes them: the mapping names the alias as ``<function>:live``.
CANARY = {
    "Resources": {
        "Consumer": {"Type": "AWS::Lambda::Function", "Properties": {"FunctionName": "c"}},
        "Version": {"Type": "AWS::Lambda::Version", "Properties": {"FunctionName": {"Ref": "Consumer"}}},
        "Alias": {
            "Type": "AWS::Lambda::Alias",
            "Properties": {
                "FunctionName": {"Ref": "Consumer"},
                "FunctionVersion": {"Fn::GetAtt": ["Version", "Version"]},
                "Name": "live",
            },
            "UpdatePolicy": {
                "CodeDeployLambdaAliasUpdate": {
                    "ApplicationName": {"Ref": "App"},
                    "DeploymentGroupName": {"Ref": "Group"},
                }
            },
        },
        "App": {"Type": "AWS::CodeDeploy::Application", "Properties": {"ComputePlatform": "Lambda"}},
        "Group": {"Type": "AWS::CodeDeploy::DeploymentGroup", "Properties": {"ApplicationName": {"Ref": "App"}}},
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
        "Mapping": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "DependsOn": ["Group", "Queue"],
            "Properties": {
                "EventSourceArn": {"Fn::GetAtt": ["Queue", "Arn"]},
                "FunctionName": {
                    "Fn::Join": ["", [{"Fn::Select": [6, {"Fn::Split": [":", {"Ref": "Alias"}]}]}, ":live"]]
                },
            },
        },
    }
}


def test_a_mapping_that_invokes_an_alias_invokes_its_function_and_no_traffic_shifting_is_deployed():
    original = copy.deepcopy(CANARY)
    direct, left_out = moto_patches.invoke_functions_not_aliases(CANARY)
    assert CANARY == original  # the synthesized template is not touched
    assert left_out == ["Alias", "App", "Group"]
    assert set(direct["Resources"]) == {"Consumer", "Version", "Queue", "Mapping"}
    mapping = direct["Resources"]["Mapping"]
    assert mapping["Properties"]["FunctionName"] == {"Ref": "Consumer"}
    assert mapping["DependsOn"] == ["Queue"]
    # Nothing left refers to what was left out, so nothing else is held back for it.
    assert template.hold_back(direct, {"AWS::SQS::QueuePolicy"})[1] == {}


def test_a_template_without_aliases_is_deployed_as_it_is():
    direct, left_out = moto_patches.invoke_functions_not_aliases(TEMPLATE)
    assert direct == TEMPLATE and direct is not TEMPLATE and left_out == []


def test_a_resource_that_still_needs_a_left_out_one_is_refused():
    refers = copy.deepcopy(CANARY)
    refers["Resources"]["Output"] = {"Type": "AWS::SSM::Parameter", "Properties": {"Value": {"Ref": "Alias"}}}
    with pytest.raises(RuntimeError, match=r"\['Output'\] refer to an alias or CodeDeploy resource"):
        moto_patches.invoke_functions_not_aliases(refers)


def test_a_json_template_is_read_as_json_into_what_moto_s_yaml_read_gives_and_yaml_still_works(aws):
    import boto3
    import yaml
    from moto.cloudformation.models import Stack

    from tests.support.stack import DEFAULT_TIERS, ROUTES, STAGE
    from tests.support.stack import template as stack_template

    moto_patches.cloudformation_json_templates()
    text = json.dumps(stack_template(STAGE, DEFAULT_TIERS, dict(ROUTES)))
    assert Stack.parse_template(text) == yaml.load(text, Loader=yaml.Loader) == json.loads(text)

    cloudformation = boto3.client("cloudformation")
    cloudformation.create_stack(StackName="from-json", TemplateBody=text)
    yaml_text = "\n".join(
        [
            "Resources:",
            "  Queue:",
            "    Type: AWS::SQS::Queue",
            "    Properties:",
            "      QueueName: !Sub '${AWS::StackName}-q'",
        ]
    )
    cloudformation.create_stack(StackName="from-yaml", TemplateBody=yaml_text)
    assert any(url.endswith("/from-yaml-q") for url in boto3.client("sqs").list_queues()["QueueUrls"])
    resources = cloudformation.describe_stack_resources(StackName="from-json")["StackResources"]
    assert len(resources) == len(json.loads(text)["Resources"])
