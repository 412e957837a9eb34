"""The baseline for the cold-start figure: the bare Powertools recipe from its documentation
(batch processing + idempotency + Logger + Metrics), doing the same job as our consumer.
Not used by the product; only the benchmark imports it."""

import json
import os

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

logger = Logger()
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS)
persistence = DynamoDBPersistenceLayer(table_name=os.environ["TIERED_JOBS_IDEMPOTENCY_TABLE"])
config = IdempotencyConfig(
    event_key_jmespath="[type, idempotency_key]", payload_validation_jmespath="payload", use_local_cache=True
)


@idempotent_function(data_keyword_argument="job", config=config, persistence_store=persistence)
def run_job(job: dict) -> dict:
    return {"recorded": True, "event": job["payload"]["event"]}


def record_handler(record):
    result = run_job(job=json.loads(record.body))
    metrics.add_metric(name="JobsSucceeded", unit=MetricUnit.Count, value=1)
    return result


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event, context):
    config.register_lambda_context(context)
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
