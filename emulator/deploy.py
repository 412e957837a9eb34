"""Deploy the real stack into the embedded AWS: synthesize, upload assets, CreateStack, describe.

What runs locally is read back from the deployed resources (stack outputs, SSM parameters,
``GetFunctionConfiguration``, ``ListEventSourceMappings``), never from hard-coded values, so the
local runtime runs what the template says.
"""

from __future__ import annotations

import filecmp
import io
import json
import os
import platform
import sys
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from emulator import moto_patches, synth_cache
from emulator.cdk_app import DEFAULT_ACCOUNT_ENV, DEFAULT_REGION_ENV, CdkApp, CdkAppError, StackArtifact, stacks
from emulator.esm import FunctionConfig, MappingConfig
from emulator.event_rules import create_rule_buses
from emulator.logs import function_log_groups
from emulator.server import ACCOUNT_ID, DEFAULT_REGION, Endpoint
from emulator.template import Resolver
from tiered_jobs.cdk.dependencies import LAYER_PYTHON_DIR
from tiered_jobs.cdk.packaging import JobsSource
from tiered_jobs.cdk.settings.local import METADATA_KEY as LOCAL_PROFILE_METADATA_KEY
from tiered_jobs.contract.names import (
    LOCAL_MODE_STACK_TAG,
    LOCAL_OVERRIDES_CONTEXT_KEY,
    TEMPLATE_METADATA_KEY,
    Alarms,
    Outputs,
    Ssm,
)

#: This repository's checkout: its own app (``app.py``, ``cdk.json``, ``functions/``) is the default one.
REPO_ROOT = Path(__file__).resolve().parent.parent
LOCAL_STAGE = "local"


class LocalAppError(CdkAppError):
    """The app's assembly cannot run locally (no stack or several with Tiered Jobs, overrides not applied...)."""


#: Tier settings of the local profile: seconds instead of minutes, shallow concurrency for a laptop.
#: They replace defaults only: a value the app sets is kept (``tiered_jobs/cdk/settings/local.py``),
#: and so is the number of attempts (not a speed: a job's own ``max_attempts`` is at most its tier's).
#: Every value passes the stack's own guardrails (visibility = 6 x timeout + window).
LOCAL_TIER_SETTINGS: dict[str, Any] = {
    "retry_schedule_seconds": [1, 2, 3],
    # 5 s timeout -> 30 s visibility (+ window): a crashed batch returns in half a minute.
    "timeout_seconds": 5,
    # Lambda's smallest maximum concurrency; each unit is a worker process here.
    "max_concurrency": 2,
}


def local_settings() -> dict[str, Any]:
    """App settings of the local stage: disposable, and the runtime/architecture that really run it.

    The functions run on this machine's Python, so the deployed runtime and architecture say so
    (``python3.11`` on ``x86_64`` here) instead of what ``cdk.json`` picks for AWS.
    """
    machine = platform.machine().lower()
    return {
        "stage": LOCAL_STAGE,
        "disposable": True,
        "runtime": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "architecture": "arm64" if machine in ("arm64", "aarch64") else "x86_64",
    }


def local_overrides(
    tier_settings: Mapping[str, Any] | None = None, settings: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The value of context ``LOCAL_OVERRIDES_CONTEXT_KEY``: the local stage's settings (``settings``
    replace single keys) and the local tier settings (``tier_settings`` replace them whole)."""
    return {
        "settings": {**local_settings(), **(settings or {})},
        "tier_settings": dict(LOCAL_TIER_SETTINGS if tier_settings is None else tier_settings),
    }


@dataclass(frozen=True)
class Assembly(StackArtifact):
    """The stack of a synthesized cloud assembly that holds Tiered Jobs, as a deployment needs it."""

    #: The app's folder (the working directory of its synthesis): the job folder is relative to it.
    app_directory: Path = REPO_ROOT

    @property
    def stage(self) -> str:
        """The stage its ``TieredJobs`` was built for (the template's ``Metadata.TieredJobs``)."""
        stage: str = self.template["Metadata"][TEMPLATE_METADATA_KEY]["stage"]
        return stage

    @property
    def profile_changes(self) -> list[str]:
        """What the local profile changed, one line per tier and setting (``tier critical: timeout_seconds
        30 -> 5``), as its ``TieredJobs`` recorded it; values the app set are kept, so never listed."""
        changes = self.template["Metadata"][TEMPLATE_METADATA_KEY].get(LOCAL_PROFILE_METADATA_KEY, [])
        return [
            f"tier {change['tier']}: {change['setting']} {_shown(change['from'])} -> {_shown(change['to'])}"
            for change in changes
        ]

    @classmethod
    def read(cls, directory: Path, app_directory: Path = REPO_ROOT, stack: str | None = None) -> Assembly:
        """The stack of the assembly in ``directory`` whose template carries ``Metadata.TieredJobs``
        (``stack``: the one of that name, when several do)."""
        found = stacks(directory)
        ours = [s for s in found if TEMPLATE_METADATA_KEY in s.template.get("Metadata", {})]
        listed = ", ".join(sorted(s.display_name for s in ours))
        if stack is not None:
            ours = [s for s in ours if stack in s.names]
            if not ours:
                raise LocalAppError(
                    f"--stack {stack}: no such stack uses TieredJobs in this app (those that do: {listed or 'none'})"
                )
        if not ours:
            others = ", ".join(s.display_name for s in found) or "none"
            raise LocalAppError(
                f"no stack in this app uses TieredJobs (its stacks: {others}); add "
                'TieredJobs(stack, "Jobs", jobs=JobsCode(...), ...) to one, or run local mode '
                "from the folder of the app that does"
            )
        if len(ours) > 1:
            raise LocalAppError(f"several stacks of this app use TieredJobs ({listed}); choose one with --stack NAME")
        (chosen,) = ours
        return cls(**{f.name: getattr(chosen, f.name) for f in fields(chosen)}, app_directory=app_directory)

    def jobs_source(self) -> JobsSource:
        """Where the functions' code comes from: the job folder the template's metadata names
        (relative to the app's folder), with the runtime parts the asset shipped: the installed
        ``tiered_jobs``'s when they are the same files (this checkout's app), else the asset's own
        copy (the app's installed version, which may not be the emulator's)."""
        jobs = self.template["Metadata"][TEMPLATE_METADATA_KEY]["jobs"]
        source = JobsSource(self.app_directory / jobs["path"], module=jobs["module"])
        asset = self.code_asset(source.module_path)
        installed = {name: path for name, path in source.files().items() if name.startswith("tiered_jobs/")}
        shipped = {
            path.relative_to(asset).as_posix(): path
            for path in sorted((asset / "tiered_jobs").rglob("*"))
            if path.is_file()
        }
        if installed.keys() == shipped.keys() and all(
            filecmp.cmp(installed[n], shipped[n], shallow=False) for n in installed
        ):
            return source
        return replace(source, runtime_dir=asset / "tiered_jobs")

    def code_asset(self, module_path: str) -> Path:
        """The staged directory of the functions' code (the file asset holding the job folder)."""
        for asset in self.assets.get("files", {}).values():
            path: Path = self.directory / asset["source"]["path"]
            if asset["source"].get("packaging") == "zip" and (path / module_path).is_dir():
                return path
        raise LocalAppError(f"stack {self.stack_name} has no code asset holding {module_path}/")

    def asset_directory(self, object_key: str) -> Path:
        """The local directory of the file asset uploaded as ``object_key``."""
        for asset in self.assets["files"].values():
            if any(d["objectKey"] == object_key for d in asset["destinations"].values()):
                path: Path = self.directory / asset["source"]["path"]
                return path
        raise KeyError(f"no asset uploaded as {object_key}")


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, list) else str(value)


def app_environment(app: CdkApp, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment the app's command runs in: this one, except that an app outside this checkout
    does not get the checkout on ``PYTHONPATH`` (it is there to import the emulator): the app
    imports its own installed ``tiered_jobs``, as ``cdk synth`` in its folder would."""
    env = dict(environ)
    if app.directory.is_relative_to(REPO_ROOT) or "PYTHONPATH" not in env:
        return env
    kept = [entry for entry in env["PYTHONPATH"].split(os.pathsep) if entry and Path(entry).resolve() != REPO_ROOT]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        del env["PYTHONPATH"]
    return env


def synthesize(
    outdir: Path, app: CdkApp | None = None, overrides: Mapping[str, Any] | None = None, *, stack: str | None = None
) -> Assembly:
    """Synthesize ``app`` (default: this repository's, from its ``cdk.json``) into ``outdir`` as
    ``cdk synth`` does, with the local overrides (default: :func:`local_overrides`) as context
    ``LOCAL_OVERRIDES_CONTEXT_KEY`` and the embedded AWS as the CLI's account and region; then
    pick the stack that uses TieredJobs (``stack``: by name, when several do)."""
    app = app if app is not None else CdkApp.load(REPO_ROOT)
    overrides = dict(overrides if overrides is not None else local_overrides())
    synth_cache.synth(
        app,
        outdir,
        context={LOCAL_OVERRIDES_CONTEXT_KEY: overrides},
        account=ACCOUNT_ID,
        region=DEFAULT_REGION,
        environ=app_environment(app),
    )
    assembly = Assembly.read(outdir, app.directory, stack)
    stage = overrides["settings"]["stage"]
    if assembly.stage != stage:
        raise LocalAppError(
            f"stack {assembly.stack_name} is stage {assembly.stage!r}, not local mode's {stage!r}: "
            f"its TieredJobs did not apply context {LOCAL_OVERRIDES_CONTEXT_KEY!r}"
        )
    account, region = assembly.environment.removeprefix("aws://").split("/", 1)
    if account not in ("unknown-account", ACCOUNT_ID) or region not in ("unknown-region", DEFAULT_REGION):
        raise LocalAppError(
            f"stack {assembly.stack_name} is pinned to {assembly.environment}; the embedded AWS "
            f"is account {ACCOUNT_ID} in {DEFAULT_REGION}: take the stack's env from "
            f"{DEFAULT_ACCOUNT_ENV} / {DEFAULT_REGION_ENV} (local mode sets them, as the CDK CLI "
            "does) or leave it out"
        )
    return assembly


def zip_directory(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()


def upload_assets(assembly: Assembly, s3: Any, account_id: str, region: str) -> None:
    """What ``cdk deploy`` publishes: each file asset into the bootstrap bucket (created here)."""
    created: set[str] = set()
    for asset in assembly.assets["files"].values():
        source = assembly.directory / asset["source"]["path"]
        body = zip_directory(source) if asset["source"]["packaging"] == "zip" else source.read_bytes()
        for destination in asset["destinations"].values():
            bucket = (
                destination["bucketName"].replace("${AWS::AccountId}", account_id).replace("${AWS::Region}", region)
            )
            if bucket not in created:
                s3.create_bucket(Bucket=bucket)  # us-east-1: no location constraint
                created.add(bucket)
            s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=body)


@dataclass(frozen=True)
class LocalTier:
    name: str
    queue_url: str
    queue_arn: str
    dlq_url: str
    dlq_arn: str
    mapping: MappingConfig
    #: Every alarm of the tier (kind -> alarm name).
    alarms: dict[str, str]

    @property
    def consumer(self) -> FunctionConfig:
        return self.mapping.function


@dataclass(frozen=True)
class LocalDeployment:
    """The deployed stack, as the local runtime and the demo need it."""

    stack_name: str
    stage: str
    endpoint: Endpoint
    outputs: dict[str, str]
    tiers: dict[str, LocalTier]
    replay: FunctionConfig
    #: The resources of cdk.json (``{name: table name or queue URL}``), read back from their SSM parameters.
    resources: dict[str, str]
    idempotency_table: str
    alarm_topic_arn: str
    assembly: Assembly
    #: What the moto adapter did, for the output and the docs (gap -> details).
    gaps: dict[str, list[str]] = field(default_factory=dict)


def deploy(endpoint: Endpoint, assembly: Assembly, clients: Callable[[str], Any]) -> LocalDeployment:
    """CreateStack in moto (handling its gaps), then describe what was deployed."""
    region, template = endpoint.region, assembly.template
    seeded = moto_patches.seed_parameters(template, clients("ssm"), ACCOUNT_ID, region)
    upload_assets(assembly, clients("s3"), ACCOUNT_ID, region)
    direct, shifting = moto_patches.invoke_functions_not_aliases(template)
    deployable, held = moto_patches.split_template(direct)
    disabled = moto_patches.disable_event_source_mappings(deployable)
    bucket = f"cdk-hnb659fds-assets-{ACCOUNT_ID}-{region}"
    template_key = "local-" + assembly.stack_name + ".template.json"
    clients("s3").put_object(Bucket=bucket, Key=template_key, Body=json.dumps(deployable).encode())
    # A trigger's rule on a partner's or custom bus: on AWS the bus exists before the stack (event_rules).
    buses = create_rule_buses(deployable, clients("events"))
    cloudformation = clients("cloudformation")
    cloudformation.create_stack(
        StackName=assembly.stack_name,
        TemplateURL=f"https://{bucket}.s3.amazonaws.com/{template_key}",  # the template is over TemplateBody's 51 KB
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
        Tags=[{"Key": LOCAL_MODE_STACK_TAG, "Value": "true"}],  # operator commands tell local mode by it
    )
    stack = cloudformation.describe_stacks(StackName=assembly.stack_name)["Stacks"][0]
    if stack["StackStatus"] != "CREATE_COMPLETE":
        raise RuntimeError(f"stack {assembly.stack_name} is {stack['StackStatus']}: {stack.get('StackStatusReason')}")
    summaries = _stack_resources(cloudformation, assembly.stack_name)
    resolver = Resolver(
        physical_ids={s["LogicalResourceId"]: s["PhysicalResourceId"] for s in summaries},
        types={s["LogicalResourceId"]: s["ResourceType"] for s in summaries},
        parameters={name: p.get("Default") for name, p in template.get("Parameters", {}).items()},
        pseudo={
            "AWS::Region": region,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": assembly.stack_name,
        },
        attribute=moto_patches.deployed_attribute(clients),
    )
    moto_patches.create_held_back(held, resolver, clients, ACCOUNT_ID, region)
    applied = moto_patches.apply_ignored_properties(template, resolver, clients)
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    deployment = describe(endpoint, assembly, outputs, resolver.physical_ids, clients)
    gaps = {
        "seeded SSM parameters": sorted(seeded),
        "created outside CloudFormation": [f"{r['Type']} {lid}" for lid, r in held.items()],
        "properties applied after CloudFormation": applied,
        "moto event source mappings created disabled": disabled,
        "event buses created for the rules": buses,
        "left out: no traffic shifting locally": shifting,
    }
    return LocalDeployment(**{**deployment.__dict__, "gaps": gaps})


def _stack_resources(cloudformation: Any, name: str) -> list[dict[str, Any]]:
    paginator = cloudformation.get_paginator("list_stack_resources")
    return [s for page in paginator.paginate(StackName=name) for s in page["StackResourceSummaries"]]


def read_function(
    lambda_client: Any, name: str, code_root: str, log_group: str = "", layer_paths: tuple[str, ...] = ()
) -> FunctionConfig:
    """A deployed function's configuration, as ``GetFunctionConfiguration`` reports it now (moto's
    has no ``LoggingConfig``: the log group comes from the template, see :func:`describe`)."""
    config = lambda_client.get_function_configuration(FunctionName=name)
    return FunctionConfig(
        name=name,
        arn=config["FunctionArn"],
        handler=config["Handler"],
        environment=dict(config.get("Environment", {}).get("Variables", {})),
        timeout_seconds=int(config["Timeout"]),
        memory_mb=int(config["MemorySize"]),
        region=config["FunctionArn"].split(":")[3],
        code_root=code_root,
        log_group=log_group,
        layer_paths=layer_paths,
    )


def _function_config(
    lambda_client: Any, name: str, assembly: Assembly, physical_ids: Mapping[str, str]
) -> FunctionConfig:
    """The function, with its code asset (the directory uploaded for its ``Code.S3Key``) as code root
    and the ``python`` folder of each layer of the stack's own (the job folder's packages: the
    Powertools layer is this environment's installed Powertools)."""
    resources = assembly.template["Resources"]
    logical_id = next(lid for lid, pid in physical_ids.items() if pid == name)
    properties = resources[logical_id]["Properties"]
    log_group = function_log_groups(assembly.template, physical_ids).get(name, "")
    layers = tuple(
        str(assembly.asset_directory(resources[layer["Ref"]]["Properties"]["Content"]["S3Key"]) / LAYER_PYTHON_DIR)
        for layer in properties.get("Layers", [])
        if isinstance(layer, dict)
        and resources.get(layer.get("Ref", ""), {}).get("Type") == "AWS::Lambda::LayerVersion"
    )
    return read_function(
        lambda_client, name, str(assembly.asset_directory(properties["Code"]["S3Key"])), log_group, layers
    )


def describe(
    endpoint: Endpoint,
    assembly: Assembly,
    outputs: Mapping[str, str],
    physical_ids: Mapping[str, str],
    clients: Callable[[str], Any],
) -> LocalDeployment:
    """Read every tier's queue, DLQ, consumer and mapping back from the deployed resources."""
    stage = assembly.stage
    lambda_client = clients("lambda")
    tier_names = clients("ssm").get_parameter(Name=Ssm.tiers(stage))["Parameter"]["Value"].split(",")
    tiers: dict[str, LocalTier] = {}
    for name in tier_names:
        function = _function_config(
            lambda_client, outputs[Outputs.tier(name, Outputs.CONSUMER_FUNCTION_NAME)], assembly, physical_ids
        )
        (mapping,) = lambda_client.list_event_source_mappings(FunctionName=function.name)["EventSourceMappings"]
        if mapping["State"] != "Disabled":  # moto would run the function in Docker (moto_patches, gap 5)
            raise RuntimeError(
                f"moto's event source mapping of {function.name} is {mapping['State']}; local mode deploys it disabled"
            )
        queue_url = outputs[Outputs.tier(name, Outputs.QUEUE_URL)]
        tiers[name] = LocalTier(
            name=name,
            queue_url=queue_url,
            queue_arn=mapping["EventSourceArn"],
            dlq_url=outputs[Outputs.tier(name, Outputs.DLQ_URL)],
            dlq_arn=outputs[Outputs.tier(name, Outputs.DLQ_ARN)],
            mapping=MappingConfig(
                function=function,
                queue_url=queue_url,
                queue_arn=mapping["EventSourceArn"],
                batch_size=int(mapping["BatchSize"]),
                batching_window_seconds=int(mapping.get("MaximumBatchingWindowInSeconds", 0)),
                maximum_concurrency=int(mapping.get("ScalingConfig", {}).get("MaximumConcurrency", 1000)),
                report_batch_item_failures="ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", []),
            ),
            alarms={kind: Alarms.name(stage, name, kind) for kind in Alarms.KINDS},
        )
    return LocalDeployment(
        stack_name=assembly.stack_name,
        stage=stage,
        endpoint=endpoint,
        outputs=dict(outputs),
        tiers=tiers,
        replay=_function_config(lambda_client, outputs[Outputs.REPLAY_FUNCTION_NAME], assembly, physical_ids),
        resources=_resources(clients("ssm"), stage),
        idempotency_table=outputs[Outputs.IDEMPOTENCY_TABLE_NAME],
        alarm_topic_arn=outputs[Outputs.ALARM_TOPIC_ARN],
        assembly=assembly,
    )


def _resources(ssm: Any, stage: str) -> dict[str, str]:
    """``{name: value}`` of the stage's ``Ssm.resource`` parameters (every resource of cdk.json)."""
    path = Ssm.resources_path(stage)
    pages = ssm.get_paginator("get_parameters_by_path").paginate(Path=path)
    return {p["Name"].removeprefix(f"{path}/"): p["Value"] for page in pages for p in page["Parameters"]}
