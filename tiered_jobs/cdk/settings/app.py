"""The whole application's settings (``AppSettings``): stage, data safety, runtime, alarm delivery,
tiers, routes, schedules, triggers and resources, read from ``cdk.json`` or given in code; local mode's overrides."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tiered_jobs.contract.names import (
    CONTEXT_KEY,
    DEFAULT_TIERS,
    LOCAL_OVERRIDES_CONTEXT_KEY,
    STAGE_NAME_PATTERN,
    Schedules,
)
from tiered_jobs.contract.routing import Routes

from .chat import ChatSettings, build_chat
from .encryption import SETTINGS_KEY as ENCRYPTION_KEY
from .encryption import EncryptionSettings, build_encryption
from .local import profiled_tier, raw_tiers
from .names import check_names
from .profile import FULL, PROFILES, Profile
from .publishers import SETTINGS_KEY as PUBLISHERS_KEY
from .publishers import PublisherAccounts, build_publishers
from .resources import ResourceSettings, build_resources, tiers_of
from .schedules import ScheduleSettings, build_schedules
from .tier_builder import build_tier
from .tiers import TierSettings
from .triggers import SETTINGS_KEY as TRIGGERS_KEY
from .triggers import TriggerSettings, build_triggers
from .values import (
    SettingsError,
    field_defaults,
    read_bool,
    read_choice,
    read_int,
    read_optional_str,
    reject_unknown,
)

if TYPE_CHECKING:
    from aws_cdk import RemovalPolicy

#: Retention periods CloudWatch Logs accepts (days).
LOG_RETENTION_DAYS: tuple[int, ...] = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
#: Lambda runtimes the AWS-managed Powertools layer is published for (and the consumer supports).
RUNTIMES: tuple[str, ...] = ("python3.10", "python3.11", "python3.12", "python3.13", "python3.14")
ARCHITECTURES: tuple[str, ...] = ("arm64", "x86_64")
#: ``false`` / ``true`` / this string: also create the account-wide schema registry.
CREATE_REGISTRY = "create_registry"

_VERSION = re.compile(r"^(latest|\d+\.\d+\.\d+)$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class AppSettings:
    """The whole application: stage, data safety, runtime, alarm delivery, tiers and routes."""

    #: Names the stack, SSM parameters, functions and alarms; ``-c stage=prod`` overrides it.
    stage: str = "dev"
    #: ``full`` or ``dev`` (``settings/profile.py``): what the stage observes and keeps; ``-c profile=`` overrides it.
    profile: str = FULL
    #: ``False``: queues, DLQs, tables and log groups are retained when the stack is deleted.
    disposable: bool = False
    runtime: str = "python3.13"
    #: Graviton (``arm64``) is about 20 % cheaper than ``x86_64`` for the same duration.
    architecture: str = "arm64"
    #: Version of the AWS-managed Powertools layer; match ``aws-lambda-powertools`` in requirements.txt.
    powertools_version: str = "3.37.0"
    log_retention_days: int = 30
    #: Days the replay function's discard archive keeps a letter (the S3 bucket's lifecycle expiry).
    discard_archive_days: int = 365
    alarm_email: str | None = None
    #: E.g. a PagerDuty CloudWatch integration endpoint.
    alarm_https_url: str | None = None
    #: Slack / Microsoft Teams channels AWS Chatbot posts the alarm pages to (``settings/chat.py``).
    chat: ChatSettings | None = None
    #: ``False``, ``True`` (schemas in the existing console registry) or ``"create_registry"``.
    console_test_events: bool | str = False
    tiers: tuple[TierSettings, ...] = field(
        default_factory=lambda: tuple(build_tier(name, {}) for name in DEFAULT_TIERS)
    )
    #: The routing table (job-type glob -> tier; ``tiered_jobs.contract.routing``): an app's own, no
    #: default (the construct refuses to build without one).
    routes: Mapping[str, str] = field(default_factory=dict)
    #: Periodic jobs (EventBridge Scheduler), ``schedules`` in ``cdk.json``; see ``ScheduleSettings``.
    schedules: tuple[ScheduleSettings, ...] = ()
    #: AWS resources the jobs use, ``resources`` in ``cdk.json``; see ``ResourceSettings``.
    resources: tuple[ResourceSettings, ...] = ()
    #: AWS events that become jobs (EventBridge rules to tier queues), ``triggers`` in ``cdk.json``; see
    #: ``TriggerSettings``.
    triggers: tuple[TriggerSettings, ...] = ()
    #: The stage's own KMS key for everything it encrypts, ``encryption`` in ``cdk.json``; see ``EncryptionSettings``.
    encryption: EncryptionSettings | None = None
    #: Accounts whose roles may publish to the tier queues, ``publishers`` in ``cdk.json``; see ``PublisherAccounts``.
    publishers: PublisherAccounts | None = None

    @property
    def tier_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tiers)

    def tier(self, name: str) -> TierSettings:
        for tier in self.tiers:
            if tier.name == name:
                return tier
        raise KeyError(name)

    @property
    def profile_rules(self) -> Profile:
        """What the stage's ``profile`` observes and keeps."""
        return PROFILES[self.profile]

    @property
    def removal_policy(self) -> RemovalPolicy:
        """What deleting the stack does to the stateful parts (queues, tables, log groups, keys, the schedule
        group): ``DESTROY`` when ``disposable``, else ``RETAIN``."""
        from aws_cdk import (
            RemovalPolicy,  # here: the settings stay importable (and fast) without jsii
        )

        return RemovalPolicy.DESTROY if self.disposable else RemovalPolicy.RETAIN

    def tiers_using(self, resource: ResourceSettings) -> frozenset[str]:
        """The tiers whose consumers run jobs of ``resource.job_types``: only they get its variable and grant."""
        return tiers_of(resource.job_types, Routes(self.routes))

    @classmethod
    def from_context(
        cls,
        raw: Mapping[str, Any] | None,
        *,
        stage: str | None = None,
        source: str | None = None,
        profile: str | None = None,
    ) -> AppSettings:
        """Validate the object under ``tiered_jobs`` in ``cdk.json``; ``stage`` (CLI ``-c stage=``) wins.

        ``profile`` (CLI ``-c profile=``) wins over the object's ``profile``, and a disposable profile
        chosen there wins over its ``disposable`` too: one command line makes a developer's stage of an
        app whose ``cdk.json`` is written for its shared stages.

        ``source`` names where the settings come from in messages (default: ``context 'tiered_jobs'``;
        the construct says ``TieredJobs('Jobs')`` for settings given in code).
        """
        where = source or f"context {CONTEXT_KEY!r}"
        raw = {} if raw is None else raw
        if not isinstance(raw, Mapping):
            raise SettingsError(f"{where} must be an object, got {type(raw).__name__}")
        allowed = tuple(f.name for f in dataclasses.fields(cls))
        reject_unknown(raw, allowed, where)
        values: dict[str, Any] = {}
        default = field_defaults(cls)

        stage_value = stage if stage is not None else raw.get("stage", default["stage"])
        if not isinstance(stage_value, str) or not STAGE_NAME_PATTERN.match(stage_value):
            raise SettingsError(
                f"{where}: stage {stage_value!r} is invalid; use lower-case letters, digits and '-', "
                f"starting with a letter, at most 20 characters (e.g. 'dev', 'prod')"
            )
        values["stage"] = stage_value
        values["profile"] = read_choice(
            {"profile": profile} if profile is not None else raw, "profile", default["profile"], tuple(PROFILES), where
        )
        rules = PROFILES[values["profile"]]
        disposable = read_bool(raw, "disposable", default["disposable"], where)
        if rules.disposable and not disposable and profile is None and "disposable" in raw:
            raise SettingsError(
                f"{where}: profile {rules.name!r} is disposable (a developer's stage keeps nothing when deleted), "
                f"so 'disposable': false contradicts it; remove 'disposable' or use profile {FULL!r}"
            )
        values["disposable"] = disposable or rules.disposable
        values["runtime"] = read_choice(raw, "runtime", default["runtime"], RUNTIMES, where)
        values["architecture"] = read_choice(raw, "architecture", default["architecture"], ARCHITECTURES, where)
        version = raw.get("powertools_version", default["powertools_version"])
        if not isinstance(version, str) or not _VERSION.match(version):
            raise SettingsError(
                f"{where}: powertools_version {version!r} is invalid; use a released version like '3.37.0' "
                f"(the one pinned in requirements.txt) or 'latest'"
            )
        values["powertools_version"] = version
        retention = read_int(raw, "log_retention_days", default["log_retention_days"], where, minimum=1)
        if retention not in LOG_RETENTION_DAYS:
            raise SettingsError(
                f"{where}: log_retention_days {retention} is not a CloudWatch Logs retention; "
                f"use one of {', '.join(map(str, LOG_RETENTION_DAYS))}"
            )
        values["log_retention_days"] = retention
        values["discard_archive_days"] = read_int(
            raw, "discard_archive_days", default["discard_archive_days"], where, minimum=1
        )
        values["alarm_email"] = read_optional_str(
            raw, "alarm_email", where, _EMAIL, "an e-mail address like oncall@example.com"
        )
        url = read_optional_str(raw, "alarm_https_url", where, re.compile(r"^https://\S+$"), "an https:// URL")
        values["alarm_https_url"] = url
        values["chat"] = build_chat(raw.get("chat"), where)
        events = raw.get("console_test_events", default["console_test_events"])
        if not (isinstance(events, bool) or events == CREATE_REGISTRY):
            raise SettingsError(
                f"{where}: console_test_events {events!r} is invalid; use false, true "
                f"(the 'lambda-testevent-schemas' registry exists) or {CREATE_REGISTRY!r} (create it too)"
            )
        values["console_test_events"] = events

        tiers_raw = raw.get("tiers")
        if tiers_raw is None:
            tiers_raw = {tier.name: {} for tier in default["tiers"]}
        if not isinstance(tiers_raw, Mapping) or not tiers_raw:
            raise SettingsError(
                f"{where}: tiers must be a non-empty object {{tier name: {{settings}}}}, e.g. "
                f'{{"critical": {{}}, "bulk": {{"max_concurrency": 2}}}}'
            )
        values["tiers"] = tuple(build_tier(name, tier_raw) for name, tier_raw in tiers_raw.items())

        routes_raw = raw.get("routes", default["routes"])
        try:
            routes = Routes(routes_raw)
        except (TypeError, ValueError) as error:
            raise SettingsError(f"{where}: routes: {error}") from None
        tier_names = [t.name for t in values["tiers"]]
        unknown = routes.unknown_tiers(tier_names)
        if unknown:
            pattern, tier = sorted(unknown.items())[0]
            raise SettingsError(
                f"{where}: route {pattern!r} -> tier {tier!r}: unknown tier; "
                f"route it to one of {', '.join(tier_names)} or add {tier!r} under 'tiers'"
            )
        values["routes"] = routes.table
        values["schedules"] = build_schedules(raw.get(Schedules.SETTINGS_KEY, {}), routes, tier_names, where)
        values["triggers"] = build_triggers(raw.get(TRIGGERS_KEY, {}), routes, tier_names, where)
        values["encryption"] = build_encryption(raw.get(ENCRYPTION_KEY), where)
        values["publishers"] = build_publishers(raw.get(PUBLISHERS_KEY), where)
        values["resources"] = build_resources(raw.get("resources", {}), routes, where)
        check_names(where, stage_value, tier_names, [resource.name for resource in values["resources"]])
        return cls(**values)


def with_local_overrides(raw: Mapping[str, Any] | None, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The raw settings with local mode's overrides (context ``LOCAL_OVERRIDES_CONTEXT_KEY``) applied.

    ``overrides["settings"]`` replace top-level keys (``stage``, ``disposable``, ``runtime``...);
    ``overrides["tier_settings"]`` (the local profile) fill, in every tier (the default tiers when
    none are named), only what the tier leaves unset: a value the user wrote is kept
    (``settings/local.py``). The result is validated like any other settings.
    """
    merged = dict(raw or {})
    if not overrides:
        return merged
    where = f"context {LOCAL_OVERRIDES_CONTEXT_KEY!r}"
    if not isinstance(overrides, Mapping):
        raise SettingsError(f"{where} must be an object, got {type(overrides).__name__}")
    reject_unknown(overrides, ("settings", "tier_settings"), where)
    merged.update(overrides.get("settings") or {})
    tier_settings = overrides.get("tier_settings") or {}
    if tier_settings:
        tiers = raw_tiers(merged)
        if isinstance(tiers, Mapping):
            merged["tiers"] = {name: profiled_tier(name, values, tier_settings) for name, values in tiers.items()}
    return merged
