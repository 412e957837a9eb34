"""What every function of the stack shares: code asset, Powertools layer, runtime, logs and a scoped role.

Consumers and the replay function are built by ``LambdaPlatform.function`` so they cannot drift
apart: same asset (the app's job folder plus the runtime parts of ``tiered_jobs``, staged by
``tiered_jobs.cdk.packaging.JobsSource`` without Docker), same layers (Powertools, and the job
folder's ``requirements.txt`` packages, installed by ``dependencies.py`` without Docker either),
X-Ray on, JSON logs into an explicit log group with retention (no ``log_retention`` prop: that
would add a custom-resource Lambda), and a role that may write to that log group only instead of
the AWS-managed basic execution policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from aws_cdk import Annotations, AssetHashType, Duration, RemovalPolicy, Stage
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from tiered_jobs.cdk import bytecode, dependencies
from tiered_jobs.cdk.field_indexes import RUN_LINE_FIELDS
from tiered_jobs.cdk.packaging import JobsSource, JobsSourceError
from tiered_jobs.contract.names import LOCAL_OVERRIDES_CONTEXT_KEY

from .nag import acknowledge
from .settings import RUNTIMES, AppSettings, SettingsError

#: Where in the cloud assembly the code asset is staged before CDK hashes and copies it.
STAGING_DIR = ".tiered-jobs-code"


def powertools_layer_parameter(architecture: str, runtime: str, version: str) -> str:
    """The AWS-managed public SSM parameter holding the Powertools layer ARN of the deploy region."""
    return f"/aws/service/powertools/python/{architecture}/{runtime}/{version}"


def stage_code(scope: Construct, jobs: JobsSource, runtime: str) -> tuple[lambda_.Code, int]:
    """The functions' code asset: ``jobs`` staged into the cloud assembly's folder (same bytes, same hash),
    compiled for ``runtime`` when its interpreter is at hand (``bytecode.py``); and its size unzipped."""
    stage = Stage.of(scope)
    if stage is None:
        raise ValueError("the functions' code is staged into the cloud assembly: build the construct inside an App")
    staging = Path(stage.outdir) / STAGING_DIR / scope.node.addr
    try:
        staged = jobs.stage(staging)  # checks the job folder's payload schemas first
        interpreter = bytecode.find_interpreter(runtime)
        if interpreter is None:
            Annotations.of(scope).add_info_v2("tiered-jobs:source-only", bytecode.source_only_note(runtime))
        else:
            compiled = bytecode.compile_tree(staged, interpreter)
            if compiled.failures:
                Annotations.of(scope).add_warning_v2(
                    "tiered-jobs:bytecode", f"Some of the functions' code does not compile:\n{compiled.failures}"
                )
    except (JobsSourceError, bytecode.BytecodeError) as error:
        raise SettingsError(str(error)) from None
    return lambda_.Code.from_asset(str(staged)), dependencies.tree_size(staged)


def package_target(scope: Construct, settings: AppSettings) -> dependencies.Target:
    """What the job folder's packages are installed for: the functions' runtime and architecture, or,
    in local mode's synthesis (its context is set), the host interpreter that runs them there."""
    if scope.node.try_get_context(LOCAL_OVERRIDES_CONTEXT_KEY) is not None:
        return dependencies.Target.host()
    return dependencies.Target.lambda_runtime(settings.runtime, settings.architecture)


def install_packages(jobs: JobsSource, target: dependencies.Target) -> dependencies.Installed | None:
    """The job folder's ``requirements.txt`` installed for ``target`` (cached), ``None`` without one."""
    if jobs.requirements is None:
        return None
    try:
        return dependencies.install(jobs.requirements, target)
    except dependencies.DependencyError as error:
        raise SettingsError(str(error)) from None


@dataclass(frozen=True)
class FunctionProps:
    """One function of the stack; everything else comes from ``LambdaPlatform``."""

    function_name: str
    handler: str
    description: str
    timeout_seconds: int
    memory_mb: int
    environment: Mapping[str, str] = field(default_factory=dict)
    #: ``None``: no reservation (the function shares the account's unreserved pool).
    reserved_concurrency: int | None = None
    #: Python's level name (``INFO``...): Lambda's application log level, which Powertools obeys over
    #: its own ``POWERTOOLS_LOG_LEVEL`` (a JSON-format function left at Lambda's default drops DEBUG).
    #: ``None``: Lambda's default (INFO).
    log_level: str | None = None
    #: X-Ray Active tracing (CDK adds PutTraceSegments / PutTelemetryRecords to the role); off: no
    #: TracingConfig, Lambda's PassThrough, which an SQS-invoked function never gets a sampled trace from.
    tracing: bool = True


class LambdaPlatform(Construct):
    """Builds functions on the shared asset and the AWS-managed Powertools layer (one per stack)."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: AppSettings, jobs: JobsSource) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self.jobs = jobs
        self.code, code_size = stage_code(self, jobs, settings.runtime)
        self.runtime = getattr(lambda_.Runtime, settings.runtime.upper().replace("PYTHON", "PYTHON_").replace(".", "_"))
        self.architecture = (
            lambda_.Architecture.ARM_64 if settings.architecture == "arm64" else lambda_.Architecture.X86_64
        )
        # A template parameter of type AWS::SSM::Parameter::Value<String>: resolved in the deploy
        # region, so no region's layer ARN is hard-coded.
        layer_arn = ssm.StringParameter.value_for_string_parameter(
            self,
            powertools_layer_parameter(settings.architecture, settings.runtime, settings.powertools_version),
        )
        self.powertools_layer = lambda_.LayerVersion.from_layer_version_arn(self, "PowertoolsLayer", layer_arn)
        self.layers: list[lambda_.ILayerVersion] = [self.powertools_layer]
        #: The job folder's own packages (``requirements.txt``), or ``None``.
        self.packages = install_packages(jobs, package_target(self, settings))
        sizes = {
            "job folder and runtime": code_size,
            "Powertools layer (estimate)": dependencies.POWERTOOLS_LAYER_BYTES,
        }
        if self.packages is not None:
            sizes[f"{dependencies.REQUIREMENTS_FILE} packages"] = self.packages.size
            self.layers.append(self._packages_layer(self.packages))
        try:
            dependencies.check_unzipped_size(sizes)
        except dependencies.DependencyError as error:
            raise SettingsError(str(error)) from None

    def _packages_layer(self, packages: dependencies.Installed) -> lambda_.LayerVersion:
        """The job folder's packages as a layer: a code change then uploads only the small code asset."""
        return lambda_.LayerVersion(
            self,
            "PackagesLayer",
            # The cache key already names the content: CDK need not hash every file of the install.
            code=lambda_.Code.from_asset(
                str(packages.directory), asset_hash=packages.key, asset_hash_type=AssetHashType.CUSTOM
            ),
            compatible_runtimes=[self.runtime],
            compatible_architectures=[self.architecture],
            description=f"Packages of {self.jobs.module}'s {dependencies.REQUIREMENTS_FILE}",
            # Holds no data: the next synthesis rebuilds it, and a function keeps running on a deleted version.
            removal_policy=RemovalPolicy.DESTROY,
        )

    def function(self, scope: Construct, construct_id: str, props: FunctionProps) -> lambda_.Function:
        log_group = logs.LogGroup(
            scope,
            f"{construct_id}Logs",
            removal_policy=self._settings.removal_policy,
            # What a search filters on with "=", indexed so Logs Insights scans less (cdk/field_indexes.py).
            field_index_policies=[logs.FieldIndexPolicy(fields=list(RUN_LINE_FIELDS))],
        )
        # RetentionDays is an enum of names; the validated number goes straight into the template.
        cast(logs.CfnLogGroup, log_group.node.default_child).retention_in_days = self._settings.log_retention_days
        role = iam.Role(
            scope,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Execution role of {props.function_name}",
        )
        log_group.grant_write(role)
        function = lambda_.Function(
            scope,
            construct_id,
            function_name=props.function_name,
            description=props.description,
            code=self.code,
            handler=props.handler,
            runtime=self.runtime,
            architecture=self.architecture,
            layers=list(self.layers),
            memory_size=props.memory_mb,
            timeout=Duration.seconds(props.timeout_seconds),
            environment=dict(props.environment),
            reserved_concurrent_executions=props.reserved_concurrency,
            role=role,
            log_group=log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=_application_log_level(props.log_level),
            tracing=lambda_.Tracing.ACTIVE if props.tracing else lambda_.Tracing.DISABLED,
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray PutTraceSegments / PutTelemetryRecords support no resource-level permissions (AWS requires *).",
        )
        if not props.tracing:
            acknowledge(
                function,
                "Serverless-LambdaTracing",
                "Tracing is off by the tier's 'tracing' setting: the team chose not to trace this tier's jobs "
                "(X-Ray bills each sampled trace; a busy tier may not need them).",
            )
        if self._settings.runtime != RUNTIMES[-1]:
            reason = (
                f"The runtime is the 'runtime' setting ({self._settings.runtime}), chosen to match the Python the "
                f"code is tested on; {RUNTIMES[-1]} is accepted once the team moves."
            )
            acknowledge(function, "AwsSolutions-L1", reason)
            acknowledge(function, "Serverless-LambdaLatestVersion", reason)
        return function


def _application_log_level(level: str | None) -> lambda_.ApplicationLogLevel | None:
    """Lambda's name for Python's level (``WARNING`` is ``WARN`` there)."""
    if level is None:
        return None
    return lambda_.ApplicationLogLevel["WARN" if level == "WARNING" else level]
