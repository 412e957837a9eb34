"""The suite's shared parse of botocore's data files (tests/support/botocore_models.py)."""

from __future__ import annotations

import boto3
import botocore.session
from botocore.loaders import create_loader


def error_codes(service: str) -> list[str]:
    model = botocore.session.get_session().get_service_model(service)
    return sorted(code for shape in model.error_shapes if (code := (shape.metadata.get("error") or {}).get("code")))


def test_two_sessions_share_the_endpoint_rules_but_not_the_service_models():
    first, second = create_loader(), create_loader()
    assert first.load_data("endpoints") is second.load_data("endpoints")
    assert first.load_service_model("sqs", "service-2") is not second.load_service_model("sqs", "service-2")


def test_a_moto_error_leaves_the_next_sessions_service_model_as_botocore_ships_it(aws):
    shipped = error_codes("sqs")
    client = boto3.client("sqs", region_name="us-east-1")
    try:
        client.get_queue_url(QueueName="no-such-queue")
    except client.exceptions.QueueDoesNotExist:
        pass
    assert error_codes("sqs") == shipped
