"""Gap 21: moto's SQS, called from many threads as the embedded AWS's server does, behaves as SQS.

Each test switches threads as often as the interpreter allows, so that moto's unguarded steps (a
receive's visibility check before it marks the message, its move of a message past its receives to
the DLQ) interleave as they did under load in the composed run. Without the patch the first two
fail on most runs.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator

import boto3
import pytest

from emulator.moto_patches import serialize_sqs_requests, sqs_fast_clock_and_attributes

REGION = "us-east-1"


@pytest.fixture
def sqs(aws) -> Iterator[Callable[[], object]]:
    sqs_fast_clock_and_attributes()  # as the embedded AWS runs it (gap 14): long queues read quickly
    serialize_sqs_requests()  # before any queue exists: each queue's condition shares the lock
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield lambda: boto3.client("sqs", region_name=REGION)
    finally:
        sys.setswitchinterval(interval)


def _in_threads(count: int, target: Callable[[], None]) -> None:
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)


def _queue(client, name: str, **attributes: str) -> str:
    return client.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "60", **attributes})["QueueUrl"]


def _fill(client, url: str, count: int) -> None:
    for start in range(0, count, 10):
        entries = [{"Id": str(i), "MessageBody": str(start + i)} for i in range(10)]
        client.send_message_batch(QueueUrl=url, Entries=entries)


def test_a_message_is_received_once_however_many_receive_at_once(sqs):
    client = sqs()
    url = _queue(client, "many-receivers")
    _fill(client, url, 100)
    received: Counter[str] = Counter()
    errors: list[Exception] = []

    def receive() -> None:
        own = sqs()
        while True:
            try:
                messages = own.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            except Exception as error:  # noqa: BLE001 - an HTTP 500 from moto is what this test looks for
                errors.append(error)
                continue
            if not messages:
                return
            received.update(message["Body"] for message in messages)

    _in_threads(4, receive)
    assert errors == []
    assert received == Counter(str(n) for n in range(100))  # each once, none twice within its visibility


def test_a_message_past_its_receives_is_moved_to_the_dlq_once(sqs):
    client = sqs()
    dlq = _queue(client, "moved-dlq")
    arn = client.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "1"})
    url = _queue(client, "moved", VisibilityTimeout="0", RedrivePolicy=redrive)
    _fill(client, url, 100)
    errors: list[Exception] = []

    def receive() -> None:
        own = sqs()
        for _ in range(40):
            try:
                own.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
            except Exception as error:  # noqa: BLE001 - two moves of one message fail the second (HTTP 500)
                errors.append(error)

    _in_threads(6, receive)
    moved: Counter[str] = Counter()
    while messages := client.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", []):
        moved.update(message["Body"] for message in messages)
    left = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    assert errors == []
    assert sum(moved.values()) + len(left) == 100 and all(n == 1 for n in moved.values())


def test_a_long_poll_waits_without_holding_up_a_send(sqs):
    client = sqs()
    url = _queue(client, "long-poll")
    got: list[str] = []
    polling = threading.Event()

    def wait() -> None:
        own = sqs()
        polling.set()
        messages = own.receive_message(QueueUrl=url, WaitTimeSeconds=20).get("Messages", [])
        got.extend(message["Body"] for message in messages)

    waiter = threading.Thread(target=wait)
    waiter.start()
    polling.wait()
    client.send_message(QueueUrl=url, MessageBody="sent while it waited")
    waiter.join(timeout=30)
    # The send ran while the receive waited (had it waited for the receive's turn, the receive
    # would have ended empty after its 20 s), and its notice woke the receive.
    assert got == ["sent while it waited"]
