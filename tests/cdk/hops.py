"""The hop walker: every service-to-service call the template implies must be allowed by its policies.

moto evaluates no policy, so an alarm that cannot publish, a subscription that cannot dead-letter
or a mapping that cannot read its queue only shows on AWS. This walks the synthesized template
instead. Each *hop* is one call one principal makes on one resource:

- a **service** (``cloudwatch.amazonaws.com`` for an alarm action) calls a resource that has a
  resource policy (topic / queue policy, a function's ``AWS::Lambda::Permission`` statements) and
  maybe a KMS key. AWS requires an ``Allow`` in the
  resource policy matching the service principal, the action and the resource, whose conditions
  this call satisfies (``aws:SourceAccount`` = this account, ``aws:SourceArn`` = the caller's ARN,
  TLS), and the key policy must allow the service the key actions the same way;
- a **role** (a function's execution role, a schedule's role) calls a resource in its own account:
  its identity policies must allow the actions on the resource, its trust policy must let the
  service assume it, and a CMK's policy must allow the role or delegate to the account's IAM.
  The call may name a part of the resource (an S3 object key in a bucket): the policies are then
  evaluated on that object's ARN, as S3 does.

In both cases no ``Deny`` may apply. A ``Deny`` is harmless only when one of its conditions is
certainly false for the call (``aws:SecureTransport: false`` for a service's TLS call); a Deny
with a condition this walker does not model counts as applying. Likewise an ``Allow`` counts
only when all its conditions are certainly true.

Hop kinds are declared in ``HOPS``, one line each (the resource type, who calls, which property
names the target, which actions); a new kind (e.g. EventBridge Scheduler to a queue) is one more
line. The DLQ redrive (SQS moving a message by itself) is checked against the DLQ's
``RedriveAllowPolicy`` in :func:`redrive_problems`.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.cdk.template_values import Concrete
from tiered_jobs.contract.names import Env, discard_archive_prefix

#: Condition keys this walker knows for a call; a condition on any other key is "unknown".
KNOWN_KEYS = frozenset(
    {
        "aws:securetransport",
        "aws:sourceaccount",
        "aws:sourcearn",
        "aws:principalarn",
        "aws:principalaccount",
        "aws:principalservicename",
        # a publisher in another account: its organization, and KMS called through SQS for it
        "aws:principalorgid",
        "kms:viaservice",
    }
)
#: What an SQS event source mapping calls on its queue (and the consumer itself, for backoff).
ESM_QUEUE_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility")
#: A sender to an encrypted topic / queue, and a receiver from an encrypted queue.
SEND_KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")
RECEIVE_KEY_ACTIONS = ("kms:Decrypt",)
#: AWS-managed keys admit only principals of the account through their service, never a service principal.
AWS_MANAGED_KEY_PREFIX = "alias/aws/"
#: The AWS managed policies a role of the stack names (``ManagedPolicyArns``), as AWS publishes them (the
#: AWS Managed Policy reference): they are not in the template, so the walker holds their statements. A
#: role naming any other AWS managed policy gets nothing from it here, and its hops fail until it is added.
AWS_MANAGED_POLICIES: dict[str, list[dict[str, Any]]] = {
    # CodeDeploy's role for a canary tier's deployment group (CDK attaches it to every Lambda deployment group).
    "service-role/AWSCodeDeployRoleForLambdaLimited": [
        {
            "Effect": "Allow",
            "Action": [
                "cloudwatch:DescribeAlarms",
                "lambda:UpdateAlias",
                "lambda:GetAlias",
                "lambda:GetProvisionedConcurrencyConfig",
            ],
            "Resource": "*",
        },
        {
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:GetObjectVersion"],
            "Resource": "arn:aws:s3:::*/CodeDeploy/*",
        },
        {
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:GetObjectVersion"],
            "Resource": "*",
            "Condition": {"StringEquals": {"s3:ExistingObjectTag/UseWithCodeDeploy": "true"}},
        },
        {
            "Effect": "Allow",
            "Action": ["lambda:InvokeFunction"],
            "Resource": "arn:aws:lambda:*:*:function:CodeDeployHook_*",
        },
    ],
}


# -- who calls ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ServiceCaller:
    principal: str
    #: The resource on whose behalf the service calls (``aws:SourceArn``).
    source_arn: str


@dataclass(frozen=True)
class RoleCaller:
    role: str  # logical id of the AWS::IAM::Role
    #: The service that assumes the role (its trust policy must allow it).
    assumed_by: str


@dataclass(frozen=True)
class Hop:
    description: str
    caller: ServiceCaller | RoleCaller
    #: Logical id of the target, or the raw template value when it is not a resource of the template.
    target: Any
    actions: tuple[str, ...]
    key_actions: tuple[str, ...] = field(default=SEND_KEY_ACTIONS)
    #: Appended to the target's ARN for the request: ``/<object key>`` for an S3 object of a bucket.
    subresource: str = ""


# -- policy evaluation --------------------------------------------------------------------


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _matches(patterns: Any, value: str, *, case_sensitive: bool = True) -> bool:
    for pattern in _as_list(patterns):
        pattern = str(pattern)
        if case_sensitive and fnmatch.fnmatchcase(value, pattern):
            return True
        if not case_sensitive and fnmatch.fnmatchcase(value.lower(), pattern.lower()):
            return True
    return False


def _condition(operator: str, key: str, expected: Any, context: Mapping[str, str]) -> bool | None:
    """One condition entry: ``True`` / ``False`` when certain for this call, ``None`` when unknown."""
    if_exists = operator.endswith("IfExists")
    base = operator.removesuffix("IfExists")
    key_l = key.lower()
    if key_l not in KNOWN_KEYS:
        return None
    actual = context.get(key_l)
    negated = "Not" in base
    if actual is None:  # the key is absent from this call (IAM: a negated operator then holds)
        return True if (if_exists or negated) else False
    positive = base.replace("Not", "")
    if positive in ("StringEquals", "ArnEquals"):
        hit = actual in [str(e) for e in _as_list(expected)]
    elif positive in ("StringLike", "ArnLike"):
        hit = _matches(expected, actual)
    elif positive == "StringEqualsIgnoreCase":
        hit = actual.lower() in [str(e).lower() for e in _as_list(expected)]
    elif positive == "Bool":
        hit = actual.lower() in [str(e).lower() for e in _as_list(expected)]
    else:
        return None
    return (not hit) if negated else hit


def conditions_hold(conditions: Mapping[str, Mapping[str, Any]] | None, context: Mapping[str, str]) -> bool | None:
    """All conditions of a statement: ``True`` certain, ``False`` one certainly fails, ``None`` unknown."""
    results = [
        _condition(op, key, expected, context)
        for op, entries in (conditions or {}).items()
        for key, expected in entries.items()
    ]
    if False in results:
        return False
    return None if None in results else True


@dataclass(frozen=True)
class Request:
    """One call as AWS evaluates it."""

    action: str
    resource: str
    #: ``service:<principal>`` or the caller role's ARN.
    principal: str
    context: Mapping[str, str]


def _principal_matches(statement: Mapping[str, Any], request: Request, account_root: str) -> str | None:
    """``"direct"``, ``"account"`` (the account's root: delegates to IAM) or ``None``."""
    if "Principal" not in statement:
        return "direct"  # an identity policy: it applies to its own principal
    principal = statement["Principal"]
    if principal == "*":
        return "direct"
    for kind, values in principal.items():
        for value in _as_list(values):
            if value == "*":
                return "direct"
            if kind == "Service" and request.principal == f"service:{value}":
                return "direct"
            if kind == "AWS" and value == request.principal:
                return "direct"
            if (
                kind == "AWS"
                and value in (account_root, account_root.split(":")[4])
                and not request.principal.startswith("service:")
            ):
                return "account"
    return None


def _statement_applies(statement: Mapping[str, Any], request: Request) -> bool:
    if "Action" in statement and not _matches(statement["Action"], request.action, case_sensitive=False):
        return False
    if "NotAction" in statement and _matches(statement["NotAction"], request.action, case_sensitive=False):
        return False
    if "Resource" in statement and not _matches(statement["Resource"], request.resource):
        return False
    return not ("NotResource" in statement and _matches(statement["NotResource"], request.resource))


@dataclass(frozen=True)
class Verdict:
    #: ``"direct"`` / ``"account"`` when an Allow matched (and how), else ``None``.
    allowed_by: str | None
    #: Sids (or indexes) of Deny statements that may apply.
    denied_by: tuple[str, ...]


def evaluate(statements: Sequence[Mapping[str, Any]], request: Request, account_root: str) -> Verdict:
    """One policy document's answer for ``request`` (statements already concrete)."""
    allowed: str | None = None
    denied: list[str] = []
    for index, statement in enumerate(statements):
        how = _principal_matches(statement, request, account_root)
        if how is None or not _statement_applies(statement, request):
            continue
        holds = conditions_hold(statement.get("Condition"), request.context)
        if statement["Effect"] == "Deny" and holds is not False:
            denied.append(statement.get("Sid", f"#{index}"))
        if statement["Effect"] == "Allow" and holds is True and allowed != "direct":
            allowed = how
    return Verdict(allowed, tuple(denied))


# -- the template's policies --------------------------------------------------------------

#: Resource types a hop may target: their resource policy type, and the policy's property naming them.
TARGET_POLICIES: dict[str, tuple[str | None, str]] = {
    "AWS::SNS::Topic": ("AWS::SNS::TopicPolicy", "Topics"),
    "AWS::SQS::Queue": ("AWS::SQS::QueuePolicy", "Queues"),
    "AWS::S3::Bucket": ("AWS::S3::BucketPolicy", "Bucket"),  # one bucket per policy, not a list
    # A mapping has no resource policy: the caller's identity policy alone decides.
    "AWS::Lambda::EventSourceMapping": (None, ""),
    # Nor has a table of this template (DynamoDB's resource policies are not used).
    "AWS::DynamoDB::Table": (None, ""),
    # A function's resource policy is the statements its AWS::Lambda::Permission resources add.
    "AWS::Lambda::Function": ("AWS::Lambda::Permission", "FunctionName"),
    # A canary tier's alias (no permission names it) and the alarms CodeDeploy reads have none either.
    "AWS::Lambda::Alias": (None, ""),
    "AWS::CloudWatch::Alarm": (None, ""),
}


class Policies:
    """The template's policy documents, concrete, by what they protect."""

    def __init__(self, concrete: Concrete):
        self.t = concrete
        self.account_root = f"arn:{concrete.partition}:iam::{concrete.account}:root"

    def resource_policy(self, target: str) -> list[Mapping[str, Any]]:
        policy_type, refs = TARGET_POLICIES[self.t.type_of(target)]
        statements: list[Mapping[str, Any]] = []
        if policy_type is None:
            return statements
        for _, props in self.t.resources(policy_type):
            if any(self.t.logical_id(ref) == target for ref in _as_list(props[refs])):
                if policy_type == "AWS::Lambda::Permission":
                    statements.append(self._permission_statement(target, props))
                else:
                    statements += self.t.value(props["PolicyDocument"])["Statement"]
        return statements

    def _permission_statement(self, function: str, props: Mapping[str, Any]) -> Mapping[str, Any]:
        """The statement Lambda adds to the function's policy for one ``AddPermission`` (its conditions
        are ``ArnLike`` on the source ARN and ``StringEquals`` on the source account, as Lambda writes them)."""
        principal = str(self.t.value(props["Principal"]))
        conditions: dict[str, dict[str, Any]] = {}
        if "SourceArn" in props:
            conditions["ArnLike"] = {"AWS:SourceArn": self.t.value(props["SourceArn"])}
        if "SourceAccount" in props:
            conditions["StringEquals"] = {"AWS:SourceAccount": self.t.value(props["SourceAccount"])}
        return {
            "Effect": "Allow",
            "Principal": {"Service": principal} if principal.endswith(".amazonaws.com") else {"AWS": principal},
            "Action": self.t.value(props["Action"]),
            "Resource": self.t.arn(function),
            **({"Condition": conditions} if conditions else {}),
        }

    def identity_policy(self, role: str) -> list[Mapping[str, Any]]:
        """Inline policies attached to ``role`` and the template's managed policies it names."""
        statements: list[Mapping[str, Any]] = []
        for _, props in self.t.resources("AWS::IAM::Policy"):
            if any(self.t.logical_id(r) == role for r in props.get("Roles", [])):
                statements += self.t.value(props["PolicyDocument"])["Statement"]
        role_props = self.t.properties(role)
        for inline in role_props.get("Policies", []):
            statements += self.t.value(inline["PolicyDocument"])["Statement"]
        managed = {self.t.logical_id(arn) for arn in role_props.get("ManagedPolicyArns", [])}
        aws_managed = f"arn:{self.t.partition}:iam::aws:policy/"
        for arn in role_props.get("ManagedPolicyArns", []):
            name = str(self.t.value(arn))
            if name.startswith(aws_managed):
                statements += AWS_MANAGED_POLICIES.get(name.removeprefix(aws_managed), [])
        for logical_id, props in self.t.resources("AWS::IAM::ManagedPolicy"):
            if logical_id in managed or any(self.t.logical_id(r) == role for r in props.get("Roles", [])):
                statements += self.t.value(props["PolicyDocument"])["Statement"]
        return statements

    def trust_policy(self, role: str) -> list[Mapping[str, Any]]:
        return self.t.value(self.t.properties(role)["AssumeRolePolicyDocument"])["Statement"]

    def key_of(self, target: str) -> Any:
        """The target's ``KmsMasterKeyId`` (a logical id when the key is in the template), or ``None``."""
        value = self.t.properties(target).get("KmsMasterKeyId")
        if value is None:
            return None
        return self.t.logical_id(value) or self.t.value(value)

    def key_policy(self, key: str) -> list[Mapping[str, Any]]:
        return self.t.value(self.t.properties(key)["KeyPolicy"])["Statement"]


# -- checking one hop ----------------------------------------------------------------------


def check_hop(policies: Policies, hop: Hop) -> list[str]:
    """The reasons ``hop`` would fail on AWS (``[]``: allowed)."""
    t = policies.t
    where = hop.description
    if hop.target == ANY_RESOURCE:
        return _check_resourceless(policies, hop)
    if not isinstance(hop.target, str) or hop.target not in t.resources_by_id:
        return [f"{where}: the target {hop.target!r} is not a resource of this template; its policies can't be checked"]
    if t.type_of(hop.target) not in TARGET_POLICIES:
        return [f"{where}: no rule for targets of type {t.type_of(hop.target)}; add it to TARGET_POLICIES"]
    if isinstance(hop.caller, RoleCaller) and hop.caller.role not in t.resources_by_id:
        return [
            f"{where}: the role {hop.caller.role} is not a resource of this template; its policies can't be checked"
        ]
    target_arn = t.arn(hop.target) + hop.subresource
    problems: list[str] = []
    if isinstance(hop.caller, ServiceCaller):
        principal = f"service:{hop.caller.principal}"
        context = {
            "aws:securetransport": "true",
            "aws:sourceaccount": t.account,
            "aws:sourcearn": hop.caller.source_arn,
            "aws:principalservicename": hop.caller.principal,
        }
        identity = None
        who = hop.caller.principal
    else:
        principal = t.arn(hop.caller.role)
        context = {"aws:securetransport": "true", "aws:principalarn": principal, "aws:principalaccount": t.account}
        identity = policies.identity_policy(hop.caller.role)
        who = f"role {hop.caller.role}"
        problems += _trust_problems(policies, hop.caller, where)
    resource_policy = policies.resource_policy(hop.target)
    for action in hop.actions:
        problems += _check_call(
            policies,
            where,
            who,
            Request(action, target_arn, principal, context),
            resource_policy,
            identity,
            f"the policy of {hop.target}",
            needs_delegation=False,
        )
    key = policies.key_of(hop.target)
    if key is None:
        return problems
    if not isinstance(key, str) or key not in t.resources_by_id:
        if isinstance(hop.caller, ServiceCaller) or not str(key).startswith(AWS_MANAGED_KEY_PREFIX):
            problems.append(
                f"{where}: {hop.target} is encrypted with {key!r}, whose policy is not in this template "
                f"(an AWS-managed key never admits {who})"
            )
        return problems
    for action in hop.key_actions:
        problems += _check_call(
            policies,
            where,
            who,
            Request(action, t.arn(key), principal, context),
            policies.key_policy(key),
            identity,
            f"the key policy of {key}",
            needs_delegation=True,
        )
    return problems


def _check_call(
    policies: Policies,
    where: str,
    who: str,
    request: Request,
    resource_policy: list[Mapping[str, Any]],
    identity: list[Mapping[str, Any]] | None,
    what: str,
    *,
    needs_delegation: bool,
) -> list[str]:
    """``request`` against a resource policy (and the caller's identity policy, for a role)."""
    on_resource = evaluate(resource_policy, request, policies.account_root)
    problems = [f"{where}: {what} denies {who} {request.action} (statement {sid})" for sid in on_resource.denied_by]
    if identity is None:  # a service principal: only the resource policy can allow it
        if on_resource.allowed_by != "direct":
            problems.append(
                f"{where}: {what} does not allow {who} to {request.action} {request.resource} "
                f"(no Allow matches this principal, action and resource with conditions this call meets)"
            )
        return problems
    on_identity = evaluate(identity, request, policies.account_root)
    problems += [
        f"{where}: the role's policy denies {request.action} (statement {sid})" for sid in on_identity.denied_by
    ]
    if on_resource.allowed_by == "direct":
        return problems
    # Same account: the identity policy allows, unless the resource is a key whose policy must delegate to IAM.
    delegated = on_resource.allowed_by == "account" or not needs_delegation
    if not (on_identity.allowed_by and delegated):
        missing = "the role's policy" if not on_identity.allowed_by else f"{what} (no statement for the account)"
        problems.append(f"{where}: {missing} does not allow {who} to {request.action} {request.resource}")
    return problems


# -- the hops of a template ----------------------------------------------------------------

Path = tuple[str, ...]


def _at(props: Mapping[str, Any], path: Path) -> Any:
    value: Any = props
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _role_of(t: Concrete, logical_id: str | None) -> str | None:
    """The execution role of a function (or of an alias's function), or the role itself."""
    if logical_id is None:
        return None
    if t.type_of(logical_id) == "AWS::Lambda::Alias":
        logical_id = t.logical_id(t.properties(logical_id)["FunctionName"])
        if logical_id is None:
            return None
    if t.type_of(logical_id) == "AWS::Lambda::Function":
        return t.logical_id(t.properties(logical_id)["Role"])
    return logical_id


def _target(t: Concrete, value: Any) -> Any:
    return t.logical_id(value) or value


def _named(t: Concrete, value: Any) -> str | None:
    """The resource ``value`` refers to, or the function or alias it names: a mapping of a canary tier
    names its alias as ``<function name>:<alias>``, which CDK builds from the alias's ARN."""
    found = t.logical_id(value)
    if found is not None or value is None:
        return found
    name = str(t.value(value))
    for type_ in ("AWS::Lambda::Alias", "AWS::Lambda::Function"):
        for logical_id, _ in t.resources(type_):
            arn = t.arn(logical_id)
            if name == arn or arn.endswith(f":function:{name}"):
                return logical_id
    return None


HopSource = Callable[[Concrete], Iterable[Hop]]


#: The parts of a target one resource calls (``(Concrete, its properties) -> subresources``), e.g. object keys.
Subresources = Callable[[Concrete, Mapping[str, Any]], Sequence[str]]


def service_hops(
    resource_type: str,
    principal: str,
    *,
    targets: Sequence[Path],
    actions: Sequence[str],
    source: Path = (),
    key_actions: Sequence[str] = SEND_KEY_ACTIONS,
    subresources: Subresources | None = None,
    target_types: Sequence[str] = (),
) -> HopSource:
    """``principal`` calls, on behalf of each ``resource_type`` (or the ARN at ``source``), the targets at
    ``targets`` (or each of their ``subresources``: one hop each). With ``target_types``, only the targets
    of those types (an alarm's actions name topics and functions, each called by its own principal);
    a target that is no resource of the template is kept when the first type is not a function's."""

    def wanted(t: Concrete, target: Any) -> bool:
        if not target_types:
            return True
        if isinstance(target, str) and target in t.resources_by_id:
            return t.type_of(target) in target_types
        return target_types[0] != "AWS::Lambda::Function"

    def hops(t: Concrete) -> Iterator[Hop]:
        for logical_id, props in t.resources(resource_type):
            source_arn = t.arn(logical_id) if not source else t.value(_at(props, source))
            for path in targets:
                for value in _as_list(_at(props, path) or []):
                    if not wanted(t, _target(t, value)):
                        continue
                    for part in subresources(t, props) if subresources else ("",):
                        yield Hop(
                            f"{resource_type} {logical_id} ({'.'.join(path)}{part}) via {principal}",
                            ServiceCaller(principal, source_arn),
                            _target(t, value),
                            tuple(actions),
                            tuple(key_actions),
                            part,
                        )

    return hops


def role_hops(
    resource_type: str,
    assumed_by: str,
    *,
    role: Path,
    target: Path,
    actions: Sequence[str],
    key_actions: Sequence[str] = SEND_KEY_ACTIONS,
    subresources: Subresources | None = None,
) -> HopSource:
    """The role at ``role`` (a role, or a function: its execution role; ``()``: the resource itself) calls ``target``
    (or each of its ``subresources``: one hop each)."""

    def hops(t: Concrete) -> Iterator[Hop]:
        for logical_id, props in t.resources(resource_type):
            value = _at(props, target)
            if value is None:
                continue
            caller = _role_of(t, logical_id if not role else _named(t, _at(props, role))) or repr(_at(props, role))
            for part in subresources(t, props) if subresources else ("",):
                yield Hop(
                    f"{resource_type} {logical_id} ({'.'.join(target)}{part}) as {caller}",
                    RoleCaller(caller, assumed_by),
                    _target(t, value),
                    tuple(actions),
                    tuple(key_actions),
                    part,
                )

    return hops


def access_log_objects(t: Concrete, bucket: Mapping[str, Any]) -> list[str]:
    """An object S3's server access logging writes for ``bucket`` (keys ``<prefix>YYYY-mm-DD-HH-MM-SS-<id>``)."""
    prefix = t.value(_at(bucket, ("LoggingConfiguration", "LogFilePrefix")) or "")
    return [f"/{prefix}2026-11-30-03-18-53-0A1B2C3D4E5F6A7B"]


def discarded_letters(t: Concrete, function: Mapping[str, Any]) -> list[str]:
    """An object the replay function's ``discard`` writes, per tier it serves, or a consumer writes for a job
    that ended unrun (expired, cancelled), under its own tier (``S3Archive``'s key layout)."""
    variables = t.value(function["Environment"]["Variables"])
    tiers = json.loads(variables[Env.REPLAY_TIERS]) if Env.REPLAY_TIERS in variables else [variables[Env.TIER]]
    return [
        f"/{discard_archive_prefix(variables[Env.STAGE], tier)}20261130T031853.000000Z-0a1b2c3d.jsonl"
        for tier in sorted(tiers)
    ]


def batch_callback_hops(t: Concrete) -> Iterator[Hop]:
    """A consumer that counts batch members (it has the batches table) sends to every tier queue of its stack."""
    queues = sorted(
        {
            _target(t, queue)
            for _, props in t.resources("AWS::Lambda::Function")
            if (queue := _at(props, ("Environment", "Variables", Env.QUEUE_URL))) is not None
        },
        key=str,
    )
    for logical_id, props in t.resources("AWS::Lambda::Function"):
        if _at(props, ("Environment", "Variables", Env.BATCH_TABLE)) is None:
            continue
        caller = _role_of(t, logical_id) or logical_id
        for queue in queues:
            yield Hop(
                f"AWS::Lambda::Function {logical_id} (a batch's callback to {queue}) as {caller}",
                RoleCaller(caller, "lambda.amazonaws.com"),
                queue,
                ("sqs:SendMessage",),
            )


#: The AWS Chatbot channel configurations (``chat``): Slack's and Microsoft Teams'.
CHAT_CONFIGURATIONS = ("AWS::Chatbot::SlackChannelConfiguration", "AWS::Chatbot::MicrosoftTeamsChannelConfiguration")
#: What Chatbot reads, with the configuration's role, to show a page: the alarm, then its metric's graph.
CHAT_READ_ACTIONS = ("cloudwatch:DescribeAlarms", "cloudwatch:GetMetricData")


def chat_hops(t: Concrete) -> Iterator[Hop]:
    """Each chat configuration receives the pages of the topics it names (Chatbot subscribes them itself) and,
    for each alarm paging one of those topics, reads it and its metric with the configuration's role."""
    for resource_type in CHAT_CONFIGURATIONS:
        for logical_id, props in t.resources(resource_type):
            caller = t.logical_id(props["IamRoleArn"]) or repr(props["IamRoleArn"])
            topics = {t.logical_id(topic) or repr(topic) for topic in props.get("SnsTopicArns", [])}
            for alarm, alarm_props in t.resources("AWS::CloudWatch::Alarm"):
                actions = _as_list(alarm_props.get("AlarmActions", [])) + _as_list(alarm_props.get("OKActions", []))
                paged = sorted({t.logical_id(action) for action in actions} & topics)
                if paged:
                    yield Hop(
                        f"{resource_type} {logical_id} (page of {alarm} via {paged[0]}) as {caller}",
                        RoleCaller(caller, "chatbot.amazonaws.com"),
                        alarm,
                        CHAT_READ_ACTIONS,
                        (),
                    )


#: What the replay function's pause and resume call on a tier's mapping (``tiered_jobs.replay.pause``).
MAPPING_ACTIONS = (
    "lambda:GetEventSourceMapping",
    "lambda:UpdateEventSourceMapping",
    "lambda:ListTags",
    "lambda:TagResource",
    "lambda:UntagResource",
)


def mapping_hops(t: Concrete) -> Iterator[Hop]:
    """The replay function pauses and resumes the mappings its environment names (by UUID), with its role."""
    for logical_id, props in t.resources("AWS::Lambda::Function"):
        raw = t.value(props.get("Environment", {}).get("Variables", {})).get(Env.REPLAY_MAPPINGS)
        if raw is None:
            continue
        for tier, uuid in sorted(json.loads(raw).items()):
            mapping = next((m for m, _ in t.resources("AWS::Lambda::EventSourceMapping") if t.ref(m) == uuid), uuid)
            caller = _role_of(t, logical_id) or logical_id
            yield Hop(
                f"AWS::Lambda::Function {logical_id} ({Env.REPLAY_MAPPINGS} {tier}) as {caller}",
                RoleCaller(caller, "lambda.amazonaws.com"),
                mapping,
                MAPPING_ACTIONS,
                (),
            )


#: What CodeDeploy does to a canary tier's alias while it shifts traffic (and rolls it back).
ALIAS_ACTIONS = ("lambda:GetAlias", "lambda:UpdateAlias")
#: What it does to the deployment group's alarms: it reads their state before and during the shift.
ALARM_READ_ACTIONS = ("cloudwatch:DescribeAlarms",)


def codedeploy_hops(t: Concrete) -> Iterator[Hop]:
    """CodeDeploy shifts each alias whose update policy names a deployment group, with the group's service
    role: it moves the alias and reads the group's alarms (each one that would roll it back)."""
    for alias, _ in t.resources("AWS::Lambda::Alias"):
        update = t.resources_by_id[alias].get("UpdatePolicy", {}).get("CodeDeployLambdaAliasUpdate")
        if update is None:
            continue
        group = t.logical_id(update["DeploymentGroupName"])
        if group is None:
            continue
        group_props = t.properties(group)
        caller = t.logical_id(group_props["ServiceRoleArn"]) or repr(group_props["ServiceRoleArn"])
        role = RoleCaller(caller, "codedeploy.amazonaws.com")
        yield Hop(
            f"AWS::CodeDeploy::DeploymentGroup {group} (alias {alias}) as {caller}", role, alias, ALIAS_ACTIONS, ()
        )
        for alarm in group_props.get("AlarmConfiguration", {}).get("Alarms", []):
            target = _target(t, alarm["Name"])
            yield Hop(
                f"AWS::CodeDeploy::DeploymentGroup {group} (AlarmConfiguration {target}) as {caller}",
                role,
                target,
                ALARM_READ_ACTIONS,
                (),
            )


#: The principal EventBridge invokes a rule's targets as.
EVENTS_PRINCIPAL = "events.amazonaws.com"
#: What a rule (or a function's asynchronous destination) does to a target, by the target's type.
DELIVERY_ACTIONS = {
    "AWS::Lambda::Function": "lambda:InvokeFunction",
    "AWS::SNS::Topic": "sns:Publish",
    "AWS::SQS::Queue": "sqs:SendMessage",
}


def _delivery(t: Concrete, target: Any) -> tuple[str, ...]:
    kind = t.type_of(target) if isinstance(target, str) and target in t.resources_by_id else None
    return (DELIVERY_ACTIONS[kind],) if kind in DELIVERY_ACTIONS else ("(no action known for this target)",)


def rule_hops(t: Concrete) -> Iterator[Hop]:
    """An EventBridge rule (the circuit breakers' reconciler, a trigger) delivers to each target as
    ``events.amazonaws.com``: a function's resource policy (its AWS::Lambda::Permission) or a queue's policy
    must allow that rule, and an encrypted queue's key must let the service use it. A target's
    ``DeadLetterConfig`` queue is written the same way, for the same rule, when delivery fails."""
    for logical_id, props in t.resources("AWS::Events::Rule"):
        for target in props.get("Targets", []):
            value = _target(t, target["Arn"])
            key_actions = SEND_KEY_ACTIONS if _delivery(t, value) == ("sqs:SendMessage",) else ()
            yield Hop(
                f"AWS::Events::Rule {logical_id} (Targets {target.get('Id')}) via {EVENTS_PRINCIPAL}",
                ServiceCaller(EVENTS_PRINCIPAL, t.arn(logical_id)),
                value,
                _delivery(t, value),
                key_actions,
            )
            if "DeadLetterConfig" in target:
                yield Hop(
                    f"AWS::Events::Rule {logical_id} (Targets {target.get('Id')}.DeadLetterConfig) via "
                    f"{EVENTS_PRINCIPAL}",
                    ServiceCaller(EVENTS_PRINCIPAL, t.arn(logical_id)),
                    _target(t, target["DeadLetterConfig"]["Arn"]),
                    ("sqs:SendMessage",),
                )


def async_destination_hops(t: Concrete) -> Iterator[Hop]:
    """Lambda sends a function's failed (or succeeded) asynchronous event to its destination with the
    function's execution role (and its key, for an encrypted topic or queue)."""
    for logical_id, props in t.resources("AWS::Lambda::EventInvokeConfig"):
        function = _named(t, props["FunctionName"])
        caller = _role_of(t, function) or repr(props["FunctionName"])
        for outcome in ("OnFailure", "OnSuccess"):
            destination = _at(props, ("DestinationConfig", outcome, "Destination"))
            if destination is None:
                continue
            value = _target(t, destination)
            yield Hop(
                f"AWS::Lambda::EventInvokeConfig {logical_id} (DestinationConfig.{outcome}) as {caller}",
                RoleCaller(caller, "lambda.amazonaws.com"),
                value,
                _delivery(t, value),
            )


#: The target of a call on no resource: X-Ray's actions are allowed only by ``"Resource": "*"``.
ANY_RESOURCE = "*"
#: What a traced function's role sends to X-Ray (Lambda's Active tracing, the consumer's job subsegments).
XRAY_ACTIONS = ("xray:PutTraceSegments", "xray:PutTelemetryRecords")


def xray_hops(t: Concrete) -> Iterator[Hop]:
    """Each function with Active tracing sends its segments to X-Ray with its execution role."""
    for logical_id, props in t.resources("AWS::Lambda::Function"):
        if t.value(props.get("TracingConfig", {})).get("Mode") != "Active":
            continue
        caller = _role_of(t, logical_id) or logical_id
        yield Hop(
            f"X-Ray {logical_id} (TracingConfig Active) as {caller}",
            RoleCaller(caller, "lambda.amazonaws.com"),
            ANY_RESOURCE,
            XRAY_ACTIONS,
            (),
        )


def _trust_problems(policies: Policies, caller: RoleCaller, where: str) -> list[str]:
    """The role's trust policy lets its service assume it (the first hop of every call the role makes)."""
    t = policies.t
    trust = evaluate(
        policies.trust_policy(caller.role),
        Request(
            "sts:AssumeRole",
            t.arn(caller.role),
            f"service:{caller.assumed_by}",
            {"aws:securetransport": "true", "aws:sourceaccount": t.account},
        ),
        policies.account_root,
    )
    if trust.allowed_by is None or trust.denied_by:
        return [f"{where}: {caller.assumed_by} may not assume role {caller.role}"]
    return []


def _check_resourceless(policies: Policies, hop: Hop) -> list[str]:
    """A role's call on no resource: its trust, then its identity policy on ``*`` (an Allow naming any
    narrower resource does not count, as on AWS)."""
    t, where = policies.t, hop.description
    assert isinstance(hop.caller, RoleCaller)
    role = hop.caller.role
    if role not in t.resources_by_id:
        return [f"{where}: the role {role} is not a resource of this template; its policies can't be checked"]
    principal = t.arn(role)
    problems: list[str] = []
    problems += _trust_problems(policies, hop.caller, where)
    context = {"aws:securetransport": "true", "aws:principalarn": principal, "aws:principalaccount": t.account}
    for action in hop.actions:
        request = Request(action, ANY_RESOURCE, principal, context)
        verdict = evaluate(policies.identity_policy(role), request, policies.account_root)
        problems += [f"{where}: the role's policy denies {action} (statement {sid})" for sid in verdict.denied_by]
        if verdict.allowed_by is None:
            problems.append(f"{where}: the role's policy does not allow role {role} to {action} on *")
    return problems


#: Every kind of service-to-service hop; a new kind is one line.
HOPS: tuple[HopSource, ...] = (
    # Active tracing: a function's role sends its segments to X-Ray (on no resource: "*").
    xray_hops,
    # Alarm actions: CloudWatch publishes to the topic (and uses its key).
    service_hops(
        "AWS::CloudWatch::Alarm",
        "cloudwatch.amazonaws.com",
        actions=("sns:Publish",),
        targets=(("AlarmActions",), ("OKActions",), ("InsufficientDataActions",)),
        key_actions=("kms:Decrypt", "kms:GenerateDataKey*"),
        target_types=("AWS::SNS::Topic",),
    ),
    # An alarm's Lambda action (the circuit breaker's): CloudWatch invokes the function, which the
    # function's resource policy (its AWS::Lambda::Permission) must allow for that alarm.
    service_hops(
        "AWS::CloudWatch::Alarm",
        "lambda.alarms.cloudwatch.amazonaws.com",
        actions=("lambda:InvokeFunction",),
        targets=(("AlarmActions",), ("OKActions",), ("InsufficientDataActions",)),
        key_actions=(),
        target_types=("AWS::Lambda::Function",),
    ),
    # A subscription's delivery DLQ, and SQS subscriptions: SNS sends to the queue for its topic.
    service_hops(
        "AWS::SNS::Subscription",
        "sns.amazonaws.com",
        source=("TopicArn",),
        actions=("sqs:SendMessage",),
        targets=(("RedrivePolicy", "deadLetterTargetArn"),),
    ),
    # SQS event source mappings: Lambda reads the queue with the function's role.
    role_hops(
        "AWS::Lambda::EventSourceMapping",
        "lambda.amazonaws.com",
        role=("FunctionName",),
        target=("EventSourceArn",),
        actions=ESM_QUEUE_ACTIONS,
        key_actions=RECEIVE_KEY_ACTIONS,
    ),
    # A consumer dead-letters a job itself: SendMessage to its DLQ with its role.
    role_hops(
        "AWS::Lambda::Function",
        "lambda.amazonaws.com",
        role=(),
        target=("Environment", "Variables", Env.DLQ_URL),
        actions=("sqs:SendMessage",),
    ),
    # ...and sends the copies of the jobs it holds or defers back to its own queue.
    role_hops(
        "AWS::Lambda::Function",
        "lambda.amazonaws.com",
        role=(),
        target=("Environment", "Variables", Env.QUEUE_URL),
        actions=("sqs:SendMessage",),
    ),
    # A consumer releases a finished unique job's lock: a conditional DeleteItem on the unique jobs' table.
    role_hops(
        "AWS::Lambda::Function",
        "lambda.amazonaws.com",
        role=(),
        target=("Environment", "Variables", Env.UNIQUE_TABLE),
        actions=("dynamodb:DeleteItem",),
    ),
    # A consumer counts a finished batch member and reads its batch back (TransactWriteItems is checked as
    # PutItem and UpdateItem), then marks the callbacks it sent: the stage's batches table...
    role_hops(
        "AWS::Lambda::Function",
        "lambda.amazonaws.com",
        role=(),
        target=("Environment", "Variables", Env.BATCH_TABLE),
        actions=("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:GetItem"),
    ),
    # ...and sends a callback or a chain's next link to whichever tier that job routes to.
    batch_callback_hops,
    # The replay function's discard archives letters: PutObject under its stage's prefix, one object per batch;
    # a consumer archives a job that ended unrun (expired, cancelled) the same way, under its tier's prefix.
    role_hops(
        "AWS::Lambda::Function",
        "lambda.amazonaws.com",
        role=(),
        target=("Environment", "Variables", Env.DISCARD_ARCHIVE_BUCKET),
        actions=("s3:PutObject",),
        subresources=discarded_letters,
    ),
    # The replay function's pause and resume: its role updates and tags its stage's mappings.
    mapping_hops,
    # A canary tier's deployment: CodeDeploy moves the consumer's alias and reads the alarms that roll it back.
    codedeploy_hops,
    # A circuit breaker that closes pages: the replay function publishes to the alarm topic (and uses its key).
    role_hops(
        "AWS::Lambda::Function",
        "lambda.amazonaws.com",
        role=(),
        target=("Environment", "Variables", Env.BREAKER_PAGE_TOPIC),
        actions=("sns:Publish",),
    ),
    # EventBridge Scheduler writes a fire it could not deliver to the schedule's DLQ, with the schedule's role.
    role_hops(
        "AWS::Scheduler::Schedule",
        "scheduler.amazonaws.com",
        role=("Target", "RoleArn"),
        target=("Target", "DeadLetterConfig", "Arn"),
        actions=("sqs:SendMessage",),
    ),
    # Server access logging: S3 writes a bucket's access logs into its log bucket, on the bucket's behalf.
    service_hops(
        "AWS::S3::Bucket",
        "logging.s3.amazonaws.com",
        targets=(("LoggingConfiguration", "DestinationBucketName"),),
        actions=("s3:PutObject",),
        key_actions=(),
        subresources=access_log_objects,
    ),
    # Chat channels (AWS Chatbot): each shows the pages of its topics' alarms, reading them with its role.
    chat_hops,
    # The circuit breakers' reconciler: an EventBridge rule invokes the replay function every five minutes; a
    # trigger's rule sends an AWS event to its tier queue, or, undeliverable, to the triggers' DLQ.
    rule_hops,
    # A function's asynchronous events that failed every try go to its on-failure destination (the breaker's).
    async_destination_hops,
    # EventBridge Scheduler sends to a queue with the schedule's role.
    role_hops(
        "AWS::Scheduler::Schedule",
        "scheduler.amazonaws.com",
        role=("Target", "RoleArn"),
        target=("Target", "Arn"),
        actions=("sqs:SendMessage",),
    ),
)


def hops_of(t: Concrete, sources: Sequence[HopSource] = HOPS) -> list[Hop]:
    return [hop for source in sources for hop in source(t)]


def redrive_problems(t: Concrete) -> list[str]:
    """SQS moves a message to a DLQ only if the DLQ's ``RedriveAllowPolicy`` admits the source queue."""
    problems = []
    for logical_id, props in t.resources("AWS::SQS::Queue"):
        redrive = props.get("RedrivePolicy")
        if not redrive:
            continue
        dlq = t.logical_id(redrive["deadLetterTargetArn"])
        if dlq is None:
            problems.append(f"queue {logical_id}: its DLQ is not in this template")
            continue
        allow = t.value(t.properties(dlq).get("RedriveAllowPolicy", {"redrivePermission": "allowAll"}))
        permission = allow.get("redrivePermission")
        if permission == "denyAll" or (permission == "byQueue" and t.arn(logical_id) not in allow["sourceQueueArns"]):
            problems.append(f"queue {logical_id}: the RedriveAllowPolicy of {dlq} does not admit it")
    return problems


def walk(template: Mapping[str, Any], sources: Sequence[HopSource] = HOPS) -> tuple[list[Hop], list[str]]:
    """Every hop of ``template`` and every reason one of them (or a redrive) would fail on AWS."""
    t = Concrete(template)
    policies = Policies(t)
    hops = hops_of(t, sources)
    problems = [problem for hop in hops for problem in check_hop(policies, hop)]
    return hops, problems + redrive_problems(t)
