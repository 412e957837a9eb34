"""One local session: embedded AWS + deployed stack + event-source runtime + metrics + alarm evaluation.

    with LocalSession() as session:          # this repository's app; LocalSession(app=CdkApp.load(folder)): any app
        session.deployment.tiers["critical"].queue_url
        session.clients("sqs").send_message(...)
        session.invoke(session.deployment.replay, {"action": "inspect", "tier": "critical"})

``stop()`` (or leaving the ``with``) stops the pollers and their worker processes, the alarm
evaluator, the log shipper, the SQS metrics, the code watcher and the server, and removes the
synthesized assembly: no thread, process or port is left.

The functions' output goes to their CloudWatch Logs groups (:mod:`emulator.logs`);
``AWS/SQS`` metrics are published from the queues (:mod:`emulator.sqs_metrics`); with
``reload_interval_seconds`` a change to the functions' code becomes a new code version without a
restart (:mod:`emulator.reload`); EventBridge scheduled rules (the circuit breakers' reconciler)
invoke their Lambda targets (:mod:`emulator.rules`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from emulator import lambda_invoke, mapping_state, moto_patches, store_reads
from emulator.alarms import AlarmEvaluator
from emulator.cdk_app import CdkApp
from emulator.deploy import (
    LocalDeployment,
    deploy,
    local_overrides,
    read_function,
    synthesize,
    zip_directory,
)
from emulator.esm import EventSourceRuntime, FunctionConfig, Invocation, MappingRuntime
from emulator.invokers import WorkerInvoker, worker_factory
from emulator.logs import LogShipper
from emulator.metrics import MetricStore
from emulator.reload import CodeWatcher, host_packages
from emulator.rules import RuleRunner
from emulator.scheduler import ScheduleRunner
from emulator.server import ACCOUNT_ID, EmbeddedAws, Endpoint
from emulator.sqs_metrics import (
    DEFAULT_INTERVAL_SECONDS as SQS_METRICS_INTERVAL_SECONDS,
)
from emulator.sqs_metrics import SqsMetricsPublisher
from tiered_jobs.cdk.packaging import JobsSource
from tiered_jobs.contract.names import Alarms, Schedules

#: Log lines kept per function for the live view and ``up``.
LOG_LINES_KEPT = 200


@dataclass(frozen=True)
class CodeVersion:
    """One hot reload: the new code's version number, ``CodeSha256`` and the files that changed."""

    number: int
    code_sha256: str
    changed: tuple[str, ...]
    code_root: str
    functions: tuple[str, ...]


class LocalSession:
    """Starts everything in :meth:`start`, stops everything in :meth:`stop`.

    ``log_sink(function name, line)`` sees every line of the functions' output;
    ``reload_interval_seconds`` (``None``: off) watches ``code_source``'s asset files and calls
    :meth:`reload_code` on a change, then ``on_reload(version)``.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        tier_settings: Mapping[str, Any] | None = None,
        alarm_interval_seconds: float = 2.0,
        log_sink: Callable[[str, str], None] | None = None,
        code_source: JobsSource | None = None,
        reload_interval_seconds: float | None = None,
        on_reload: Callable[[CodeVersion], None] | None = None,
        sqs_metrics_interval_seconds: float = SQS_METRICS_INTERVAL_SECONDS,
        settings: Mapping[str, Any] | None = None,
        app: CdkApp | None = None,
        stack: str | None = None,
        rules_clock: Callable[[], datetime] | None = None,
    ):
        """``settings`` replace keys under ``tiered_jobs`` for this session (e.g. ``schedules``, or
        ``tiers`` with a rate limit). ``app`` is the CDK app to run (default: this repository's);
        ``stack`` names its stack that uses TieredJobs, when several do; ``rules_clock`` is the clock the
        scheduled rules' runner fires by (a test moves it instead of waiting five minutes)."""
        self._server = EmbeddedAws(port=port)
        self._app = app
        self._stack = stack
        self._tier_settings = tier_settings
        self._settings = settings
        self._alarm_interval = alarm_interval_seconds
        self._extra_log_sink = log_sink
        self._code_source = code_source
        self._reload_interval = reload_interval_seconds
        self._on_reload = on_reload
        self._sqs_metrics_interval = sqs_metrics_interval_seconds
        self._rules_clock = rules_clock
        self._deploy_lock = threading.Lock()
        self._workdir: Path | None = None
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        self.endpoint: Endpoint | None = None
        self.deployment: LocalDeployment | None = None
        self.runtime: EventSourceRuntime | None = None
        self.metrics: MetricStore | None = None
        self.alarms: AlarmEvaluator | None = None
        self.log_shipper: LogShipper | None = None
        self.sqs_metrics: SqsMetricsPublisher | None = None
        self.watcher: CodeWatcher | None = None
        self.scheduler: ScheduleRunner | None = None
        self.rules: RuleRunner | None = None
        #: Recent log lines per function name (all of them are in CloudWatch Logs too).
        self.logs: dict[str, deque[str]] = {}
        #: Every deployed function as it is configured now (consumers and the replay function).
        self.functions: dict[str, FunctionConfig] = {}
        #: The hot reloads so far, oldest first.
        self.code_versions: list[CodeVersion] = []

    @property
    def code_source(self) -> JobsSource | None:
        """Where the functions' code comes from (a reload stages it afresh); known once started."""
        return self._code_source

    def clients(self, service: str) -> Any:
        """A boto3 client for ``service`` on the embedded AWS (shared, thread-safe)."""
        with self._clients_lock:
            if service not in self._clients:
                import boto3
                from botocore.config import Config

                assert self.endpoint is not None, "start() first"
                self._clients[service] = boto3.session.Session().client(
                    service,
                    endpoint_url=self.endpoint.url,
                    region_name=self.endpoint.region,
                    aws_access_key_id="testing",
                    aws_secret_access_key="testing",
                    config=Config(max_pool_connections=50, retries={"max_attempts": 2}),
                )
            return self._clients[service]

    def _log_line(self, function_name: str, log_stream: str, line: str) -> None:
        self.logs.setdefault(function_name, deque(maxlen=LOG_LINES_KEPT)).append(line)
        assert self.metrics is not None
        self.metrics.log_line(function_name, line)
        function = self.functions.get(function_name)
        if self.log_shipper is not None and function is not None:
            self.log_shipper.add(function.log_group_name, log_stream, line)
        if self._extra_log_sink is not None:
            self._extra_log_sink(function_name, line)

    def start(self) -> LocalSession:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        try:
            self._workdir = Path(tempfile.mkdtemp(prefix="tiered-jobs-local-"))
            assembly = synthesize(
                self._workdir / "cdk.out",
                self._app,
                local_overrides(self._tier_settings, self._settings),
                stack=self._stack,
            )
            if self._code_source is None:
                self._code_source = assembly.jobs_source()
            self.endpoint = endpoint = self._server.start()
            self.deployment = deploy(self.endpoint, assembly, self.clients)
            self.functions = {tier.consumer.name: tier.consumer for tier in self.deployment.tiers.values()}
            self.functions[self.deployment.replay.name] = self.deployment.replay
            self.metrics = MetricStore(self.clients("cloudwatch"))
            self.log_shipper = LogShipper(self.clients("logs"))
            self.log_shipper.start()
            factory = worker_factory(self.endpoint, self._log_line)
            # From here moto only stores the mappings' state (pause, resume, concurrency); the runtime polls.
            uuids = mapping_state.hand_over(
                self.clients, self.deployment.stack_name, assembly.template, ACCOUNT_ID, endpoint.region
            )
            self.runtime = EventSourceRuntime(
                [
                    MappingRuntime(
                        tier.mapping,
                        factory,
                        self.clients("sqs"),
                        listener=self.metrics.invocation,
                        control=mapping_state.control(uuids[tier.consumer.arn], ACCOUNT_ID, endpoint.region),
                        wait_for_messages=store_reads.message_waiter(
                            tier.mapping.queue_arn, ACCOUNT_ID, endpoint.region
                        ),
                    )
                    for tier in self.deployment.tiers.values()
                ]
            )
            self.runtime.start()
            self.alarms = AlarmEvaluator(
                self.clients,
                self.metrics,
                Alarms.prefix(self.deployment.stage),
                lambda queue: moto_patches.oldest_message_age_seconds(queue, ACCOUNT_ID, endpoint.region),
                interval_seconds=self._alarm_interval,
                queue_number=lambda queue, name: store_reads.queue_number(queue, name, ACCOUNT_ID, endpoint.region),
                alarms_version=lambda: store_reads.alarms_version(ACCOUNT_ID, endpoint.region),
            )
            self.alarms.start()
            for function in self.functions.values():  # `aws lambda invoke` runs them here, not in moto's Docker
                lambda_invoke.register(ACCOUNT_ID, function, self._run_invocation)
            self.sqs_metrics = SqsMetricsPublisher(
                self.clients,
                [url for tier in self.deployment.tiers.values() for url in (tier.queue_url, tier.dlq_url)],
                ACCOUNT_ID,
                self.endpoint.region,
                interval_seconds=self._sqs_metrics_interval,
            )
            self.sqs_metrics.start()
            if self._reload_interval is not None:
                assert self._code_source is not None
                self.watcher = CodeWatcher(self._code_source, self.reload_code, interval_seconds=self._reload_interval)
                self.watcher.start()
            group = self.deployment.outputs.get(Schedules.OUTPUT_GROUP_NAME)
            if group is not None:  # moto never fires schedules: the local runtime does (emulation)
                self.scheduler = ScheduleRunner(
                    self.clients,
                    group,
                    has_schedules=lambda: store_reads.schedule_group_has_schedules(group, ACCOUNT_ID, endpoint.region),
                )
                self.scheduler.start()
            # moto never fires a scheduled rule (the circuit breakers' reconciler): the local runtime does (emulation).
            self.rules = RuleRunner(
                self.clients,
                rules_version=lambda: store_reads.scheduled_rules_version(ACCOUNT_ID, endpoint.region),
                clock=self._rules_clock,
            )
            self.rules.start()
        except BaseException:
            self.stop()
            raise
        return self

    def invoke(self, function: FunctionConfig, event: dict[str, Any]) -> Invocation:
        """Invoke a deployed function once (``aws lambda invoke``), in a fresh execution environment,
        with its current code and configuration."""
        return self._run_invocation(function, event, lambda line: None)

    def _run_invocation(
        self, function: FunctionConfig, event: dict[str, Any], log_line: Callable[[str], None]
    ) -> Invocation:
        assert self.endpoint is not None and self.metrics is not None
        function = self.functions.get(function.name, function)

        def sink(name: str, log_stream: str, line: str) -> None:
            self._log_line(name, log_stream, line)
            log_line(line)

        invoker = WorkerInvoker(function, self.endpoint, sink)
        try:
            invocation = invoker.invoke(event)
        finally:
            invoker.close()
        self.metrics.invocation(function, invocation)
        return invocation

    def update_function_configuration(self, function_name: str, environment: Mapping[str, str]) -> FunctionConfig:
        """Deploy a configuration change (``UpdateFunctionConfiguration`` on the embedded AWS) and
        let the function's mapping pick it up, as Lambda does for new execution environments."""
        assert self.runtime is not None
        with self._deploy_lock:
            lambda_client = self.clients("lambda")
            lambda_client.update_function_configuration(
                FunctionName=function_name, Environment={"Variables": dict(environment)}
            )
            mapping = self.runtime.by_function(function_name)
            current = mapping.mapping.function
            function = read_function(
                lambda_client, function_name, current.code_root, current.log_group, current.layer_paths
            )
            mapping.update_function(function)
            self.functions[function_name] = function
            return function

    def reload_code(self, changed: Sequence[str] = ()) -> CodeVersion:
        """Deploy the functions' code as it is now in the source checkout: a fresh copy of the asset,
        ``UpdateFunctionCode`` for every function, and new execution environments for the next
        batches (a running batch finishes on the old code). Queues, tables and letters stay."""
        assert self.runtime is not None and self._workdir is not None
        with self._deploy_lock:
            number = len(self.code_versions) + 2  # version 1 is the deployed asset
            assert self._code_source is not None
            root = self._code_source.stage(self._workdir / "code" / f"v{number}")  # what `cdk synth` would ship now
            layers = host_packages(self._code_source)  # requirements.txt as it is now (cached when unchanged)
            archive = zip_directory(root)
            lambda_client = self.clients("lambda")
            sha = ""
            for name, function in list(self.functions.items()):
                sha = lambda_client.update_function_code(FunctionName=name, ZipFile=archive)["CodeSha256"]
                updated = replace(function, code_root=str(root), layer_paths=layers)
                self.functions[name] = updated
                if any(mapping.name == name for mapping in self.runtime.mappings):
                    self.runtime.by_function(name).update_function(updated)
            version = CodeVersion(number, sha, tuple(changed), str(root), tuple(self.functions))
            self.code_versions.append(version)
        if self._on_reload is not None:
            self._on_reload(version)
        return version

    def stop(self) -> None:
        if self.rules is not None:
            self.rules.stop()
        if self.scheduler is not None:
            self.scheduler.stop()
        for function in self.functions.values():
            lambda_invoke.unregister(ACCOUNT_ID, function)
        if self.watcher is not None:
            self.watcher.stop()
        if self.sqs_metrics is not None:
            self.sqs_metrics.stop()
        if self.alarms is not None:
            self.alarms.stop()
        if self.runtime is not None:
            self.runtime.stop()
        if self.log_shipper is not None:
            self.log_shipper.stop()  # after the runtime: the last lines are shipped too
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        self._server.stop()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __enter__(self) -> LocalSession:
        return self.start()

    def __exit__(self, *_exc_info: object) -> None:
        self.stop()
