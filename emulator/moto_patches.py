"""What moto 5.2.5's CloudFormation lacks to deploy the real template, patched in one place.

Each gap was checked against moto 5.2.5 (``moto/cloudformation/parsing.py`` and the service
models); nothing here runs unless the gap is really there. The template itself is never edited,
except that resources moto cannot create are held back from ``CreateStack`` and created right after
it through the services' own APIs, from their own template properties.

Gaps, in deployment order:

1. **The public Powertools layer parameter.** The template resolves the layer ARN from
   ``/aws/service/powertools/...`` (a parameter of type ``AWS::SSM::Parameter::Value<String>``).
   moto has no such public parameter, refuses ``PutParameter`` under ``/aws/`` (reserved), and
   resolves every SSM-typed parameter's ``Default`` even when a value is passed. So we seed it in
   moto's SSM store directly (the server runs in this process) with a fake layer ARN: the functions
   run locally on the virtualenv's pinned Powertools, the version the layer setting names.
2. **CDK's bootstrap version** (``/cdk-bootstrap/hnb659fds/version``, checked by the template's
   ``CheckBootstrapVersion`` rule): normally written by ``cdk bootstrap``; we write it with
   ``PutParameter`` like bootstrap does.
3. **Resource types moto's CloudFormation skips** (``AWS::CloudWatch::Alarm``,
   ``AWS::SQS::QueuePolicy``, ``AWS::SNS::TopicPolicy``, ``AWS::S3::BucketPolicy``; moto warns "No
   Moto CloudFormation support") and the resources that reference them (the dashboard names the
   alarms' ARNs, which would fail the whole stack; an alarm's Lambda permission names its ARN too):
   held back from ``CreateStack``, then created by :func:`create_held_back` with ``PutMetricAlarm`` /
   ``SetQueueAttributes`` / ``SetTopicAttributes`` / ``PutBucketPolicy`` / ``PutDashboard`` /
   ``AddPermission``, their ``Ref`` / ``Fn::GetAtt`` / ``Fn::Join`` / ``Fn::Sub``
   resolved against the deployed stack.
   The list is read from moto's own model registry, so a moto that learns a type stops needing this.
   A bucket policy loses its TLS-only ``Deny`` (``aws:SecureTransport: false``) on the way: moto's
   S3 evaluates bucket policies without their conditions, so that statement would refuse every
   request, while each local request stands for an SDK call over TLS, which AWS lets through
   (``tests/cdk/hops.py`` checks the real policy against AWS's rules).
4. **Properties moto's CloudFormation ignores**: a table's ``TimeToLiveSpecification`` and
   ``PointInTimeRecoverySpecification``, a bucket's ``VersioningConfiguration`` and
   ``PublicAccessBlockConfiguration``; applied with DynamoDB's and S3's APIs when the deployed
   resource lacks them (:func:`apply_ignored_properties`). A bucket's ``LifecycleConfiguration`` is
   not applied: moto never runs a lifecycle rule, so locally the discard archive never expires.
   A DLQ's ``RedriveAllowPolicy`` cannot be applied: moto's SQS has no such attribute
   (``GetQueueAttributes`` rejects the name), so locally a DLQ admits any source queue. Not
   emulated, and said so.
5. **moto's own event source mappings** would invoke the functions in Docker on every
   ``SendMessage`` (and, without Docker, fail each batch until SQS's redrive moves it to the DLQ
   without reasons). The copy of the template given to ``CreateStack`` creates them *disabled*
   (:func:`disable_event_source_mappings`, the one property local mode changes), so no message
   sent while the stack is still being deployed reaches them; the local runtime runs the mappings
   from their deployed settings. Not deleted: moto's queue keeps its own reference to a deleted
   mapping and would still invoke it.
6. **``ApproximateAgeOfOldestMessage``**: moto neither computes nor publishes it; the alarm
   evaluator reads it from moto's store (:func:`oldest_message_age_seconds`).
7. **moto's DynamoDB is not thread-safe.** A ``TransactWriteItems`` that fails (a condition, as
   the payments job's "already applied" marker does on every duplicate) rolls back by restoring a
   whole-table snapshot taken when it started, wiping what other requests committed meanwhile;
   a snapshot taken while another thread writes can also crash (HTTP 500). DynamoDB makes every
   request atomic, so the embedded server handles one DynamoDB request at a time
   (:func:`serialize_dynamodb_requests`); callers stay concurrent.

8. **EventBridge Scheduler**: moto's CloudFormation has no ``AWS::Scheduler::*`` types (held
   back and created with ``CreateScheduleGroup`` / ``CreateSchedule``, gap 3), and moto stores
   schedules but never fires them: ``emulator.scheduler`` fires the due ones.

11. **SQS message move tasks** (``StartMessageMoveTask``, ``ListMessageMoveTasks``: the native
   replay): moto has neither. :func:`sqs_message_move_tasks` adds both to moto's SQS, doing what the
   SQS Developer Guide documents for a DLQ redrive: every message of the source goes to the
   destination with its body and message attributes unchanged, as a *new* message (a new message
   id, enqueue time and receive count), and leaves the source. Locally the task runs to completion
   when it starts (``MaxNumberOfMessagesPerSecond`` is not paced) and moves the messages visible
   then; the ones in flight stay, as SQS moves a message only once it is visible.

12. **moto's SQS reads a set other threads change.** A ``ReceiveMessage`` lists the message groups
    of the messages in flight by iterating a set that concurrent receives and deletes modify; with
    messages that carry a ``MessageGroupId`` (a fair queue's tenants) it fails with "Set changed
    size during iteration" (HTTP 500), after counting receives it never delivers.
    :func:`sqs_thread_safe_message_groups` reads that set from a snapshot, taken again until
    whole: a receive sees a consistent view, as SQS's are.

13. **moto's server lists its own package folder on every request** (``list_of_moto_modules``:
    ``listdir`` and an ``isdir`` per entry, twice per request, under the dispatcher's lock), which
    took a tenth of the embedded AWS's time under load. :func:`moto_server_module_list_once` lists
    it once per process (the installed package does not change while it runs).

14. **moto's SQS does quadratic work per request.** It reads the clock by building two datetimes for
    every message it looks at, and ``GetQueueAttributes`` computes every attribute of the queue
    (three passes over its messages) once per attribute asked, which a receive does for every
    message it considers (its retention check): with a few hundred messages queued that was most of
    the embedded AWS's time. :func:`sqs_fast_clock_and_attributes` reads the same clock with
    ``time.time()`` and computes only the attributes asked for, each as ``Queue.attributes`` does
    (a test compares both for every attribute of standard, FIFO and encrypted queues).

15. **moto's ``GetMetricData`` compares a metric's dimensions in the order they were listed.** It
    sorts both lists before comparing them, but its ``Dimension`` orders by comparing one's value to
    the other's *name*, so the sort keeps the order given: a query listing ``service, Stage, Tier``
    found the datapoints the runtime put as ``Stage, Tier, service`` for tier ``critical`` and not
    for ``transactional`` (the console's and the live view's figures of that tier stayed empty).
    CloudWatch takes dimensions as a set; :func:`cloudwatch_dimensions_as_a_set` orders them by
    name, then value, so the sort makes them one.

16. **moto's ``ListMetrics`` lists a metric once per datapoint.** Its test of "already listed"
    (``are_dimensions_same``) requires every dimension of one series to equal every dimension of
    the other, true only for a single dimension: a series of ``Stage, Tier, JobType`` was listed
    once per datapoint, so ``status``'s job types took a page per 500 datapoints, and each page
    compared every datapoint with every one listed. :func:`cloudwatch_list_metrics_by_series`
    compares dimensions as a set, so a series is listed once, as CloudWatch does.

17. **moto's ``GetMetricData`` scans every datapoint for every period of every query.** A query of
    the last hour by minute walked all the datapoints kept (moto keeps them all) 60 times, sorting
    each one's dimensions each time: after an hour of local traffic the console's refresh took
    seconds, most of it there. :func:`cloudwatch_metric_data_by_series` groups the datapoints in the
    time range by series once per call, then puts each query's into its periods: the same answers
    (a test compares them with moto's), in time linear in the datapoints.

18. **Aliases and CodeDeploy** (a tier's ``deployment`` other than ``all_at_once``): moto's
    CloudFormation has no ``AWS::Lambda::Alias`` and no ``AWS::CodeDeploy::*``, and nothing local
    would shift traffic between versions: local mode runs one version of each function, the code of
    the job folder as it is now. :func:`invoke_functions_not_aliases` leaves the alias, the
    CodeDeploy application and deployment group out of the copy given to ``CreateStack`` and points
    each mapping that invoked an alias at the alias's function, so its records reach the same code
    the alias would (the function's version, its alarms, its role and its retained parts are
    deployed as on AWS). Said in docs/local.md.

19. **moto's ``SendMessageBatch`` drops each entry's ``MessageSystemAttributes``** (its
    ``SendMessage`` keeps them): a job published or copied in a batch lost its ``AWSTraceHeader``,
    which SQS keeps and Lambda hands the consumer, so locally no job linked to its publisher's trace.
    :func:`sqs_batch_system_attributes` hands each entry's system attributes to the message moto
    makes of it.

20. **moto's CloudFormation parses a JSON template as YAML** (JSON is YAML, and moto tries YAML
    first), with PyYAML's pure-Python loader: the local stack's template (130 KB) took 355 ms of CPU
    to read at each ``CreateStack``, the tests' miniature stack 13 ms, where ``json.loads`` takes
    1.5 ms and 0.1 ms. :func:`cloudformation_json_templates` reads a template that is JSON as JSON
    (the same dictionary: a test compares them) and leaves any other text to moto's YAML.

21. **moto's SQS is not thread-safe.** A ``ReceiveMessage`` checks that a message is visible, then
    marks it received, with nothing held in between: two receives on the same queue both take the
    message, so it runs twice at once and its receive count goes up by two (a job's letter then
    names more attempts than its policy allows); two receives that both find it past the redrive's
    ``maxReceiveCount`` both move it, and the second fails (HTTP 500). A ``DeleteMessage`` builds
    the queue's new list of messages, then puts it in place, so a message another thread sends in
    between is dropped. SQS makes each of these atomic, so :func:`serialize_sqs_requests` runs one
    call of moto's SQS at a time in this process; a receive that long-polls gives the turn up while
    it waits, as SQS serves other requests meanwhile.

moto never evaluates alarms, publishes no SQS or Lambda metrics and extracts no EMF from logs:
``emulator.metrics`` and ``emulator.alarms`` emulate those services' parts.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from emulator.template import Resolver, depends_on, hold_back, references

#: CDK's default bootstrap qualifier; the template's BootstrapVersion parameter names it.
BOOTSTRAP_VERSION_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
#: Any version >= 6 satisfies the template's rule; this is the bootstrap template CDK 2.1148 ships.
BOOTSTRAP_VERSION = "30"
POWERTOOLS_PARAMETER_PREFIX = "/aws/service/powertools/"
#: The condition of a TLS-only ``Deny`` (``enforce_ssl``): true only for a request without TLS.
TLS_ONLY_DENY_CONDITION = {"Bool": {"aws:SecureTransport": "false"}}


# --------------------------------------------------------------------------------------------
# Gaps 1 and 2: SSM parameters the template reads


def seed_parameters(template: Mapping[str, Any], ssm: Any, account_id: str, region: str) -> dict[str, str]:
    """Create the SSM parameters the template's SSM-typed parameters read. Returns ``{name: value}``."""
    seeded: dict[str, str] = {}
    for parameter in template.get("Parameters", {}).values():
        name = parameter.get("Default")
        if not parameter.get("Type", "").startswith("AWS::SSM::Parameter::") or not name:
            continue
        if name == BOOTSTRAP_VERSION_PARAMETER:
            ssm.put_parameter(Name=name, Value=BOOTSTRAP_VERSION, Type="String", Overwrite=True)
            seeded[name] = BOOTSTRAP_VERSION
        elif name.startswith(POWERTOOLS_PARAMETER_PREFIX):
            value = fake_powertools_layer_arn(name, account_id, region)
            _seed_reserved_parameter(name, value, account_id, region)
            seeded[name] = value
        else:
            raise RuntimeError(
                f"the template reads SSM parameter {name!r}, which local mode does not know how to provide"
            )
    return seeded


def fake_powertools_layer_arn(parameter_name: str, account_id: str, region: str) -> str:
    """A well-formed layer ARN naming what the parameter stands for (never resolved: nothing runs it)."""
    architecture, runtime, version = parameter_name[len(POWERTOOLS_PARAMETER_PREFIX) :].split("/")[1:4]
    layer = f"AWSLambdaPowertoolsPythonV3-{runtime.replace('.', '')}-{architecture.replace('_', '')}-local-{version}"
    return f"arn:aws:lambda:{region}:{account_id}:layer:{re.sub(r'[^A-Za-z0-9_-]', '-', layer)}:1"


def _seed_reserved_parameter(name: str, value: str, account_id: str, region: str) -> None:
    """Write a parameter under ``/aws/`` into moto's store (its API refuses reserved names)."""
    from moto.core.utils import utcnow
    from moto.ssm.models import Parameter, ssm_backends

    versions = ssm_backends[account_id][region]._parameters[name]
    if not versions:
        # moto's BaseModel declares has_cfn_attr and is_created abstract; moto builds Parameter like this too.
        versions.append(
            Parameter(  # type: ignore[abstract]
                account_id=account_id,
                name=name,
                value=value,
                parameter_type="String",
                description=None,
                allowed_pattern=None,
                keyid=None,
                last_modified_date=utcnow(),
                version=1,
                data_type="text",
            )
        )


# --------------------------------------------------------------------------------------------
# Gap 3: resource types moto's CloudFormation cannot create


def unsupported_types(template: Mapping[str, Any]) -> set[str]:
    """Resource types of ``template`` that moto's CloudFormation would skip."""
    from moto.cloudformation.parsing import NULL_MODELS, get_model_map

    supported = set(get_model_map()) | set(NULL_MODELS)
    return {
        resource["Type"]
        for resource in template["Resources"].values()
        if resource["Type"] not in supported and not resource["Type"].startswith("Custom::")
    }


def split_template(template: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``(what CreateStack gets, {logical id: resource held back})``, held-back ones in creation order."""
    return hold_back(template, unsupported_types(template))


#: The properties of ``AWS::SNS::Subscription`` that are ``Subscribe`` attributes (the rest are parameters).
SUBSCRIPTION_ATTRIBUTES = (
    "RedrivePolicy",
    "FilterPolicy",
    "FilterPolicyScope",
    "RawMessageDelivery",
    "DeliveryPolicy",
    "SubscriptionRoleArn",
)


def create_held_back(
    held: Mapping[str, Mapping[str, Any]],
    resolver: Resolver,
    clients: Callable[[str], Any],
    account_id: str,
    region: str,
) -> None:
    """Create each held-back resource through its service's API (see gap 3)."""
    for logical_id, resource in held.items():
        kind, properties = resource["Type"], resolver.resolve(resource.get("Properties", {}))
        if kind == "AWS::CloudWatch::Alarm":
            clients("cloudwatch").put_metric_alarm(**properties)
            name = properties["AlarmName"]
            resolver.physical_ids[logical_id] = name
            resolver.attributes[(logical_id, "Arn")] = f"arn:aws:cloudwatch:{region}:{account_id}:alarm:{name}"
        elif kind == "AWS::Lambda::Permission":  # an alarm's Lambda action (it names the alarm's ARN)
            clients("lambda").add_permission(
                StatementId=logical_id,
                **{
                    k: properties[k]
                    for k in ("FunctionName", "Action", "Principal", "SourceArn", "SourceAccount")
                    if k in properties
                },
            )
            resolver.physical_ids[logical_id] = logical_id
        elif kind == "AWS::SQS::QueuePolicy":
            for queue_url in properties["Queues"]:
                clients("sqs").set_queue_attributes(
                    QueueUrl=queue_url, Attributes={"Policy": json.dumps(properties["PolicyDocument"])}
                )
        elif kind == "AWS::SNS::TopicPolicy":
            for topic_arn in properties["Topics"]:
                clients("sns").set_topic_attributes(
                    TopicArn=topic_arn, AttributeName="Policy", AttributeValue=json.dumps(properties["PolicyDocument"])
                )
        elif kind == "AWS::S3::BucketPolicy":
            document = properties["PolicyDocument"]
            statements = [
                s
                for s in document["Statement"]
                if not (s["Effect"] == "Deny" and s.get("Condition") == TLS_ONLY_DENY_CONDITION)
            ]
            if statements:
                clients("s3").put_bucket_policy(
                    Bucket=properties["Bucket"], Policy=json.dumps({**document, "Statement": statements})
                )
        elif kind == "AWS::Scheduler::ScheduleGroup":
            clients("scheduler").create_schedule_group(Name=properties["Name"])
            resolver.physical_ids[logical_id] = properties["Name"]
        elif kind == "AWS::Scheduler::Schedule":
            clients("scheduler").create_schedule(**properties)
            resolver.physical_ids[logical_id] = properties["Name"]
        elif kind == "AWS::SNS::Subscription":  # alarm_email / alarm_https_url: nothing is ever delivered locally
            attributes = {
                key: json.dumps(value)
                if isinstance(value, (dict, list))
                else str(value).lower()
                if isinstance(value, bool)
                else str(value)
                for key, value in properties.items()
                if key in SUBSCRIPTION_ATTRIBUTES
            }
            answer = clients("sns").subscribe(
                TopicArn=properties["TopicArn"],
                Protocol=properties["Protocol"],
                Endpoint=properties["Endpoint"],
                Attributes=attributes,
                ReturnSubscriptionArn=True,
            )
            resolver.physical_ids[logical_id] = answer["SubscriptionArn"]
        elif kind == "AWS::Lambda::EventInvokeConfig":  # a breaker's failed events: kept, never delivered locally
            clients("lambda").put_function_event_invoke_config(
                **{
                    k: properties[k]
                    for k in ("FunctionName", "Qualifier", "MaximumRetryAttempts", "DestinationConfig")
                    if k in properties
                }
            )
            resolver.physical_ids[logical_id] = logical_id
        elif kind == "AWS::CloudWatch::Dashboard":
            clients("cloudwatch").put_dashboard(
                DashboardName=properties["DashboardName"], DashboardBody=properties["DashboardBody"]
            )
            resolver.physical_ids[logical_id] = properties["DashboardName"]
        else:
            raise NotImplementedError(
                f"moto cannot create {kind} ({logical_id}); add it to moto_patches.create_held_back"
            )
        resolver.types[logical_id] = kind


def deployed_attribute(clients: Callable[[str], Any]) -> Callable[[str, str, str], str]:
    """``attribute(type, physical id, name)`` for ``Fn::GetAtt`` on resources CloudFormation created."""

    def attribute(kind: str, physical_id: str, name: str) -> str:
        if kind == "AWS::SQS::Queue" and name in ("Arn", "QueueName", "QueueUrl"):
            if name == "QueueUrl":
                return physical_id
            arn = clients("sqs").get_queue_attributes(QueueUrl=physical_id, AttributeNames=["QueueArn"])
            queue_arn: str = arn["Attributes"]["QueueArn"]
            return queue_arn if name == "Arn" else queue_arn.rsplit(":", 1)[1]
        if kind == "AWS::SNS::Topic" and name in ("TopicArn", "TopicName"):
            return physical_id if name == "TopicArn" else physical_id.rsplit(":", 1)[1]
        if kind == "AWS::Lambda::Function" and name == "Arn":
            return str(clients("lambda").get_function_configuration(FunctionName=physical_id)["FunctionArn"])
        if kind == "AWS::IAM::Role" and name == "Arn":
            return str(clients("iam").get_role(RoleName=physical_id)["Role"]["Arn"])
        if kind == "AWS::DynamoDB::Table" and name == "Arn":
            return str(clients("dynamodb").describe_table(TableName=physical_id)["Table"]["TableArn"])
        if kind == "AWS::Events::Rule" and name == "Arn":  # a trigger's queue policy names its rule
            return _rule_arn(clients("events"), physical_id)
        if kind == "AWS::S3::Bucket" and name == "Arn":
            return f"arn:aws:s3:::{physical_id}"  # a bucket's ARN is its name (no region, no account)
        raise NotImplementedError(f"Fn::GetAtt {kind}.{name} is not resolved by local mode; extend moto_patches")

    return attribute


# --------------------------------------------------------------------------------------------
# Gap 4: properties moto's CloudFormation ignores


def _rule_arn(events: Any, name: str) -> str:
    """The ARN of the rule ``name``, on whichever bus it is (a rule's physical id is its name, not its bus)."""
    for bus in events.list_event_buses().get("EventBuses", []):
        try:
            return str(events.describe_rule(Name=name, EventBusName=bus["Name"])["Arn"])
        except events.exceptions.ResourceNotFoundException:
            continue
    raise LookupError(f"rule {name} is on no event bus of the embedded AWS")


def apply_ignored_properties(
    template: Mapping[str, Any], resolver: Resolver, clients: Callable[[str], Any]
) -> list[str]:
    """Apply the properties of gap 4 where the deployed resource lacks them; returns what was applied."""
    applied = []
    for logical_id, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        physical_id = resolver.physical_ids.get(logical_id)
        if resource["Type"] == "AWS::DynamoDB::Table" and physical_id is not None:
            dynamodb = clients("dynamodb")
            ttl = properties.get("TimeToLiveSpecification")
            status = dynamodb.describe_time_to_live(TableName=physical_id)["TimeToLiveDescription"]["TimeToLiveStatus"]
            if ttl and ttl.get("Enabled") and status != "ENABLED":
                dynamodb.update_time_to_live(TableName=physical_id, TimeToLiveSpecification=ttl)
                applied.append(f"{logical_id}.TimeToLiveSpecification")
            pitr = properties.get("PointInTimeRecoverySpecification")
            backups = dynamodb.describe_continuous_backups(TableName=physical_id)["ContinuousBackupsDescription"]
            pitr_status = backups.get("PointInTimeRecoveryDescription", {}).get("PointInTimeRecoveryStatus")
            if pitr and pitr.get("PointInTimeRecoveryEnabled") and pitr_status != "ENABLED":
                dynamodb.update_continuous_backups(TableName=physical_id, PointInTimeRecoverySpecification=pitr)
                applied.append(f"{logical_id}.PointInTimeRecoverySpecification")
        if resource["Type"] == "AWS::S3::Bucket" and physical_id is not None:
            applied += _apply_bucket_properties(logical_id, properties, physical_id, clients("s3"))
    return applied


def _apply_bucket_properties(logical_id: str, properties: Mapping[str, Any], bucket: str, s3: Any) -> list[str]:
    """Versioning (an archived letter is never overwritten silently) and the public access block."""
    from botocore.exceptions import ClientError

    applied = []
    versioning = properties.get("VersioningConfiguration")
    if versioning and s3.get_bucket_versioning(Bucket=bucket).get("Status") != versioning["Status"]:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": versioning["Status"]})
        applied.append(f"{logical_id}.VersioningConfiguration")
    block = properties.get("PublicAccessBlockConfiguration")
    if block:
        try:
            current = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        except ClientError:  # NoSuchPublicAccessBlockConfiguration
            current = None
        if current != block:
            s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=dict(block))
            applied.append(f"{logical_id}.PublicAccessBlockConfiguration")
    return applied


# --------------------------------------------------------------------------------------------
# Gap 5: moto's own event source mappings

EVENT_SOURCE_MAPPING = "AWS::Lambda::EventSourceMapping"


def disable_event_source_mappings(deployable: dict[str, Any]) -> list[str]:
    """Set ``Enabled: false`` on every event source mapping of ``deployable`` (the copy given to
    ``CreateStack``; the synthesized template is not touched), so moto's SQS never hands a message
    to a mapping that would run the function in Docker, not even while the stack is being created.
    Returns the logical ids changed."""
    changed = []
    for logical_id, resource in deployable["Resources"].items():
        if resource["Type"] == EVENT_SOURCE_MAPPING:
            resource.setdefault("Properties", {})["Enabled"] = False
            changed.append(logical_id)
    return sorted(changed)


# --------------------------------------------------------------------------------------------
# Gap 18: aliases and CodeDeploy

LAMBDA_ALIAS = "AWS::Lambda::Alias"
#: What a canary tier adds that shifts traffic, which local mode leaves out (it runs one version).
TRAFFIC_SHIFTING = (LAMBDA_ALIAS, "AWS::CodeDeploy::Application", "AWS::CodeDeploy::DeploymentGroup")


def invoke_functions_not_aliases(template: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``(a copy of template without aliases and CodeDeploy, the logical ids left out)``: a mapping
    that invoked an alias invokes the alias's function instead (the synthesized template is not
    touched). A template without an alias comes back as an equal copy."""
    copy: dict[str, Any] = json.loads(json.dumps(template))
    resources = copy["Resources"]
    aliases = {lid: r["Properties"]["FunctionName"] for lid, r in resources.items() if r["Type"] == LAMBDA_ALIAS}
    for resource in resources.values():
        if resource["Type"] == EVENT_SOURCE_MAPPING:
            target = references(resource.get("Properties", {}).get("FunctionName", {})) & set(aliases)
            if target:
                (alias,) = target
                resource["Properties"]["FunctionName"] = aliases[alias]
    left_out = sorted(lid for lid, r in resources.items() if r["Type"] in TRAFFIC_SHIFTING)
    for lid in left_out:
        resources.pop(lid)
    for resource in resources.values():
        if depends_on(resource) & set(left_out):
            resource["DependsOn"] = sorted(depends_on(resource) - set(left_out))
    still = {lid for lid, r in resources.items() if references(r) & set(left_out)}
    if still:
        raise RuntimeError(f"{sorted(still)} refer to an alias or CodeDeploy resource local mode leaves out")
    return copy, left_out


# --------------------------------------------------------------------------------------------
# Gap 6: a queue metric moto does not compute


def oldest_message_age_seconds(queue_name: str, account_id: str, region: str) -> float | None:
    """``ApproximateAgeOfOldestMessage`` of a queue, read from moto's store (the server runs in this process).

    moto's SQS has no such attribute or metric; its store keeps each message's ``SentTimestamp``,
    so the age of the oldest message not yet deleted (visible, in flight or delayed) is exact here.
    ``None`` when the queue is unknown.
    """
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[account_id][region].queues.get(queue_name)
    if queue is None:
        return None
    sent = [m.sent_timestamp for m in list(queue._messages) if m.sent_timestamp is not None]
    # moto leaves Message.sent_timestamp unannotated (inferred None); it is an int once sent.
    return max(0.0, time.time() - min(sent) / 1000) if sent else 0.0  # type: ignore[type-var, operator]


# --------------------------------------------------------------------------------------------
# Gap 7: one DynamoDB request at a time

_DYNAMODB_REQUESTS = threading.RLock()


def serialize_dynamodb_requests() -> None:
    """Make moto's DynamoDB handle one request at a time in this process (idempotent)."""
    from moto.dynamodb.responses import DynamoHandler

    original = DynamoHandler.call_action
    if getattr(original, "serialized_by_tiered_jobs", False):
        return

    def call_action(self: Any) -> Any:
        with _DYNAMODB_REQUESTS:
            return original(self)

    call_action.serialized_by_tiered_jobs = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = call_action  # type: ignore[method-assign]


# --------------------------------------------------------------------------------------------
# Gap 8: percentile statistics in GetMetricData

_PERCENTILE = re.compile(r"^p(\d{1,2}(\.\d+)?|100)$")


def cloudwatch_percentiles() -> None:
    """Let moto's ``GetMetricData`` answer ``pNN`` statistics (it returns nothing for them; idempotent).

    CloudWatch computes percentiles from the raw values; the console's duration p50/p99 ask for
    them. The value is the nearest-rank percentile of the period's values, as the local alarm
    evaluator computes it (``emulator.metrics.statistic``).
    """
    from moto.cloudwatch.models import Statistics

    from emulator.metrics import statistic

    original = Statistics.get_statistics_for_type
    if getattr(original, "percentiles_by_tiered_jobs", False):
        return

    def get_statistics_for_type(self: Any, stat: str) -> Any:
        if _PERCENTILE.match(stat):
            return statistic(self.metric_single_values_list, stat)
        return original(self, stat)

    get_statistics_for_type.percentiles_by_tiered_jobs = True  # type: ignore[attr-defined]
    Statistics.get_statistics_for_type = get_statistics_for_type  # type: ignore[method-assign]


# --------------------------------------------------------------------------------------------
# Gap 15: a metric's dimensions are a set


def cloudwatch_dimensions_as_a_set() -> None:
    """Order moto's CloudWatch ``Dimension`` by name, then value (idempotent), so the sorted lists
    ``GetMetricData`` compares are equal whatever order the query and the datapoint listed them in."""
    from moto.cloudwatch.models import Dimension

    if getattr(Dimension.__lt__, "ordered_by_tiered_jobs", False):
        return

    def less_than(self: Any, other: Any) -> bool:
        return (self.name or "", self.value or "") < (other.name or "", other.value or "")

    less_than.ordered_by_tiered_jobs = True  # type: ignore[attr-defined]
    Dimension.__lt__ = less_than  # type: ignore[method-assign]


# --------------------------------------------------------------------------------------------
# Gap 16: ListMetrics lists a series once


def cloudwatch_list_metrics_by_series() -> None:
    """Make moto's "same dimensions" test of ``ListMetrics`` compare them as sets (idempotent)."""
    from moto.cloudwatch import models

    if getattr(models.are_dimensions_same, "by_tiered_jobs", False):
        return

    def are_dimensions_same(metric_dimensions: list[Any], dimensions: list[Any]) -> bool:
        def pairs(items: list[Any]) -> set[tuple[str, str]]:
            return {(item.name, item.value) for item in items}

        return len(metric_dimensions) == len(dimensions) and pairs(metric_dimensions) == pairs(dimensions)

    are_dimensions_same.by_tiered_jobs = True  # type: ignore[attr-defined]
    models.are_dimensions_same = are_dimensions_same


# --------------------------------------------------------------------------------------------
# Gap 17: GetMetricData grouped by series


def cloudwatch_metric_data_by_series() -> None:
    """Answer moto's ``GetMetricData`` of metric queries with dimensions from the datapoints grouped by
    series (idempotent). Anything else (metric math, Metrics Insights, a query without dimensions, a
    bad time range) goes to moto's own code as before."""
    from collections import defaultdict

    from moto.cloudwatch.models import CloudWatchBackend, Statistics

    original = CloudWatchBackend.get_metric_data
    if getattr(original, "by_series_tiered_jobs", False):
        return

    def get_metric_data(
        self: Any, queries: list[dict[str, Any]], start_time: Any, end_time: Any, scan_by: str = "TimestampAscending"
    ) -> list[dict[str, Any]]:
        start, end = start_time.replace(microsecond=0), end_time.replace(microsecond=0)
        dimensioned = all(query.get("MetricStat", {}).get("Metric", {}).get("Dimensions") for query in queries)
        if start >= end or not dimensioned:
            return original(self, queries, start_time, end_time, scan_by)
        series: dict[tuple[str, str, frozenset[tuple[str, str]]], list[Any]] = defaultdict(list)
        for datum in self.get_all_metrics():
            if start <= datum.timestamp < end:
                key = (datum.namespace, datum.name, frozenset((d.name, d.value) for d in datum.dimensions))
                series[key].append(datum)
        results = []
        for query in queries:
            stat_query = query["MetricStat"]
            metric, stat, unit = stat_query["Metric"], stat_query["Stat"], stat_query.get("Unit")
            period = int(stat_query["Period"])
            dimensions = frozenset((d["Name"], d["Value"]) for d in metric["Dimensions"])
            periods: dict[int, list[Any]] = defaultdict(list)
            for datum in series.get((metric["Namespace"], metric["MetricName"], dimensions), ()):
                if not unit or datum.unit == unit:
                    periods[int((datum.timestamp - start).total_seconds()) // period].append(datum)
            values, timestamps = [], []
            for index in sorted(periods):
                stats = Statistics([stat], start + timedelta(seconds=index * period))
                stats.metric_data = periods[index]
                values.append(stats.get_statistics_for_type(stat))
                timestamps.append(stats.timestamp)
            if scan_by == "TimestampDescending":
                values.reverse()
                timestamps.reverse()
            if query.get("ReturnData", True):
                results.append(
                    {
                        "id": query["Id"],
                        "label": query.get("Label") or f"{metric['MetricName']} {stat}",
                        "values": values,
                        "timestamps": timestamps,
                        "status_code": "Complete",
                    }
                )
        return results

    get_metric_data.by_series_tiered_jobs = True  # type: ignore[attr-defined]
    get_metric_data.moto_original = original  # type: ignore[attr-defined]  # what the test compares with
    CloudWatchBackend.get_metric_data = get_metric_data  # type: ignore[method-assign]


# --------------------------------------------------------------------------------------------
# Gap 11: SQS message move tasks (the native replay)

#: ``{source queue ARN: [task, ...]}`` most recent first, as ``ListMessageMoveTasks`` answers.
_MOVE_TASKS: dict[str, list[dict[str, Any]]] = {}


def sqs_message_move_tasks() -> None:
    """Give moto's SQS ``StartMessageMoveTask`` and ``ListMessageMoveTasks`` (idempotent; a moto that
    has them keeps its own)."""
    import uuid

    from moto.core.responses import ActionResult
    from moto.sqs.responses import SQSResponse

    if hasattr(SQSResponse, "start_message_move_task"):
        return

    def start_message_move_task(self: Any) -> Any:
        backend = self.sqs_backend
        source_arn = self._get_param("SourceArn")
        source = backend.get_queue(source_arn.rsplit(":", 1)[-1])
        destination_arn = self._get_param("DestinationArn")
        if destination_arn is None:  # back to the queues whose DLQ it is
            (origin,) = backend.list_dead_letter_source_queues(source.name)
            destination_arn = origin.queue_arn
        moved = move_messages(backend, source.name, destination_arn.rsplit(":", 1)[-1])
        handle = str(uuid.uuid4())
        _MOVE_TASKS.setdefault(source_arn, []).insert(
            0,
            {
                "TaskHandle": handle,
                "Status": "COMPLETED",
                "SourceArn": source_arn,
                "DestinationArn": destination_arn,
                "ApproximateNumberOfMessagesMoved": moved,
                "ApproximateNumberOfMessagesToMove": moved,
                "StartedTimestamp": int(time.time() * 1000),
            },
        )
        return ActionResult({"TaskHandle": handle})

    def list_message_move_tasks(self: Any) -> Any:
        tasks = _MOVE_TASKS.get(self._get_param("SourceArn"), [])
        return ActionResult({"Results": tasks[: int(self._get_param("MaxResults") or 1)]})

    SQSResponse.start_message_move_task = start_message_move_task  # type: ignore[attr-defined]
    SQSResponse.list_message_move_tasks = list_message_move_tasks  # type: ignore[attr-defined]


def move_messages(backend: Any, source_name: str, destination_name: str) -> int:
    """Move every visible message of ``source_name`` to ``destination_name`` as a new message; returns how many."""
    source = backend.get_queue(source_name)
    with source._messages_lock:
        visible = [m for m in source._messages if m.visible and not m.delayed]
        for message in visible:
            backend.send_message(
                destination_name,
                message.body,
                message_attributes=dict(message.message_attributes),
                group_id=message.group_id,
                validate_group_id=False,
            )
            source._messages.remove(message)
    return len(visible)


# --------------------------------------------------------------------------------------------
# Gap 19: a batch's system attributes


def sqs_batch_system_attributes() -> None:
    """Keep each ``SendMessageBatch`` entry's ``MessageSystemAttributes``, as ``SendMessage`` does (idempotent).

    moto's batch sends each entry through ``SQSBackend.send_message`` in order, without them; the
    batch hands them over in that order, per thread (the server answers requests on many)."""
    from moto.sqs.models import SQSBackend

    if getattr(SQSBackend.send_message_batch, "system_attributes_by_tiered_jobs", False):
        return
    batch, send = SQSBackend.send_message_batch, SQSBackend.send_message
    pending = threading.local()

    def send_message_batch(backend: Any, queue_name: str, entries: dict[str, dict[str, Any]]) -> Any:
        pending.system = [entry.get("MessageSystemAttributes") for entry in entries.values()]
        try:
            return batch(backend, queue_name, entries)
        finally:
            pending.system = None

    def send_message(backend: Any, *args: Any, **kwargs: Any) -> Any:
        queued = getattr(pending, "system", None)
        if queued:
            system = queued.pop(0)
            if system and kwargs.get("system_attributes") is None:
                kwargs["system_attributes"] = system
        return send(backend, *args, **kwargs)

    send_message_batch.system_attributes_by_tiered_jobs = True  # type: ignore[attr-defined]
    SQSBackend.send_message_batch = send_message_batch  # type: ignore[method-assign, assignment]
    SQSBackend.send_message = send_message  # type: ignore[method-assign, assignment]


# --------------------------------------------------------------------------------------------
# Gap 12: a consistent view of the in-flight message groups


def sqs_thread_safe_message_groups() -> None:
    """Make moto's ``Queue.pending_message_groups`` safe to read while other threads receive (idempotent)."""
    from moto.sqs.models import Queue

    current = Queue.__dict__["pending_message_groups"]
    if getattr(current.fget, "snapshot_by_tiered_jobs", False):
        return

    def pending_message_groups(queue: Any) -> set[str]:
        while True:
            try:
                pending = tuple(queue._pending_messages)
            except RuntimeError:  # changed while copied: another thread received or deleted; copy again
                continue
            return {message.group_id for message in pending if message.group_id is not None}

    pending_message_groups.snapshot_by_tiered_jobs = True  # type: ignore[attr-defined]
    Queue.pending_message_groups = property(pending_message_groups)  # type: ignore[method-assign, assignment]


# --------------------------------------------------------------------------------------------
# Gap 21: one SQS call at a time, a long poll waiting without its turn

#: Reentrant: moto's backend calls its own methods (a receive reads its queue with ``get_queue``).
_SQS_REQUESTS = threading.RLock()


def serialize_sqs_requests() -> None:
    """Make each public method of moto's ``SQSBackend`` run alone in this process (idempotent).

    Each queue's message condition shares the same lock, so a receive that long-polls
    (``Queue.wait_for_messages``, a ``Condition.wait``) releases it, however deeply held, while it
    waits, and a send's ``notify_all`` wakes it: the waiting receive holds nobody up."""
    from moto.sqs.models import Queue, SQSBackend

    if getattr(SQSBackend, "serialized_by_tiered_jobs", False):
        return
    for name, member in list(vars(SQSBackend).items()):
        if not name.startswith("_") and inspect.isfunction(member):
            setattr(SQSBackend, name, _one_at_a_time(member))
    setup = Queue.__init__

    def __init__(queue: Any, *args: Any, **kwargs: Any) -> None:
        setup(queue, *args, **kwargs)
        queue._messages_lock = threading.Condition(_SQS_REQUESTS)

    Queue.__init__ = __init__  # type: ignore[method-assign, assignment]
    SQSBackend.serialized_by_tiered_jobs = True  # type: ignore[attr-defined]


def _one_at_a_time(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def serialized(*args: Any, **kwargs: Any) -> Any:
        with _SQS_REQUESTS:
            return method(*args, **kwargs)

    return serialized


# --------------------------------------------------------------------------------------------
# Gap 13: the server's module list, once


def moto_server_module_list_once() -> None:
    """Make moto's server list its service modules once per process instead of on every request (idempotent)."""
    from moto import backends

    if hasattr(backends.list_of_moto_modules, "cache_info"):
        return
    listed = backends.list_of_moto_modules

    @functools.cache
    def once() -> tuple[str, ...]:
        return tuple(listed())

    backends.list_of_moto_modules = once


# --------------------------------------------------------------------------------------------
# Gap 14: the same answers without the quadratic work


def sqs_fast_clock_and_attributes() -> None:
    """moto's SQS: the clock from ``time.time()``, and ``GetQueueAttributes`` only for the names asked (idempotent)."""
    from moto.sqs import models

    if getattr(models.SQSBackend.get_queue_attributes, "on_demand_by_tiered_jobs", False):
        return
    from moto.core.utils import unix_time as slow_unix_time

    def unix_time(dt: Any = None) -> float:
        return time.time() if dt is None else slow_unix_time(dt)

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    # moto's SQS imported these names into its module: rebinding them there is what its code calls.
    setattr(models, "unix_time", unix_time)  # noqa: B010 -- not exported, so mypy knows no such attribute
    setattr(models, "unix_time_millis", unix_time_millis)  # noqa: B010
    every_attribute = models.SQSBackend.get_queue_attributes

    def get_queue_attributes(self: Any, queue_name: str, attribute_names: list[str]) -> dict[str, Any]:
        if not attribute_names or "All" in attribute_names:
            return every_attribute(self, queue_name, attribute_names)
        queue = self.get_queue(queue_name)
        known = queue.BASE_ATTRIBUTES + queue.FIFO_ATTRIBUTES + queue.KMS_ATTRIBUTES
        if any(name not in known for name in attribute_names):
            return every_attribute(self, queue_name, attribute_names)  # moto's own error
        found = {}
        for name in attribute_names:
            value = queue_attribute(queue, name)
            if value is not None:
                found[name] = value
        return found

    get_queue_attributes.on_demand_by_tiered_jobs = True  # type: ignore[attr-defined]
    models.SQSBackend.get_queue_attributes = get_queue_attributes  # type: ignore[method-assign]


def queue_attribute(queue: Any, name: str) -> Any:
    """One attribute of a moto queue, as its ``attributes`` property computes it (``None``: it has none)."""
    from moto.core.utils import camelcase_to_underscores

    if name == "RedrivePolicy":
        return json.dumps(queue.redrive_policy) if queue.redrive_policy else queue.redrive_policy
    if (
        name in queue.BASE_ATTRIBUTES
        or (queue.fifo_queue and name in queue.FIFO_ATTRIBUTES)
        or (queue.kms_master_key_id and name in queue.KMS_ATTRIBUTES)
    ):
        value = getattr(queue, camelcase_to_underscores(name))
        return str(value).lower() if isinstance(value, bool) else value
    return None


# --------------------------------------------------------------------------------------------
# Gap 20: a JSON template parsed as JSON


def cloudformation_json_templates() -> None:
    """moto's CloudFormation: a stack's or change set's template that is JSON is parsed as JSON (idempotent)."""
    from moto.cloudformation import models

    yaml_first = models.Stack.parse_template
    if getattr(yaml_first, "json_first_by_tiered_jobs", False):
        return

    def parse_template(template: str) -> dict[str, Any]:
        try:
            parsed = json.loads(template)
        except ValueError:  # YAML (or not a template at all): moto's own parse and errors
            return yaml_first(template)
        return parsed if isinstance(parsed, dict) else yaml_first(template)

    def change_set_template(change_set: Any) -> None:
        change_set.template_dict = parse_template(change_set.template)

    parse_template.json_first_by_tiered_jobs = True  # type: ignore[attr-defined]
    models.Stack.parse_template = staticmethod(parse_template)  # type: ignore[method-assign]
    models.ChangeSet._parse_template = change_set_template  # type: ignore[method-assign, assignment]
