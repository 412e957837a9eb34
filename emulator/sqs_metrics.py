"""SQS's own CloudWatch metrics, published locally (emulation: moto publishes no ``AWS/SQS`` metric).

On AWS, SQS publishes per queue, once a minute, ``ApproximateNumberOfMessagesVisible``,
``...NotVisible``, ``...Delayed`` and ``ApproximateAgeOfOldestMessage`` to the ``AWS/SQS``
namespace (dimension ``QueueName``). ``tiered-jobs status`` reads the age from there, on AWS and
locally alike, so locally this thread computes the same four values for every queue of the stage
from moto's store (the server runs in this process; see ``moto_patches`` gap 6) and writes them to
moto's CloudWatch every few seconds with ``PutMetricData``. AWS reserves ``AWS/`` namespaces for
its services (``PutMetricData`` refuses them there); moto does not, and here the runtime plays SQS.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from emulator import moto_patches
from emulator.background import BackgroundLoop
from tiered_jobs.operations import status as status_reads

log = logging.getLogger(__name__)

#: Seconds between two publications (SQS: 60; shorter locally so a fresh backlog shows at once).
DEFAULT_INTERVAL_SECONDS = 5.0


class SqsMetricsPublisher(BackgroundLoop):
    """Publishes ``AWS/SQS`` metrics of ``queue_urls`` every ``interval_seconds`` (:meth:`start`)."""

    def __init__(
        self,
        clients: Callable[[str], Any],
        queue_urls: Sequence[str],
        account_id: str,
        region: str,
        *,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
    ):
        super().__init__(interval_seconds)
        self._clients = clients
        self._queue_urls = list(queue_urls)
        self._account_id = account_id
        self._region = region

    def metric_data(self) -> list[dict[str, Any]]:
        """The datapoints of one publication: four per queue, stamped now."""
        now = datetime.now(timezone.utc)
        data = []
        sqs = self._clients("sqs")
        for url in self._queue_urls:
            name = status_reads.queue_name(url)
            values = {
                status_reads.COUNT_METRICS[attribute]: float(count)
                for attribute, count in status_reads.queue_counts(sqs, url).items()
            }
            age = moto_patches.oldest_message_age_seconds(name, self._account_id, self._region)
            if age is not None:
                values[status_reads.AGE_OF_OLDEST_MESSAGE] = age
            dimensions = [{"Name": status_reads.SQS_QUEUE_DIMENSION, "Value": name}]
            data += [
                {
                    "MetricName": metric,
                    "Value": value,
                    "Timestamp": now,
                    "Dimensions": dimensions,
                    "Unit": "Seconds" if metric == status_reads.AGE_OF_OLDEST_MESSAGE else "Count",
                }
                for metric, value in values.items()
            ]
        return data

    def publish_once(self) -> None:
        data = self.metric_data()
        cloudwatch = self._clients("cloudwatch")
        for start in range(0, len(data), 1000):  # PutMetricData's limit per call
            cloudwatch.put_metric_data(Namespace=status_reads.SQS_NAMESPACE, MetricData=data[start : start + 1000])

    # -- background ----------------------------------------------------------------------

    thread_name = "sqs-metrics"
    tick_on_start = True

    def tick(self) -> None:
        self.publish_once()

    def tick_failed(self, exc: Exception) -> None:
        log.warning("publishing AWS/SQS metrics failed: %s", exc)
