"""Entry points: build the whole CDK app (stack + cdk-nag) from ``cdk.json`` context or a given one."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from tiered_jobs.cdk import JobsCode, add_nag_checks
from tiered_jobs.cdk.lock import LOCK_CONTEXT_KEY, LOCK_FILE
from tiered_jobs.cdk.settings import AppSettings, SettingsError, one_line, with_local_overrides
from tiered_jobs.contract.names import CONTEXT_KEY, LOCAL_OVERRIDES_CONTEXT_KEY

from .stack import TieredJobsStack

REPO_ROOT = Path(__file__).resolve().parent.parent
CDK_JSON = REPO_ROOT / "cdk.json"
#: The deployed stages' retained queues and tables (docs/upgrading.md): ``app.py``'s synthesis refuses to
#: replace one. Named here, not in ``cdk.json``: the tests synthesize ``cdk.json``'s context with other
#: tiers at the same stage, which are no deploy of it.
LOCK = REPO_ROOT / LOCK_FILE
#: How jsii words a construct validation's refusal at synthesis; the messages follow it.
VALIDATION_FAILED = "Validation failed with the following errors:"
#: This app's jobs: ``functions/jobs``, imported by the consumers as ``functions.jobs``.
JOBS = JobsCode(REPO_ROOT / "functions" / "jobs", module="functions.jobs")
#: Top-level context key that overrides ``tiered_jobs.stage`` (``npx cdk deploy -c stage=prod``).
STAGE_OVERRIDE_KEY = "stage"
#: Top-level context key that overrides ``tiered_jobs.profile`` (``npx cdk deploy -c stage=dev-ana -c profile=dev``).
PROFILE_OVERRIDE_KEY = "profile"
#: Top-level context keys that pin the target (``-c account=123456789012 -c region=eu-west-1``).
ACCOUNT_KEY = "account"
REGION_KEY = "region"
#: What the CDK CLI sets from the current credentials and region (profile, ``AWS_REGION``...).
CDK_DEFAULT_ACCOUNT = "CDK_DEFAULT_ACCOUNT"
CDK_DEFAULT_REGION = "CDK_DEFAULT_REGION"


def load_cdk_context(path: Path = CDK_JSON, **settings_overrides: Any) -> dict[str, Any]:
    """``cdk.json``'s context (feature flags and settings), for synthesizing in-process.

    Keyword arguments replace single keys under ``tiered_jobs`` (e.g. ``stage="local"``,
    ``disposable=True``), so callers never edit the nested dictionary themselves.
    """
    context = dict(json.loads(path.read_text(encoding="utf-8")).get("context", {}))
    context[CONTEXT_KEY] = {**context.get(CONTEXT_KEY, {}), **settings_overrides}
    return context


def settings_of(app: cdk.App) -> AppSettings:
    """Validated settings from the app's context (``-c stage=...`` wins over ``tiered_jobs.stage``, ``-c profile=...``
    over ``tiered_jobs.profile``).

    Local mode's overrides (``LOCAL_OVERRIDES_CONTEXT_KEY``) win over both.
    """
    overrides = app.node.try_get_context(LOCAL_OVERRIDES_CONTEXT_KEY)
    raw = with_local_overrides(app.node.try_get_context(CONTEXT_KEY), overrides)
    overridden = "stage" in ((overrides or {}).get("settings") or {})
    stage = None if overridden else app.node.try_get_context(STAGE_OVERRIDE_KEY)
    return AppSettings.from_context(raw, stage=stage, profile=app.node.try_get_context(PROFILE_OVERRIDE_KEY))


def target_env(app: cdk.App, environ: Mapping[str, str]) -> cdk.Environment | None:
    """Where the stack deploys: ``-c account=`` / ``-c region=`` if given, else the CLI's defaults.

    The CDK CLI puts the account of the current credentials and the configured region in
    ``CDK_DEFAULT_ACCOUNT`` / ``CDK_DEFAULT_REGION``; ``app.py`` passes ``os.environ``. Nothing
    given at all (in-process synthesis: tests, local mode): an environment-agnostic stack.
    """
    account = app.node.try_get_context(ACCOUNT_KEY) or environ.get(CDK_DEFAULT_ACCOUNT) or None
    region = app.node.try_get_context(REGION_KEY) or environ.get(CDK_DEFAULT_REGION) or None
    if account is None and region is None:
        return None
    return cdk.Environment(account=str(account) if account else None, region=str(region) if region else None)


def build_app(
    context: Mapping[str, Any] | None = None,
    outdir: str | None = None,
    environ: Mapping[str, str] | None = None,
    lock: Path | None = None,
) -> cdk.App:
    """The whole app: one stack for the configured stage, checked by cdk-nag at synthesis.

    ``context=None`` lets CDK supply the context (``cdk.json`` and ``-c`` via the CLI); pass
    ``load_cdk_context(...)`` to synthesize in-process with the same feature flags and settings.
    ``environ`` is where the CLI's ``CDK_DEFAULT_*`` variables are read (see :func:`target_env`).
    ``lock``: the lock file the replacement guard compares with (``tiered_jobs/cdk/lock.py``), unless the
    context names one; ``None``: no guard.
    """
    app = cdk.App(context=dict(context) if context is not None else None, outdir=outdir)
    if lock is not None and app.node.try_get_context(LOCK_CONTEXT_KEY) is None:  # -c tiered_jobs:lock= wins
        app.node.set_context(LOCK_CONTEXT_KEY, str(lock))
    TieredJobsStack(app, settings=settings_of(app), jobs=JOBS, env=target_env(app, environ or {}))
    add_nag_checks(app)
    return app


def main(context: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """``app.py``'s body: synthesize; a settings mistake prints its message alone (no traceback) and exits 1."""
    try:
        app = build_app(context, environ=environ, lock=LOCK)
    except SettingsError as error:
        print(one_line(error), file=sys.stderr)
        return 1
    try:
        app.synth()
    except RuntimeError as error:  # a validation's refusal (the replacement guard): its messages, not jsii's stack
        if VALIDATION_FAILED not in str(error):
            raise
        print(str(error).split(VALIDATION_FAILED, 1)[1].strip(), file=sys.stderr)
        return 1
    return 0
