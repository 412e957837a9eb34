"""The baseline for the cold-start and warm-path figures: the bare Powertools recipe from its
documentation (batch processing + idempotency + Logger + Metrics), doing the same job as our consumer.
Not used by the product; only the benchmark imports it.

Its record handler logs each record at INFO, as the batch utility's getting-started recipe does
(``logger.info(payload)``, ``examples/batch_processing/src/getting_started_sqs.py``), and runs the
job through ``idempotent_function`` as the idempotency utility's batch integration does; it counts one
metric per record. Its job is the example's ``analytics.record_event``, which our side runs: the same
DEBUG line (filtered at INFO) and the same result. Our consumer logs one line per finished job too (``job succeeded``).

``handler`` is the recipe as its documentation writes it (module-level objects, a DynamoDB client of
its own), which the cold-start child imports; :func:`recipe` builds the same objects around a given
DynamoDB client and logger, so the warm-path figure gives both sides the same zero-latency client.
"""

import json
import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)


def recipe(table_name: str, dynamodb: Any = None, logger: Logger | None = None, namespace: str | None = None):
    """The recipe's handler; ``dynamodb``: its persistence layer's client (``None``: boto3 builds one)."""
    logger = logger or Logger()
    metrics = Metrics(namespace=namespace)
    processor = BatchProcessor(event_type=EventType.SQS)
    persistence = DynamoDBPersistenceLayer(table_name=table_name, boto3_client=dynamodb)
    config = IdempotencyConfig(
        event_key_jmespath="[type, idempotency_key]", payload_validation_jmespath="payload", use_local_cache=True
    )

    @idempotent_function(data_keyword_argument="job", config=config, persistence_store=persistence)
    def run_job(job: dict) -> dict:
        # The example's analytics.record_event, which both sides run: its DEBUG line, then its result.
        logger.debug("analytics event recorded (simulated)", extra={"event": job["payload"]["event"]})
        return {"recorded": True, "event": job["payload"]["event"]}

    def record_handler(record):
        job = json.loads(record.body)
        logger.info(job)  # the batch recipe's one line per record ("logger.info(payload)")
        result = run_job(job=job)
        metrics.add_metric(name="JobsSucceeded", unit=MetricUnit.Count, value=1)
        return result

    @metrics.log_metrics
    @logger.inject_lambda_context
    def handler(event, context):
        config.register_lambda_context(context)
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

    return handler


def __getattr__(name: str) -> Any:
    # ``from bench.bare_recipe import handler`` builds it then, as the documented module does at import.
    if name == "handler":
        return recipe(os.environ["TIERED_JOBS_IDEMPOTENCY_TABLE"])
    raise AttributeError(name)
