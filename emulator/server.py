"""The embedded AWS: moto's server on 127.0.0.1, started on a free port and stopped without leaks.

boto3, the AWS CLI and ``tiered-jobs`` all honour ``AWS_ENDPOINT_URL``, so pointing that one
variable (plus fake credentials and a region) at the server is all a client needs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moto.server import ThreadedMotoServer

#: boto3's (and the AWS CLI's) variable for a custom endpoint: the one variable a client needs.
ENDPOINT_ENV = "AWS_ENDPOINT_URL"
#: The only address the embedded AWS ever listens on.
HOST = "127.0.0.1"
#: moto accepts any credentials; these make it obvious that nothing real is used.
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
#: moto's default account; every ARN the local stack shows carries it.
ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class Endpoint:
    """Where the embedded AWS listens, and the environment a client needs to reach it."""

    url: str
    region: str = DEFAULT_REGION

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def client_env(self) -> dict[str, str]:
        """Variables to export in another terminal.

        ``AWS_SESSION_TOKEN`` is cleared: a stale one confuses moto's IAM.
        """
        return {
            ENDPOINT_ENV: self.url,
            **FAKE_CREDENTIALS,
            "AWS_SESSION_TOKEN": "",
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }

    def export_lines(self) -> list[str]:
        """Shell ``export`` lines for :meth:`client_env`."""
        return [f"export {name}={value}" if value else f"unset {name}" for name, value in self.client_env().items()]


class EmbeddedAws:
    """moto's threaded server bound to ``127.0.0.1`` on ``port`` (0: a free port chosen by the OS),
    started empty (moto's state is per process: one embedded AWS at a time per process).

    Binding port 0 lets the OS pick the port atomically (no probe-then-bind race). moto's own
    ``stop()`` shuts the serving loop down but leaves the socket open; :meth:`stop` also closes it,
    so the port is free again when it returns.
    """

    def __init__(self, port: int = 0, region: str = DEFAULT_REGION):
        self._requested_port = port
        self._region = region
        self._server: ThreadedMotoServer | None = None  # once started
        self.endpoint: Endpoint | None = None

    def start(self) -> Endpoint:
        from moto.server import (
            ThreadedMotoServer,  # deferred: only local mode needs moto
        )

        from . import insights
        from .event_rules import deliver_matching_events
        from .moto_patches import (
            cloudformation_json_templates,
            cloudwatch_dimensions_as_a_set,
            cloudwatch_list_metrics_by_series,
            cloudwatch_metric_data_by_series,
            cloudwatch_percentiles,
            moto_server_module_list_once,
            serialize_dynamodb_requests,
            serialize_sqs_requests,
            sqs_batch_system_attributes,
            sqs_fast_clock_and_attributes,
            sqs_message_move_tasks,
            sqs_thread_safe_message_groups,
        )

        if self._server is not None:
            raise RuntimeError("the embedded AWS is already running")
        serialize_dynamodb_requests()  # moto's DynamoDB is not thread-safe (moto_patches, gap 7)
        cloudwatch_percentiles()  # GetMetricData's pNN statistics (moto_patches, gap 8)
        cloudwatch_dimensions_as_a_set()  # GetMetricData's dimensions in any order (moto_patches, gap 15)
        cloudwatch_list_metrics_by_series()  # ListMetrics lists a series once (moto_patches, gap 16)
        cloudwatch_metric_data_by_series()  # GetMetricData in time linear in the datapoints (moto_patches, gap 17)
        sqs_message_move_tasks()  # the native replay's StartMessageMoveTask (moto_patches, gap 11)
        serialize_sqs_requests()  # moto's SQS is not thread-safe either (moto_patches, gap 21)
        sqs_thread_safe_message_groups()  # receives of grouped messages from many threads (moto_patches, gap 12)
        moto_server_module_list_once()  # the dispatcher's folder listing on every request (moto_patches, gap 13)
        sqs_fast_clock_and_attributes()  # SQS's quadratic clock and attribute reads (moto_patches, gap 14)
        sqs_batch_system_attributes()  # a batch entry's AWSTraceHeader (moto_patches, gap 19)
        cloudformation_json_templates()  # a JSON template read as JSON, not YAML (moto_patches, gap 20)
        deliver_matching_events()  # PutEvents matching a trigger's rule: EventBridge's input transformer (event_rules)
        insights.install()  # Logs Insights queries of tiered-jobs search, over the stored events (insights)
        server = ThreadedMotoServer(ip_address=HOST, port=self._requested_port, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        self._server = server
        self.endpoint = Endpoint(url=f"http://{host}:{port}", region=self._region)
        _reset(self.endpoint)
        return self.endpoint

    def stop(self) -> None:
        """Stop serving, join the server thread and release the port (safe to call twice)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.stop()
        # moto's stop() leaves the listening socket open; moto types its (started) _server Optional.
        server._server.server_close()  # type: ignore[union-attr]
        self.endpoint = None

    def __enter__(self) -> Endpoint:
        return self.start()

    def __exit__(self, *_exc_info: object) -> None:
        self.stop()


def _reset(endpoint: Endpoint) -> None:
    """Empty every service (moto's ``POST /moto-api/reset``). moto keeps its state per process, not per
    server: without this a second embedded AWS in one process would start with the first one's stack."""
    from urllib.request import Request, urlopen

    with urlopen(Request(f"{endpoint.url}/moto-api/reset", data=b"", method="POST"), timeout=30) as answer:
        answer.read()


@contextmanager
def client_environment(endpoint: Endpoint) -> Iterator[None]:
    """Point clients created in the block at ``endpoint`` (via ``os.environ``), then restore it."""
    saved = {name: os.environ.get(name) for name in endpoint.client_env()}
    try:
        _apply(endpoint.client_env())
        yield
    finally:
        _apply(saved)


def _apply(values: Mapping[str, str | None]) -> None:
    """Set each variable; an empty or ``None`` value removes it."""
    for name, value in values.items():
        if value:
            os.environ[name] = value
        else:
            os.environ.pop(name, None)
