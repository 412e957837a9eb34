"""Deploy the real stack into the embedded AWS: synthesize, upload assets, CreateStack, describe.

What runs locally is read back from the deployed resources (stack outputs, SSM parameters,
``GetFunctionConfiguration``, ``ListEventSourceMappings``), never from hard-coded values, so the
local runtime runs what the template says.
"""

from __future__ import annotations

import io
import json
import platform
import subprocess
import sys
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator import moto_patches
from emulator.esm import FunctionConfig, MappingConfig
from emulator.logs import function_log_groups
from emulator.server import ACCOUNT_ID, Endpoint
from emulator.template import Resolver
from tiered_jobs.contract.names import TEMPLATE_METADATA_KEY, Alarms, Outputs, Ssm, stack_name
from tiered_jobs.packaging import JobsSource

#: The repository checkout the stack is synthesized from (``infra/``, ``cdk.json``, ``functions/``).
REPO_ROOT = Path(__file__).resolve().parent.parent
LOCAL_STAGE = "local"

#: Tier settings of the local profile: seconds instead of minutes, shallow concurrency for a laptop.
#: Every value passes the stack's own guardrails (visibility = 6 x timeout + window; redrive = attempts).
LOCAL_TIER_SETTINGS: dict[str, Any] = {
    "retry_schedule_seconds": [1, 2, 3],
    "max_attempts": 4,
    "retry_jitter": 0.2,
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


@dataclass(frozen=True)
class Assembly:
    """The parts of a synthesized cloud assembly that a deployment needs."""

    directory: Path
    stage: str
    template: dict[str, Any]
    assets: dict[str, Any]

    @property
    def stack_name(self) -> str:
        return stack_name(self.stage)

    @classmethod
    def read(cls, directory: Path, stage: str) -> Assembly:
        name = stack_name(stage)
        template = json.loads((directory / f"{name}.template.json").read_text(encoding="utf-8"))
        assets = json.loads((directory / f"{name}.assets.json").read_text(encoding="utf-8"))
        return cls(directory, stage, template, assets)

    def jobs_source(self, app_directory: Path = REPO_ROOT) -> JobsSource:
        """Where the functions' code comes from: the job folder the template's metadata names
        (relative to the app's folder), with the runtime parts of the installed ``tiered_jobs``."""
        jobs = self.template["Metadata"][TEMPLATE_METADATA_KEY]["jobs"]
        return JobsSource(app_directory / jobs["path"], module=jobs["module"])

    def asset_directory(self, object_key: str) -> Path:
        """The local directory of the file asset uploaded as ``object_key``."""
        for asset in self.assets["files"].values():
            if any(d["objectKey"] == object_key for d in asset["destinations"].values()):
                path: Path = self.directory / asset["source"]["path"]
                return path
        raise KeyError(f"no asset uploaded as {object_key}")


def synthesize(outdir: Path, tier_settings: Mapping[str, Any] | None = None,
               settings: Mapping[str, Any] | None = None) -> Assembly:
    """Synthesize the stack of ``cdk.json`` (with the local overrides) into ``outdir``."""
    overrides = {"settings": {**local_settings(), **(settings or {})},
                 "tier_settings": dict(LOCAL_TIER_SETTINGS if tier_settings is None else tier_settings)}
    result = subprocess.run(
        [sys.executable, "-m", "emulator.synth", str(outdir)],
        input=json.dumps(overrides), capture_output=True, text=True, cwd=REPO_ROOT,
    )
    if result.returncode != 0:
        raise RuntimeError(f"synthesis failed:\n{result.stderr.strip()[-3000:]}")
    return Assembly.read(outdir, overrides["settings"]["stage"])


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
    deployable, held = moto_patches.split_template(template)
    disabled = moto_patches.disable_event_source_mappings(deployable)
    bucket = f"cdk-hnb659fds-assets-{ACCOUNT_ID}-{region}"
    template_key = "local-" + assembly.stack_name + ".template.json"
    clients("s3").put_object(Bucket=bucket, Key=template_key, Body=json.dumps(deployable).encode())
    cloudformation = clients("cloudformation")
    cloudformation.create_stack(
        StackName=assembly.stack_name,
        TemplateURL=f"https://{bucket}.s3.amazonaws.com/{template_key}",  # the template is over TemplateBody's 51 KB
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    stack = cloudformation.describe_stacks(StackName=assembly.stack_name)["Stacks"][0]
    if stack["StackStatus"] != "CREATE_COMPLETE":
        raise RuntimeError(f"stack {assembly.stack_name} is {stack['StackStatus']}: {stack.get('StackStatusReason')}")
    summaries = _stack_resources(cloudformation, assembly.stack_name)
    resolver = Resolver(
        physical_ids={s["LogicalResourceId"]: s["PhysicalResourceId"] for s in summaries},
        types={s["LogicalResourceId"]: s["ResourceType"] for s in summaries},
        parameters={name: p.get("Default") for name, p in template.get("Parameters", {}).items()},
        pseudo={"AWS::Region": region, "AWS::AccountId": ACCOUNT_ID, "AWS::Partition": "aws",
                "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": assembly.stack_name},
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
    }
    return LocalDeployment(**{**deployment.__dict__, "gaps": gaps})


def _stack_resources(cloudformation: Any, name: str) -> list[dict[str, Any]]:
    paginator = cloudformation.get_paginator("list_stack_resources")
    return [s for page in paginator.paginate(StackName=name) for s in page["StackResourceSummaries"]]


def read_function(lambda_client: Any, name: str, code_root: str, log_group: str = "") -> FunctionConfig:
    """A deployed function's configuration, as ``GetFunctionConfiguration`` reports it now (moto's
    has no ``LoggingConfig``: the log group comes from the template, see :func:`describe`)."""
    config = lambda_client.get_function_configuration(FunctionName=name)
    return FunctionConfig(
        name=name, arn=config["FunctionArn"], handler=config["Handler"],
        environment=dict(config.get("Environment", {}).get("Variables", {})),
        timeout_seconds=int(config["Timeout"]), memory_mb=int(config["MemorySize"]),
        region=config["FunctionArn"].split(":")[3], code_root=code_root, log_group=log_group,
    )


def _function_config(
    lambda_client: Any, name: str, assembly: Assembly, physical_ids: Mapping[str, str]
) -> FunctionConfig:
    """The function, with its code asset (the directory uploaded for its ``Code.S3Key``) as code root."""
    logical_id = next(lid for lid, pid in physical_ids.items() if pid == name)
    s3_key = assembly.template["Resources"][logical_id]["Properties"]["Code"]["S3Key"]
    log_group = function_log_groups(assembly.template, physical_ids).get(name, "")
    return read_function(lambda_client, name, str(assembly.asset_directory(s3_key)), log_group)


def describe(endpoint: Endpoint, assembly: Assembly, outputs: Mapping[str, str], physical_ids: Mapping[str, str],
             clients: Callable[[str], Any]) -> LocalDeployment:
    """Read every tier's queue, DLQ, consumer and mapping back from the deployed resources."""
    stage = assembly.stage
    lambda_client = clients("lambda")
    tier_names = clients("ssm").get_parameter(Name=Ssm.tiers(stage))["Parameter"]["Value"].split(",")
    tiers: dict[str, LocalTier] = {}
    for name in tier_names:
        function = _function_config(lambda_client, outputs[Outputs.tier(name, Outputs.CONSUMER_FUNCTION_NAME)],
                                    assembly, physical_ids)
        (mapping,) = lambda_client.list_event_source_mappings(FunctionName=function.name)["EventSourceMappings"]
        if mapping["State"] != "Disabled":  # moto would run the function in Docker (moto_patches, gap 5)
            raise RuntimeError(f"moto's event source mapping of {function.name} is {mapping['State']}; "
                               "local mode deploys it disabled")
        queue_url = outputs[Outputs.tier(name, Outputs.QUEUE_URL)]
        tiers[name] = LocalTier(
            name=name,
            queue_url=queue_url,
            queue_arn=mapping["EventSourceArn"],
            dlq_url=outputs[Outputs.tier(name, Outputs.DLQ_URL)],
            dlq_arn=outputs[Outputs.tier(name, Outputs.DLQ_ARN)],
            mapping=MappingConfig(
                function=function, queue_url=queue_url, queue_arn=mapping["EventSourceArn"],
                batch_size=int(mapping["BatchSize"]),
                batching_window_seconds=int(mapping.get("MaximumBatchingWindowInSeconds", 0)),
                maximum_concurrency=int(mapping.get("ScalingConfig", {}).get("MaximumConcurrency", 1000)),
                report_batch_item_failures="ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", []),
            ),
            alarms={kind: Alarms.name(stage, name, kind) for kind in Alarms.KINDS},
        )
    return LocalDeployment(
        stack_name=assembly.stack_name, stage=stage, endpoint=endpoint, outputs=dict(outputs), tiers=tiers,
        replay=_function_config(lambda_client, outputs[Outputs.REPLAY_FUNCTION_NAME], assembly, physical_ids),
        resources=_resources(clients("ssm"), stage), idempotency_table=outputs[Outputs.IDEMPOTENCY_TABLE_NAME],
        alarm_topic_arn=outputs[Outputs.ALARM_TOPIC_ARN], assembly=assembly,
    )


def _resources(ssm: Any, stage: str) -> dict[str, str]:
    """``{name: value}`` of the stage's ``Ssm.resource`` parameters (every resource of cdk.json)."""
    path = Ssm.resources_path(stage)
    pages = ssm.get_paginator("get_parameters_by_path").paginate(Path=path)
    return {p["Name"].removeprefix(f"{path}/"): p["Value"] for page in pages for p in page["Parameters"]}
