"""Finding a stage's queues without copy-pasted URLs.

Three sources give the same :class:`Deployment` (tier queue URLs, DLQ URLs, the routing table,
the replay function's name):

- :func:`from_ssm` -- the SSM parameters the stack writes under ``/tiered-jobs/<stage>/``. Best
  for services: one IAM statement (``ssm:GetParameters`` on that path), and the stage name is all
  they configure.
- :func:`from_stack_outputs` -- the CloudFormation outputs of the stack (``cloudformation:DescribeStacks``).
  What operators usually have; the CLI's default.
- :func:`from_env` -- explicit URLs in environment variables (``TIERED_JOBS_QUEUE_URL_<TIER>``,
  ``TIERED_JOBS_ROUTES``): no AWS call at all, for tests, a service in another account, or locked-down roles.

Every failure is a :class:`DiscoveryError` whose message says what was looked for and where.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tiered_jobs.contract.errors import USAGE, TieredJobsError

from ..contract.large_payloads import OFF, Offload
from ..contract.names import DEFAULT_TIERS, LOCAL_MODE_STACK_TAG, Env, Outputs, PublisherParameters, Ssm
from ..contract.routing import Routes
from ..contract.tiers import TierQueues

#: ``GetParameters`` accepts at most this many names per call.
_SSM_MAX_NAMES = 10


class DiscoveryError(TieredJobsError, LookupError):
    """The stage's resources could not be found (not deployed, wrong account/region, missing settings)."""


class UnknownTierError(TieredJobsError, LookupError):
    """A tier name the deployment does not have; the message lists the known ones."""

    code = USAGE

    def __init__(self, tier: str, known: list[str]):
        self.tier = tier
        self.known = sorted(known)
        super().__init__(f"unknown tier {tier!r}; known tiers: {', '.join(self.known) or '(none)'}")


@dataclass(frozen=True)
class Deployment:
    """Where one stage's jobs go: everything the publisher and the CLI need to find."""

    tiers: Mapping[str, TierQueues]
    routes: Routes
    #: Human-readable origin for messages, e.g. ``stack TieredJobs-dev`` or ``environment``.
    source: str
    replay_function_name: str | None = None
    #: Stage name when the source knows it (``None`` for :func:`from_env` without ``TIERED_JOBS_STAGE``).
    stage: str | None = field(default=None)
    #: The idempotency table (``tiered-jobs job`` reads a job's record there); ``None`` when the source does not tell.
    idempotency_table_name: str | None = None
    #: The unique-jobs table (``publish(..., unique_for=)``); ``None`` when the source does not tell
    #: (a stage deployed before unique jobs).
    unique_table_name: str | None = None
    #: The batches table (``publisher.batch``, ``publisher.chain``); ``None`` when the source does not tell
    #: (a stage deployed before batches).
    batch_table_name: str | None = None
    #: The tiers that store bodies over a threshold in the stage's bucket (``large_payloads``), by name.
    large_payloads: Mapping[str, Offload] = field(default_factory=dict)
    #: The stack carries local mode's tag (``LOCAL_MODE_STACK_TAG``): the account is local mode's embedded AWS.
    local_mode: bool = False

    def tier(self, name: str) -> TierQueues:
        try:
            return self.tiers[name]
        except KeyError:
            raise UnknownTierError(name, list(self.tiers)) from None

    def queue_urls(self) -> dict[str, str]:
        return {name: urls.queue_url for name, urls in self.tiers.items()}


def from_ssm(stage: str, *, ssm: Any = None) -> Deployment:
    """Read the stack's SSM parameters of ``stage`` (two ``GetParameters`` calls for three tiers)."""
    if ssm is None:
        import boto3

        ssm = boto3.client("ssm")
    where = f"SSM parameters of stage {stage!r} in {ssm.meta.region_name}"
    # One call: the unique-jobs table's name costs a publisher that never uses it nothing.
    head = get_parameters(ssm, PublisherParameters.discovery(stage))
    if Ssm.tiers(stage) not in head:
        raise DiscoveryError(
            f"SSM parameter {Ssm.tiers(stage)} not found: is stage {stage!r} deployed in this account "
            f"and region ({ssm.meta.region_name})?"
        )
    if Ssm.routes(stage) not in head:
        raise DiscoveryError(f"SSM parameter {Ssm.routes(stage)} not found ({where})")
    names = [name.strip() for name in head[Ssm.tiers(stage)].split(",") if name.strip()]
    values = get_parameters(ssm, PublisherParameters.of_tiers(stage, names, PublisherParameters.DISCOVERY_TIER_KEYS))
    tiers = {}
    for name in names:
        queue_url = values.get(Ssm.tier(stage, name, Ssm.TIER_QUEUE_URL))
        if queue_url is None:
            raise DiscoveryError(f"SSM parameter {Ssm.tier(stage, name, Ssm.TIER_QUEUE_URL)} not found ({where})")
        tiers[name] = TierQueues(queue_url, values.get(Ssm.tier(stage, name, Ssm.TIER_DLQ_URL)))
    return Deployment(
        tiers=tiers,
        routes=parse_routes(head[Ssm.routes(stage)], Ssm.routes(stage)),
        source=f"SSM {Ssm.prefix(stage)}",
        replay_function_name=head.get(Ssm.replay_function_name(stage)),
        stage=stage,
        idempotency_table_name=head.get(Ssm.idempotency_table_name(stage)),
        unique_table_name=head.get(Ssm.unique_table_name(stage)),
        batch_table_name=head.get(Ssm.batch_table_name(stage)),
        large_payloads=_offloads({name: values.get(Ssm.tier(stage, name, Ssm.TIER_LARGE_PAYLOADS)) for name in names}),
    )


def from_stack_outputs(stack_name: str, *, cloudformation: Any = None, stage: str | None = None) -> Deployment:
    """Read the outputs of CloudFormation stack ``stack_name`` (one ``DescribeStacks`` call)."""
    from botocore.exceptions import ClientError

    if cloudformation is None:
        import boto3

        cloudformation = boto3.client("cloudformation")
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            raise DiscoveryError(
                f"stack {stack_name!r} not found in {cloudformation.meta.region_name}: "
                "is it deployed in this account and region (or pass the right stack name)?"
            ) from None
        raise
    outputs = {item["OutputKey"]: item["OutputValue"] for item in stacks[0].get("Outputs", [])}
    where = f"stack {stack_name}"
    if Outputs.ROUTES not in outputs:
        raise DiscoveryError(
            f"{where} has no output {Outputs.ROUTES!r} (status {stacks[0].get('StackStatus', '?')}): "
            "is it a Tiered Jobs stack that finished deploying?"
        )
    routes = parse_routes(outputs[Outputs.ROUTES], f"output {Outputs.ROUTES} of {where}")
    tiers = {}
    for tier_name in _tiers_in_outputs(outputs, routes):
        tiers[tier_name] = TierQueues(
            outputs[Outputs.tier(tier_name, Outputs.QUEUE_URL)],
            outputs.get(Outputs.tier(tier_name, Outputs.DLQ_URL)),
        )
    if not tiers:
        raise DiscoveryError(f"{where} has no '<Tier>{Outputs.QUEUE_URL}' outputs")
    return Deployment(
        tiers=tiers,
        routes=routes,
        source=where,
        replay_function_name=outputs.get(Outputs.REPLAY_FUNCTION_NAME),
        stage=stage,
        idempotency_table_name=outputs.get(Outputs.IDEMPOTENCY_TABLE_NAME),
        unique_table_name=outputs.get(Outputs.UNIQUE_TABLE_NAME),
        batch_table_name=outputs.get(Outputs.BATCH_TABLE_NAME),
        large_payloads=_offloads({name: outputs.get(Outputs.tier(name, Outputs.LARGE_PAYLOADS)) for name in tiers}),
        local_mode=any(
            tag.get("Key") == LOCAL_MODE_STACK_TAG and tag.get("Value") == "true" for tag in stacks[0].get("Tags", [])
        ),
    )


def from_env(environ: Mapping[str, str] | None = None) -> Deployment:
    """Explicit configuration: ``TIERED_JOBS_QUEUE_URL_<TIER>`` (and ``..._DLQ_URL_<TIER>``), ``TIERED_JOBS_ROUTES``.

    Without ``TIERED_JOBS_ROUTES`` the routing table is empty: every publish must name its tier.
    """
    environ = os.environ if environ is None else environ
    queues = queue_urls_in_env(environ)
    if not queues:
        raise DiscoveryError(
            f"no queue URLs in the environment: set {Env.tier_var(Env.QUEUE_URL, '<tier>')} for each tier"
        )
    tiers = {name: TierQueues(url, environ.get(Env.tier_var(Env.DLQ_URL, name))) for name, url in queues.items()}
    routes_json = environ.get(Env.ROUTES)
    routes = Routes({}) if routes_json is None else parse_routes(routes_json, f"${Env.ROUTES}")
    return Deployment(
        tiers=tiers,
        routes=routes,
        source="environment",
        stage=environ.get(Env.STAGE),
        unique_table_name=environ.get(Env.UNIQUE_TABLE) or None,
        batch_table_name=environ.get(Env.BATCH_TABLE) or None,
        large_payloads=_offloads({name: environ.get(Env.tier_var(Env.LARGE_PAYLOADS, name)) for name in tiers}),
    )


def locate(stage: str, stack_name: str, *, cloudformation: Any, ssm: Any) -> Deployment:
    """The CLI's look-up: the stack's outputs, else the stage's SSM parameters (e.g. no DescribeStacks right).

    When both fail, the stack's error is the one raised: it names what the operator asked for.
    """
    from botocore.exceptions import ClientError

    try:
        return from_stack_outputs(stack_name, cloudformation=cloudformation, stage=stage)
    except (DiscoveryError, ClientError) as by_stack:
        try:
            return from_ssm(stage, ssm=ssm)
        except DiscoveryError:
            raise by_stack from None


def queue_urls_in_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``{tier: url}`` from every ``TIERED_JOBS_QUEUE_URL_<TIER>`` variable (``BULK_EU`` is tier ``bulk-eu``)."""
    prefix = Env.tier_var(Env.QUEUE_URL, "")
    return {
        name[len(prefix) :].lower().replace("_", "-"): value
        for name, value in environ.items()
        if name.startswith(prefix) and len(name) > len(prefix) and value
    }


def _offloads(found: Mapping[str, str | None]) -> dict[str, Offload]:
    """The tiers' ``large_payloads`` settings from their JSON (a tier without one stores no body in S3)."""
    try:
        return {
            tier: Offload.from_json(text, f"the large_payloads of tier {tier!r}")
            for tier, text in found.items()
            if text and text != OFF
        }
    except ValueError as exc:
        raise DiscoveryError(str(exc)) from None


def parse_routes(text: str, source: str) -> Routes:
    """The routing table from its JSON form (``{"payments.*": "critical", ...}``)."""
    try:
        return Routes(json.loads(text))
    except (ValueError, TypeError) as exc:
        raise DiscoveryError(f"routes in {source} are not a JSON object of {{job type glob: tier}}: {exc}") from None


def get_parameters(ssm: Any, names: list[str]) -> dict[str, str]:
    """``{name: value}`` of the parameters that exist (missing ones are simply absent), 10 names a
    ``GetParameters`` call: every reader of a stage's parameters goes through here, so none re-learns that limit."""
    found: dict[str, str] = {}
    for start in range(0, len(names), _SSM_MAX_NAMES):
        response = ssm.get_parameters(Names=names[start : start + _SSM_MAX_NAMES])
        found.update({item["Name"]: item["Value"] for item in response.get("Parameters", [])})
    return found


def _tiers_in_outputs(outputs: Mapping[str, str], routes: Routes) -> list[str]:
    """Tier names from the ``<Tier>QueueUrl`` keys, spelt as the routes (or the defaults) spell them.

    Output keys are CamelCase (``BulkEu``); a name not in the routes is rebuilt as ``bulk-eu``.
    """
    known = {Outputs.tier(name, Outputs.QUEUE_URL): name for name in (*DEFAULT_TIERS, *routes.tiers())}
    names = []
    for key in outputs:
        if key.endswith(Outputs.QUEUE_URL) and len(key) > len(Outputs.QUEUE_URL):
            camel = key[: -len(Outputs.QUEUE_URL)]
            names.append(known.get(key) or re.sub(r"(?<!^)(?=[A-Z])", "-", camel).lower())
    return names


def tier_parameters(stage: str, tiers: Iterable[str], key: str, *, ssm: Any) -> dict[str, str]:
    """``{tier: value}`` of each tier's parameter ``key`` (``Ssm.TIER_*``) that exists, in as few calls as
    :func:`get_parameters` makes (one for up to 10 tiers)."""
    names = {tier: Ssm.tier(stage, tier, key) for tier in tiers}
    values = get_parameters(ssm, list(names.values()))
    return {tier: values[name] for tier, name in names.items() if name in values}


def idempotency_ttls(stage: str, tiers: list[str], *, ssm: Any) -> dict[str, int | None]:
    """Each tier's idempotency window (seconds) from the SSM parameters the stack writes.

    ``None`` for a tier whose parameter is missing (a stage deployed before the stack wrote it):
    the replay then treats every letter as outside the window.
    """
    values = tier_parameters(stage, tiers, Ssm.TIER_IDEMPOTENCY_TTL, ssm=ssm)
    return {tier: int(values[tier]) if values.get(tier, "").isdigit() else None for tier in tiers}
