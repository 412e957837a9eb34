"""The suite's shared parse of botocore's data files (tests/support/botocore_models.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import boto3
import botocore.session
from botocore.loaders import create_loader


def shipped_model_path(service: str) -> str:
    """The newest API version of ``service``'s model as botocore ships it (gzipped JSON)."""
    return sorted(Path(botocore.__file__).parent.glob(f"data/{service}/*/service-2.json.gz"))[-1].as_posix()


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


def test_each_session_gets_the_service_model_as_parsed_and_a_change_to_it_stays_its_own():
    first = create_loader().load_service_model("dynamodb", "service-2")
    pristine = json.loads(gzip.decompress(Path(shipped_model_path("dynamodb")).read_bytes()))
    assert first == pristine
    first["shapes"].clear()  # as moto's error codes or the SDK extras change one session's model
    second = create_loader().load_service_model("dynamodb", "service-2")
    assert second == pristine
