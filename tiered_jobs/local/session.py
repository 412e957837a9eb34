"""One local session: embedded AWS + deployed stack + event-source runtime + metrics + alarm evaluation.

    with LocalSession() as session:
        session.deployment.tiers["critical"].queue_url
        session.clients("sqs").send_message(...)
        session.invoke(session.deployment.replay, {"action": "inspect", "tier": "critical"})

``stop()`` (or leaving the ``with``) stops the pollers and their worker processes, the alarm
evaluator and the server, and removes the synthesized assembly: no thread, process or port is left.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tiered_jobs.contract.names import Alarms
from tiered_jobs.local import moto_gaps
from tiered_jobs.local.alarms import AlarmEvaluator
from tiered_jobs.local.deploy import Deployment, deploy, read_function, synthesize
from tiered_jobs.local.esm import EventSourceRuntime, FunctionConfig, Invocation, MappingRuntime
from tiered_jobs.local.invokers import WorkerInvoker, worker_factory
from tiered_jobs.local.metrics import MetricStore
from tiered_jobs.local.server import ACCOUNT_ID, EmbeddedAws, Endpoint

#: Log lines kept per function for the live view and ``local up``.
LOG_LINES_KEPT = 200


class LocalSession:
    """Starts everything in :meth:`start`, stops everything in :meth:`stop`."""

    def __init__(self, *, port: int = 0, tier_settings: Mapping[str, Any] | None = None,
                 alarm_interval_seconds: float = 2.0, log_sink: Callable[[str, str], None] | None = None,
                 settings: Mapping[str, Any] | None = None):
        self._server = EmbeddedAws(port=port)
        self._tier_settings = tier_settings
        #: Keys under ``tiered_jobs`` replaced for this session (e.g. ``tiers`` with a rate limit).
        self._settings = settings
        self._alarm_interval = alarm_interval_seconds
        self._extra_log_sink = log_sink
        self._workdir: Path | None = None
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        self.endpoint: Endpoint | None = None
        self.deployment: Deployment | None = None
        self.runtime: EventSourceRuntime | None = None
        self.metrics: MetricStore | None = None
        self.alarms: AlarmEvaluator | None = None
        #: Recent log lines per function name (what CloudWatch Logs would hold).
        self.logs: dict[str, deque[str]] = {}

    def clients(self, service: str) -> Any:
        """A boto3 client for ``service`` on the embedded AWS (shared, thread-safe)."""
        with self._clients_lock:
            if service not in self._clients:
                import boto3
                from botocore.config import Config

                assert self.endpoint is not None, "start() first"
                self._clients[service] = boto3.session.Session().client(
                    service, endpoint_url=self.endpoint.url, region_name=self.endpoint.region,
                    aws_access_key_id="testing", aws_secret_access_key="testing",
                    config=Config(max_pool_connections=50, retries={"max_attempts": 2}),
                )
            return self._clients[service]

    def _log_line(self, function_name: str, line: str) -> None:
        self.logs.setdefault(function_name, deque(maxlen=LOG_LINES_KEPT)).append(line)
        assert self.metrics is not None
        self.metrics.log_line(function_name, line)
        if self._extra_log_sink is not None:
            self._extra_log_sink(function_name, line)

    def start(self) -> LocalSession:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        try:
            self._workdir = Path(tempfile.mkdtemp(prefix="tiered-jobs-local-"))
            assembly = synthesize(self._workdir / "cdk.out", self._tier_settings, self._settings)
            self.endpoint = self._server.start()
            self.deployment = deploy(self.endpoint, assembly, self.clients)
            self.metrics = MetricStore(self.clients("cloudwatch"))
            factory = worker_factory(self.endpoint, self._log_line)
            self.runtime = EventSourceRuntime([
                MappingRuntime(tier.mapping, factory, self.clients("sqs"), listener=self.metrics.invocation)
                for tier in self.deployment.tiers.values()
            ])
            self.runtime.start()
            self.alarms = AlarmEvaluator(
                self.clients, self.metrics, Alarms.prefix(self.deployment.stage),
                lambda queue: moto_gaps.oldest_message_age_seconds(queue, ACCOUNT_ID, self.endpoint.region),
                interval_seconds=self._alarm_interval,
            )
            self.alarms.start()
        except BaseException:
            self.stop()
            raise
        return self

    def invoke(self, function: FunctionConfig, event: dict[str, Any]) -> Invocation:
        """Invoke a deployed function once (``aws lambda invoke``), in a fresh execution environment."""
        assert self.endpoint is not None and self.metrics is not None
        invoker = WorkerInvoker(function, self.endpoint, self._log_line)
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
        lambda_client = self.clients("lambda")
        lambda_client.update_function_configuration(FunctionName=function_name,
                                                    Environment={"Variables": dict(environment)})
        mapping = self.runtime.by_function(function_name)
        function = read_function(lambda_client, function_name, mapping.mapping.function.code_root)
        mapping.update_function(function)
        return function

    def stop(self) -> None:
        if self.alarms is not None:
            self.alarms.stop()
        if self.runtime is not None:
            self.runtime.stop()
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        self._server.stop()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __enter__(self) -> LocalSession:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
