"""AWS resources the jobs use: ``resources`` in ``cdk.json``, a table the stack creates or an existing
table or queue, granted to the tiers that route to its job types."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tiered_jobs.contract.names import RESOURCE_NAME_MAX_CHARS, RESOURCE_NAME_PATTERN
from tiered_jobs.contract.routing import Routes, UnknownRouteError

from .values import SettingsError, reject_unknown

#: ``kind`` of a resource, and what a tier's consumer may do with it (``access``; the first is the default).
TABLE, QUEUE = "table", "queue"
ACCESS: dict[str, tuple[str, ...]] = {TABLE: ("read_write", "read"), QUEUE: ("send",)}
#: ARNs of existing resources (any partition): a DynamoDB table, an SQS queue.
_ARN = {
    TABLE: re.compile(r"^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/[A-Za-z0-9_.-]{3,255}$"),
    QUEUE: re.compile(r"^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?$"),
}
_ARN_EXAMPLE = {
    TABLE: "arn:aws:dynamodb:eu-west-1:123456789012:table/invoices",
    QUEUE: "arn:aws:sqs:eu-west-1:123456789012:audit",
}
_ATTRIBUTE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
#: A customer-managed KMS key by its key ARN (an alias ARN authorizes nothing in an IAM policy).
_KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]{1,2000}$")
_KMS_KEY_EXAMPLE = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
#: A DynamoDB index name (Query's ``IndexName``), or ``*``: every index of the table.
_INDEX_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
ALL_INDEXES = "*"
_RESOURCE_KEYS = ("kind", "job_types", "access", "partition_key", "sort_key", "arn", "kms_key_arn", "indexes")
_RESOURCE_EXAMPLE = (
    '{"invoices": {"kind": "table", "partition_key": "invoice_id", "job_types": ["invoices.*"]}, '
    '"audit": {"kind": "queue", "arn": "arn:aws:sqs:eu-west-1:123456789012:audit", "job_types": ["payments.*"]}}'
)


@dataclass(frozen=True)
class ResourceSettings:
    """One AWS resource the jobs use: a table this stack creates, or an existing table or queue by ARN.

    The consumers of the tiers whose routes carry ``job_types`` (globs) get its table name or queue
    URL in ``Env.resource_var(name)`` and a grant of ``access``; jobs read it with ``ctx.resource(name)``.
    """

    name: str
    #: ``"table"`` or ``"queue"``.
    kind: str
    #: Job-type globs whose jobs use the resource (``invoices.send``, ``billing.*``).
    job_types: tuple[str, ...]
    #: Tables: ``"read_write"`` or ``"read"``; queues: ``"send"``.
    access: str
    #: A table this stack creates: its key attributes (strings). ``None`` for an existing resource.
    partition_key: str | None = None
    sort_key: str | None = None
    #: An existing table or queue (not created, not deleted by the stack).
    arn: str | None = None
    #: The customer-managed KMS key an existing table or queue is encrypted with: the consumers get the
    #: key actions their access needs on that key only. ``None``: AWS-owned or AWS-managed encryption.
    kms_key_arn: str | None = None
    #: An existing table's indexes the jobs query (``Query``/``Scan``): names, or ``("*",)`` for all.
    indexes: tuple[str, ...] = ()

    @property
    def created(self) -> bool:
        return self.arn is None


def tiers_of(job_types: tuple[str, ...], routes: Routes) -> frozenset[str]:
    """Every tier a job matching one of ``job_types`` can be routed to.

    A glob reaches the tier it routes to itself and the tier of each more specific route inside it
    (``payments.*`` also reaches the tier of a ``payments.refund`` route).
    """
    tiers = set()
    for glob in job_types:
        for candidate in (glob, *(p for p in routes.table if fnmatch.fnmatchcase(p, glob))):
            try:
                tiers.add(routes.tier_for(candidate))
            except UnknownRouteError:
                continue
    return frozenset(tiers)


def build_resources(raw: Any, routes: Routes, where: str) -> tuple[ResourceSettings, ...]:
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: resources must be an object {{name: {{resource}}}}, e.g. {_RESOURCE_EXAMPLE}")
    return tuple(_build_resource(name, value, routes) for name, value in raw.items())


def _build_resource(name: Any, raw: Any, routes: Routes) -> ResourceSettings:
    if not isinstance(name, str) or not RESOURCE_NAME_PATTERN.match(name) or len(name) > RESOURCE_NAME_MAX_CHARS:
        raise SettingsError(
            f"resource {name!r}: invalid name; use lower-case words joined by '_', each starting with a letter, "
            f"at most {RESOURCE_NAME_MAX_CHARS} characters (e.g. 'invoices', 'invoice_lines')"
        )
    where = f"resource {name!r}"
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: must be an object with keys {', '.join(_RESOURCE_KEYS)}, got {raw!r}")
    reject_unknown(raw, _RESOURCE_KEYS, where)
    kind = raw.get("kind")
    if kind not in ACCESS:
        raise SettingsError(f"{where}: kind {kind!r} is not supported; use one of {', '.join(ACCESS)}")
    access = raw.get("access", ACCESS[kind][0])
    if access not in ACCESS[kind]:
        raise SettingsError(
            f"{where}: access {access!r} does not apply to a {kind}; use one of "
            f"{', '.join(ACCESS[kind])} or remove 'access' for {ACCESS[kind][0]!r}"
        )
    job_types = raw.get("job_types")
    if (
        not isinstance(job_types, (list, tuple))
        or not job_types
        or any(not isinstance(glob, str) or not glob for glob in job_types)
    ):
        raise SettingsError(
            f"{where}: job_types must be a non-empty list of job-type globs, e.g. ['invoices.send'] or ['invoices.*']"
        )
    arn = raw.get("arn")
    keys = {key: raw.get(key) for key in ("partition_key", "sort_key")}
    if arn is not None:
        if not isinstance(arn, str) or not _ARN[kind].match(arn):
            raise SettingsError(f"{where}: arn {arn!r} is not the ARN of an existing {kind}, e.g. {_ARN_EXAMPLE[kind]}")
        given = [key for key, value in keys.items() if value is not None]
        if given:
            raise SettingsError(
                f"{where}: {', '.join(given)} describe a table this stack creates; an existing "
                f"one (arn) keeps its own keys: remove {', '.join(given)} or the arn"
            )
    elif kind == QUEUE:
        raise SettingsError(
            f"{where}: a queue must be an existing one, named by its arn (the stack creates only tables for jobs)"
        )
    else:
        if keys["partition_key"] is None:
            raise SettingsError(
                f"{where}: a table this stack creates needs a partition_key "
                f"(e.g. 'partition_key': 'invoice_id'), or name an existing table by its arn"
            )
        for key, value in keys.items():
            if value is not None and (not isinstance(value, str) or not _ATTRIBUTE_NAME.match(value)):
                raise SettingsError(f"{where}: {key} {value!r} is not a DynamoDB attribute name")
    kms_key_arn, indexes = _existing_only(raw, kind, arn, where)
    job_types = tuple(job_types)
    if not tiers_of(job_types, routes):
        raise SettingsError(
            f"{where}: no route carries job_types {', '.join(map(repr, job_types))}, so no tier would use it; "
            f"add a route for them or fix job_types"
        )
    return ResourceSettings(
        name=name,
        kind=kind,
        job_types=job_types,
        access=access,
        arn=arn,
        kms_key_arn=kms_key_arn,
        indexes=indexes,
        **keys,
    )


def _existing_only(raw: Mapping[str, Any], kind: str, arn: Any, where: str) -> tuple[str | None, tuple[str, ...]]:
    """``kms_key_arn`` and ``indexes``: what an existing resource needs granted beyond its own ARN."""
    kms_key_arn, indexes = raw.get("kms_key_arn"), raw.get("indexes")
    if arn is None:
        given = [key for key, value in (("kms_key_arn", kms_key_arn), ("indexes", indexes)) if value is not None]
        if given:
            raise SettingsError(
                f"{where}: {', '.join(given)} describe an existing table or queue (named by "
                f"its arn); a table this stack creates is encrypted with an AWS-managed key and "
                f"has no indexes: remove {', '.join(given)} or add the arn"
            )
    if kms_key_arn is not None and (not isinstance(kms_key_arn, str) or not _KMS_KEY_ARN.match(kms_key_arn)):
        raise SettingsError(
            f"{where}: kms_key_arn {kms_key_arn!r} is not a KMS key ARN (an alias's is not "
            f"enough: IAM grants on the key), e.g. {_KMS_KEY_EXAMPLE}"
        )
    if indexes is None:
        return kms_key_arn, ()
    if kind != TABLE:
        raise SettingsError(f"{where}: indexes apply to a table, not a {kind}; remove indexes")
    if (
        not isinstance(indexes, (list, tuple))
        or not indexes
        or any(
            not isinstance(index, str) or not (index == ALL_INDEXES or _INDEX_NAME.match(index)) for index in indexes
        )
    ):
        raise SettingsError(
            f"{where}: indexes must be a non-empty list of the table's index names (3-255 of "
            f"letters, digits, '_', '-', '.'), or [{ALL_INDEXES!r}] for all of them, "
            f"e.g. ['by_customer'], got {indexes!r}"
        )
    if ALL_INDEXES in indexes and len(indexes) > 1:
        raise SettingsError(
            f"{where}: indexes {list(indexes)!r}: {ALL_INDEXES!r} already means every index; "
            f"give [{ALL_INDEXES!r}] or the names"
        )
    return kms_key_arn, tuple(dict.fromkeys(indexes))
