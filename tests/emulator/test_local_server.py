"""The embedded AWS starts on a free port, serves boto3 through AWS_ENDPOINT_URL, and leaks nothing."""

from __future__ import annotations

import os
import threading

import boto3

from emulator.server import EmbeddedAws, client_environment
from tests.emulator.local_support import port_is_free


def test_server_serves_on_a_free_port_then_releases_it_and_its_thread():
    threads_before = set(threading.enumerate())
    aws = EmbeddedAws()
    endpoint = aws.start()
    try:
        assert endpoint.url.startswith("http://127.0.0.1:")
        assert not port_is_free(endpoint.port)
        with client_environment(endpoint):
            assert os.environ["AWS_ENDPOINT_URL"] == endpoint.url
            sqs = boto3.client("sqs")
            url = sqs.create_queue(QueueName="hello")["QueueUrl"]
            assert url.startswith(endpoint.url)
        assert "AWS_ENDPOINT_URL" not in os.environ
    finally:
        aws.stop()
    aws.stop()  # twice is harmless
    assert port_is_free(endpoint.port)
    assert set(threading.enumerate()) <= threads_before


def test_export_lines_name_everything_a_client_needs():
    with EmbeddedAws() as endpoint:
        lines = endpoint.export_lines()
    assert f"export AWS_ENDPOINT_URL={endpoint.url}" in lines
    assert "export AWS_DEFAULT_REGION=us-east-1" in lines
    assert "export AWS_ACCESS_KEY_ID=testing" in lines
    assert "unset AWS_SESSION_TOKEN" in lines
