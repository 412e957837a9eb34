"""``doctor``: the account's limits against the stage's settings, and what will throttle.

A first deploy meets limits no template test sees: a new account's Lambda concurrency can be 10
where the regional default is 1,000, and the tiers' summed ``max_concurrency`` competes for it with
every other function of the account. A throttled batch is not lost, but each throttle spends one of
the tier's receives, so a job can reach the DLQ by SQS's redrive having run fewer times than
``max_attempts`` (docs/deploy.md, "Before the first deploy"). So the checks read what the stage
actually runs (its event source mappings, named by the SSM parameters it publishes, and each
consumer's reserved concurrency) rather than ``cdk.json``: a hand-edited mapping counts as it is.

Service Quotas is often not granted to operators: a quota that cannot be read is a check whose status
is ``not readable``, never a failure of the command. Local mode (its stack's tag) has neither an account
pool nor quotas, and its embedded AWS serves neither: it is answered from the tiers' caps alone
(:func:`local_checks`), so no such call reaches it.

Its AWS calls, for ``n`` tiers: one ``GetParameters`` per 10 tiers (the mappings' UUIDs), per tier
one ``GetEventSourceMapping`` and one ``GetFunctionConcurrency``, one ``GetAccountSettings``, one
``GetServiceQuota`` (Lambda's concurrency) and one ``ListServiceQuotas`` page each for Scheduler and
SQS (their quota codes are not published; their names are).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ..contract.names import Ssm
from ..stage.discovery import tier_parameters
from .errors import client_error_text

Clients = Callable[[str], Any]

OK = "ok"
WARN = "warn"
FAIL = "fail"
UNREADABLE = "not readable"

#: Lambda's regional default for ``ConcurrentExecutions``; a new account's quota starts below it.
REGIONAL_DEFAULT_CONCURRENCY = 1000
#: Lambda keeps this much of the account's concurrency unreserved, whatever the reservations ask.
UNRESERVED_MINIMUM = 100
#: Service Quotas' code of Lambda's "Concurrent executions".
LAMBDA_CONCURRENCY_QUOTA = ("lambda", "L-B99A9384")
#: Quotas found by name in ``ListServiceQuotas`` (lower case, a part of the name).
SCHEDULES_QUOTA = ("scheduler", "number of schedules")
SQS_IN_FLIGHT_QUOTA = ("sqs", "in flight")


@dataclass(frozen=True)
class Check:
    """One line of the report: what was compared, its status and, unless ok, the fix."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class TierConcurrency:
    """What one tier's consumer may take from the account: its mapping's cap and its reservation."""

    tier: str
    #: The mapping's ``ScalingConfig.MaximumConcurrency``; ``None``: uncapped (up to the account's pool).
    max_concurrency: int | None
    batch_size: int
    #: The consumer's reserved concurrency; ``None``: it shares the account's unreserved pool.
    reserved: int | None


@dataclass(frozen=True)
class Report:
    """``doctor``'s answer for a stage: each check with its verdict."""

    stage: str
    checks: list[Check]

    @property
    def failed(self) -> bool:
        return any(check.status == FAIL for check in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "failed": self.failed, "checks": [check.to_dict() for check in self.checks]}


def diagnose(stage: str, tiers: Iterable[str], client: Clients, *, local_mode: bool = False) -> Report:
    """Read the stage's tiers and the account's limits, and compare them; in local mode (``local_mode``: the
    stack carries its tag), its own limits instead of an account's (:func:`local_checks`)."""
    from botocore.exceptions import ClientError

    checks: list[Check] = []
    concurrency = _tiers(stage, list(tiers), client, checks)
    if local_mode:
        return Report(stage, checks + local_checks(concurrency) + reservation_checks(concurrency))
    try:
        limits = client("lambda").get_account_settings()["AccountLimit"]
    except ClientError as exc:
        shared = [t for t in concurrency if t.reserved is None]
        reason = _reason(exc)
        checks.append(
            Check(
                "Lambda concurrency",
                UNREADABLE,
                f"the tiers sharing the account's pool may run {sum(t.max_concurrency or 0 for t in shared)} "
                f"consumers ({_caps(shared)}); the account's limit: {reason}",
                _fix_if_denied(reason, "grant lambda:GetAccountSettings to see whether the tiers fit the account"),
            )
        )
    else:
        checks.extend(account_checks(concurrency, limits))
    checks.extend(reservation_checks(concurrency))
    checks.append(_lambda_quota(client))
    checks.append(_schedules_quota(client))
    checks.append(_in_flight_quota(client, concurrency))
    return Report(stage, checks)


def account_checks(tiers: list[TierConcurrency], limits: dict[str, Any]) -> list[Check]:
    """The tiers against ``GetAccountSettings``' ``AccountLimit``: the pure part of :func:`diagnose`."""
    total = int(limits["ConcurrentExecutions"])
    unreserved = int(limits["UnreservedConcurrentExecutions"])
    checks = []
    if total < REGIONAL_DEFAULT_CONCURRENCY:
        checks.append(
            Check(
                "Lambda account quota",
                WARN,
                f"ConcurrentExecutions is {total}, below the regional default of {REGIONAL_DEFAULT_CONCURRENCY}: "
                "a new account starts reduced, and AWS raises it with use",
                "aws service-quotas request-service-quota-increase --service-code lambda "
                f"--quota-code {LAMBDA_CONCURRENCY_QUOTA[1]} --desired-value {REGIONAL_DEFAULT_CONCURRENCY}",
            )
        )
    else:
        checks.append(Check("Lambda account quota", OK, f"ConcurrentExecutions is {total}"))
    shared = [t for t in tiers if t.reserved is None]
    uncapped = [t.tier for t in shared if t.max_concurrency is None]
    demand = sum(t.max_concurrency or 0 for t in shared)
    names = _caps(shared)
    if uncapped:
        checks.append(
            Check(
                "Tiers' concurrency",
                WARN,
                f"{', '.join(uncapped)} has no maximum concurrency: it can take the whole unreserved pool "
                f"({unreserved})",
                "set max_concurrency on the tier (cdk.json) and deploy",
            )
        )
    if demand > unreserved:
        checks.append(
            Check(
                "Tiers' concurrency",
                FAIL,
                f"the tiers sharing the account's pool may run {demand} consumers ({names}), "
                f"{unreserved} are unreserved: at peak Lambda throttles them, and each throttle spends a receive",
                f"lower the tiers' max_concurrency so they sum to {unreserved} at most (2 each at least), "
                "or raise the account's quota",
            )
        )
    elif shared and not uncapped:
        checks.append(
            Check(
                "Tiers' concurrency",
                OK,
                f"the tiers sharing the account's pool may run {demand} consumers ({names}) of {unreserved} "
                "unreserved, the account's other functions besides",
            )
        )
    reserved = sum(t.reserved or 0 for t in tiers)
    if reserved and total - UNRESERVED_MINIMUM < reserved:
        checks.append(
            Check(
                "Reservations",
                FAIL,
                f"the tiers reserve {reserved} of {total}; Lambda keeps {UNRESERVED_MINIMUM} unreserved",
                "lower the tiers' reserved_concurrency or raise the account's quota",
            )
        )
    return checks


def local_checks(tiers: list[TierConcurrency]) -> list[Check]:
    """Local mode's answers: it has no account pool and no quotas (its embedded AWS serves neither, and asking
    printed its errors in the ``up`` terminal), only the tiers' own caps, each unit a worker process."""
    uncapped = [t.tier for t in tiers if t.max_concurrency is None]
    runs = f"the tiers run at most {sum(t.max_concurrency or 0 for t in tiers)} consumers at once ({_caps(tiers)})"
    if uncapped:
        runs += f"; {', '.join(uncapped)} has no maximum concurrency"
    return [
        Check(
            "Lambda concurrency",
            OK,
            f"local mode: {runs}, each an execution environment in a worker process on this machine; there is no "
            "account pool to share, so nothing is throttled",
        ),
        Check(
            "Service quotas",
            OK,
            "local mode has no Lambda, Scheduler or SQS quota: run doctor against the account you deploy to",
        ),
    ]


def reservation_checks(tiers: list[TierConcurrency]) -> list[Check]:
    """Each reserving tier's reservation against its mapping's maximum (no account figure needed)."""
    checks = []
    for tier in tiers:
        if tier.reserved is None:
            continue
        if tier.reserved == 0:
            checks.append(
                Check(
                    f"Tier {tier.tier} reserved",
                    FAIL,
                    "reserved concurrency 0: the consumer never runs, every batch is throttled",
                    "remove the reservation or set reserved_concurrency to max_concurrency or more",
                )
            )
        elif tier.max_concurrency is None or tier.reserved < tier.max_concurrency:
            checks.append(
                Check(
                    f"Tier {tier.tier} reserved",
                    FAIL,
                    f"reserved concurrency {tier.reserved} is below the mapping's maximum "
                    f"{tier.max_concurrency or 'of none'}: the mapping invokes more than the consumer may run",
                    f"set reserved_concurrency to {tier.max_concurrency or 'max_concurrency'} or more, "
                    "or lower max_concurrency",
                )
            )
        else:
            checks.append(
                Check(
                    f"Tier {tier.tier} reserved",
                    OK,
                    f"reserved concurrency {tier.reserved} covers its maximum {tier.max_concurrency}",
                )
            )
    return checks


def _tiers(stage: str, tiers: list[str], client: Clients, checks: list[Check]) -> list[TierConcurrency]:
    """Each tier's mapping and reservation; a tier that cannot be read becomes a check of its own."""
    from botocore.exceptions import ClientError

    uuids = tier_parameters(stage, tiers, Ssm.TIER_MAPPING_UUID, ssm=client("ssm"))
    found = []
    lambda_client = client("lambda")
    for tier in tiers:
        if tier not in uuids:
            checks.append(
                Check(
                    f"Tier {tier}",
                    UNREADABLE,
                    f"SSM parameter {Ssm.tier(stage, tier, Ssm.TIER_MAPPING_UUID)} not found",
                    "deploy the stage again (stacks deployed before pause and resume do not name their mappings)",
                )
            )
            continue
        try:
            mapping = lambda_client.get_event_source_mapping(UUID=uuids[tier])
            reserved = lambda_client.get_function_concurrency(FunctionName=unqualified(mapping["FunctionArn"]))
        except ClientError as exc:
            checks.append(
                Check(
                    f"Tier {tier}",
                    UNREADABLE,
                    _reason(exc),
                    "grant lambda:GetEventSourceMapping and lambda:GetFunctionConcurrency",
                )
            )
            continue
        maximum = mapping.get("ScalingConfig", {}).get("MaximumConcurrency")
        found.append(
            TierConcurrency(
                tier=tier,
                max_concurrency=int(maximum) if maximum is not None else None,
                batch_size=int(mapping.get("BatchSize", 10)),
                reserved=reserved.get("ReservedConcurrentExecutions"),
            )
        )
    return found


def unqualified(function_arn: str) -> str:
    """The function of a mapping's ``FunctionArn``: a canary tier's mapping invokes its alias
    (``...:function:<name>:live``), while a reservation is the function's, which Lambda reads only
    by the unqualified name or ARN."""
    parts = function_arn.split(":")
    return ":".join(parts[:7]) if len(parts) > 7 and parts[5] == "function" else function_arn


def _lambda_quota(client: Clients) -> Check:
    """The applied quota: what AWS has granted, which ``GetAccountSettings`` follows after a raise."""
    service, code = LAMBDA_CONCURRENCY_QUOTA
    quota = _get_quota(client, service, code)
    if isinstance(quota, str):
        return Check("Lambda quota (Service Quotas)", UNREADABLE, quota, _quota_fix("GetServiceQuota", quota))
    return Check("Lambda quota (Service Quotas)", OK, f"{quota['QuotaName']}: {quota['Value']:.0f}")


def _schedules_quota(client: Clients) -> Check:
    """Each pending one-time job (``--at``, a delay beyond SQS's 15 minutes, a debounce) and each periodic
    job holds one schedule of the account's quota in the region, shared with other applications."""
    quota = _named_quota(client, *SCHEDULES_QUOTA)
    if isinstance(quota, str):
        return Check("Scheduler schedules", UNREADABLE, quota, _quota_fix("ListServiceQuotas", quota))
    return Check(
        "Scheduler schedules",
        OK,
        f"{quota['QuotaName']}: {quota['Value']:.0f} in the region (one per pending one-time job and periodic job)",
    )


def _in_flight_quota(client: Clients, tiers: list[TierConcurrency]) -> Check:
    """A tier holds up to ``max_concurrency`` x ``batch_size`` messages in flight; past SQS's quota,
    receives return nothing and the tier stalls."""
    quota = _named_quota(client, *SQS_IN_FLIGHT_QUOTA)
    if isinstance(quota, str):
        return Check("SQS messages in flight", UNREADABLE, quota, _quota_fix("ListServiceQuotas", quota))
    limit = int(quota["Value"])
    over = [t for t in tiers if (t.max_concurrency or 0) * t.batch_size > limit]
    if over:
        return Check(
            "SQS messages in flight",
            FAIL,
            ", ".join(f"{t.tier} may hold {(t.max_concurrency or 0) * t.batch_size}" for t in over)
            + f" in flight, above {quota['QuotaName']} ({limit})",
            "lower the tier's max_concurrency or batch_size",
        )
    return Check("SQS messages in flight", OK, f"every tier holds at most its concurrency x batch, below {limit}")


def _get_quota(client: Clients, service: str, code: str) -> dict[str, Any] | str:
    """The quota, or why it cannot be read (denied, unknown to the endpoint, no such quota)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return dict(client("service-quotas").get_service_quota(ServiceCode=service, QuotaCode=code)["Quota"])
    except ClientError as exc:
        return _reason(exc)
    except BotoCoreError as exc:
        return str(exc)


def _named_quota(client: Clients, service: str, name: str) -> dict[str, Any] | str:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        pages = client("service-quotas").get_paginator("list_service_quotas").paginate(ServiceCode=service)
        for page in pages:
            for quota in page.get("Quotas", []):
                if name in str(quota.get("QuotaName", "")).lower():
                    return dict(quota)
    except ClientError as exc:
        return _reason(exc)
    except BotoCoreError as exc:
        return str(exc)
    return f"no {service} quota named like {name!r}"


def _caps(tiers: list[TierConcurrency]) -> str:
    return ", ".join(f"{t.tier} {t.max_concurrency}" for t in tiers if t.max_concurrency is not None)


def _reason(exc: Any) -> str:
    """Why a read failed, in one line: an endpoint that does not serve the call (the local mode's moto
    answers an HTML page) is said so, not quoted."""
    error = exc.response.get("Error", {})
    if "<" in str(error.get("Message", "")) or str(error.get("Code", "")).isdigit():
        return f"not served by this endpoint (HTTP {error.get('Code', '?')}, {exc.operation_name})"
    return client_error_text(exc)


#: Error codes of a call the caller's policies refuse: only then is a grant the fix.
DENIED_CODES = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")


def _quota_fix(action: str, reason: str) -> str:
    return _fix_if_denied(reason, f"grant servicequotas:{action} to read it (optional: nothing else depends on it)")


def _fix_if_denied(reason: str, grant: str) -> str:
    """``grant`` when the read was refused; otherwise no right would help."""
    if reason.split(":", 1)[0] in DENIED_CODES:
        return grant
    return "none needed: this endpoint or region does not offer it (the other checks stand)"
