"""The event-source-mapping runtime: event shape, partial batch deletes, errors, concurrency, batching."""

from __future__ import annotations

import base64
import hashlib
import threading
from pathlib import Path

import pytest

from emulator.esm import (
    EventSourceRuntime,
    FunctionConfig,
    Invocation,
    InvocationError,
    MappingConfig,
    MappingRuntime,
    failed_message_ids,
    sqs_event,
)
from emulator.invokers import InProcessInvoker, in_process_factory
from tests.emulator import local_fake_handlers
from tests.emulator.local_support import wait_until

#: The fake handlers' code root: the repository, as the asset root is for the real ones.
ROOT = str(Path(__file__).resolve().parents[2])
REGION = "us-east-1"


def function(handler: str = "tests.emulator.local_fake_handlers.describe", **overrides) -> FunctionConfig:
    settings = dict(
        name="fn",
        arn=f"arn:aws:lambda:{REGION}:123456789012:function:fn",
        handler=handler,
        environment={"FAKE_SETTING": "on"},
        timeout_seconds=30,
        memory_mb=256,
        region=REGION,
        code_root=ROOT,
    )
    settings.update(overrides)
    return FunctionConfig(**settings)


class ScriptedInvoker:
    """Answers each invocation with the next scripted result, and keeps the events it saw."""

    def __init__(self, *results: Invocation):
        self.results = list(results)
        self.events: list[dict] = []

    def invoke(self, event):
        self.events.append(event)
        return self.results.pop(0)

    def close(self):
        pass


def mapping(queue, handler="tests.emulator.local_fake_handlers.describe", **overrides) -> MappingConfig:
    settings = dict(
        function=function(handler),
        queue_url=queue[0],
        queue_arn=queue[1],
        batch_size=10,
        batching_window_seconds=0,
        maximum_concurrency=2,
    )
    settings.update(overrides)
    return MappingConfig(**settings)


def receive_all(sqs, url):
    return sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"]
    ).get("Messages", [])


def visible_bodies(sqs, url) -> list[str]:
    return sorted(m["Body"] for m in receive_all(sqs, url))


def test_event_has_lambdas_sqs_record_shape(sqs, queue):
    sqs.send_message(
        QueueUrl=queue[0],
        MessageBody='{"x": 1}',
        MessageAttributes={
            "Kind": {"DataType": "String", "StringValue": "demo"},
            "Count": {"DataType": "Number", "StringValue": "3"},
            "Blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    )
    message = receive_all(sqs, queue[0])[0]

    event = sqs_event([message], queue[1], REGION)

    (record,) = event["Records"]
    assert record["messageId"] == message["MessageId"]
    assert record["receiptHandle"] == message["ReceiptHandle"]
    assert record["body"] == '{"x": 1}'
    assert record["md5OfBody"] == hashlib.md5(b'{"x": 1}').hexdigest()
    assert record["md5OfMessageAttributes"] == message["MD5OfMessageAttributes"]
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == queue[1]
    assert record["awsRegion"] == REGION
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert {"SentTimestamp", "ApproximateFirstReceiveTimestamp", "SenderId"} <= set(record["attributes"])
    assert record["messageAttributes"] == {
        "Kind": {"stringValue": "demo", "stringListValues": [], "binaryListValues": [], "dataType": "String"},
        "Count": {"stringValue": "3", "stringListValues": [], "binaryListValues": [], "dataType": "Number"},
        "Blob": {
            "binaryValue": base64.b64encode(b"\x00\x01").decode(),
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": "Binary",
        },
    }


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (None, set()),
        ({}, set()),
        ({"batchItemFailures": None}, set()),
        ({"batchItemFailures": []}, set()),
        ({"batchItemFailures": [{"itemIdentifier": "b"}]}, {"b"}),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, None),
        ({"batchItemFailures": [{"itemIdentifier": None}]}, None),
        ({"batchItemFailures": [{"itemId": "b"}]}, None),
        ({"batchItemFailures": [{"itemIdentifier": "not-in-batch"}]}, None),
        ("a string", None),
    ],
)
def test_partial_batch_response_is_read_like_lambda(response, expected):
    assert failed_message_ids(response, ["a", "b", "c"]) == expected


def test_deletes_exactly_the_records_not_reported_failed(sqs, queue):
    for body in ("ok-1", "fail-2", "ok-3", "fail-4", "ok-5"):
        sqs.send_message(QueueUrl=queue[0], MessageBody=body)
    runtime = MappingRuntime(
        mapping(queue, "tests.emulator.local_fake_handlers.fail_marked"), in_process_factory(), sqs
    )
    invoker = InProcessInvoker(runtime.mapping.function)
    try:
        invocation = runtime.process(invoker, receive_all(sqs, queue[0]))
    finally:
        invoker.close()

    assert invocation.error is None
    assert visible_bodies(sqs, queue[0]) == ["fail-2", "fail-4"]
    stats = runtime.stats.snapshot()
    assert (stats["records"], stats["deleted"], stats["item_failures"]) == (5, 3, 2)
    assert len(stats["latencies_ms"]) == 3


@pytest.mark.parametrize(
    "result",
    [
        Invocation(error=InvocationError("RuntimeError", "boom")),
        Invocation(error=InvocationError("Sandbox.Timedout", "Task timed out", timed_out=True)),
        Invocation(response={"batchItemFailures": [{"itemIdentifier": "unknown-id"}]}),
    ],
    ids=["handler-error", "timeout", "invalid-response"],
)
def test_a_failed_invocation_deletes_nothing(sqs, queue, result):
    for body in ("a", "b"):
        sqs.send_message(QueueUrl=queue[0], MessageBody=body)
    runtime = MappingRuntime(mapping(queue), in_process_factory(), sqs)

    runtime.process(ScriptedInvoker(result), receive_all(sqs, queue[0]))

    assert visible_bodies(sqs, queue[0]) == ["a", "b"]
    stats = runtime.stats.snapshot()
    assert (stats["deleted"], stats["invocation_errors"]) == (0, 1)
    assert stats["timeouts"] == int(result.error is not None and result.error.timed_out)


def test_without_report_batch_item_failures_the_response_is_ignored(sqs, queue):
    sqs.send_message(QueueUrl=queue[0], MessageBody="fail-but-deleted")
    runtime = MappingRuntime(mapping(queue, report_batch_item_failures=False), in_process_factory(), sqs)
    messages = receive_all(sqs, queue[0])

    runtime.process(
        ScriptedInvoker(Invocation(response={"batchItemFailures": [{"itemIdentifier": messages[0]["MessageId"]}]})),
        messages,
    )

    assert visible_bodies(sqs, queue[0]) == []


def test_handler_exception_in_process_is_an_invocation_error(sqs, queue):
    sqs.send_message(QueueUrl=queue[0], MessageBody="x")
    runtime = MappingRuntime(mapping(queue, "tests.emulator.local_fake_handlers.crash"), in_process_factory(), sqs)
    invoker = InProcessInvoker(runtime.mapping.function)
    try:
        invocation = runtime.process(invoker, receive_all(sqs, queue[0]))
    finally:
        invoker.close()
    assert invocation.error == InvocationError("RuntimeError", "boom")
    assert visible_bodies(sqs, queue[0]) == ["x"]


def test_runtime_never_exceeds_maximum_concurrency(sqs, busy_queue):
    queue = busy_queue
    for i in range(12):
        sqs.send_message(QueueUrl=queue[0], MessageBody=f"m{i}")
    local_fake_handlers.gate.clear()
    local_fake_handlers.peak = 0
    runtime = MappingRuntime(
        mapping(queue, "tests.emulator.local_fake_handlers.wait_for_gate", batch_size=1, maximum_concurrency=3),
        in_process_factory(),
        sqs,
    )
    runtime.start()
    try:
        wait_until(lambda: runtime.stats.snapshot()["in_flight"] == 3)
        # In flight counts a batch from its hand-over; the handler starts a moment later.
        wait_until(lambda: local_fake_handlers.running == 3)
        local_fake_handlers.gate.set()
        wait_until(lambda: runtime.stats.snapshot()["deleted"] == 12)
    finally:
        local_fake_handlers.gate.set()
        runtime.stop(timeout=10)
    assert local_fake_handlers.peak == 3
    assert not [t for t in threading.enumerate() if t.name.startswith("esm-")]


class ScriptedSqs:
    """A fake SQS client whose receives return scripted messages, to check the batching loop."""

    def __init__(self, receives):
        self.receives = list(receives)
        self.calls: list[dict] = []

    def receive_message(self, **kwargs):
        self.calls.append(kwargs)
        return {"Messages": self.receives.pop(0) if self.receives else []}


def fake_messages(n, start=0):
    return [{"MessageId": str(i)} for i in range(start, start + n)]


def test_batching_window_keeps_polling_until_the_batch_is_full(queue):
    sqs = ScriptedSqs([fake_messages(10), fake_messages(4, 10), fake_messages(10, 14)])
    runtime = MappingRuntime(mapping(queue, batch_size=14, batching_window_seconds=5), in_process_factory(), sqs)

    batch = runtime._receive_batch()

    assert [m["MessageId"] for m in batch] == [str(i) for i in range(14)]
    assert [call["MaxNumberOfMessages"] for call in sqs.calls] == [10, 4]
    assert all(
        call["MessageSystemAttributeNames"] == ["All"] and call["MessageAttributeNames"] == ["All"]
        for call in sqs.calls
    )


def test_without_a_window_one_receive_makes_the_batch(queue):
    sqs = ScriptedSqs([fake_messages(3), fake_messages(3, 3)])
    runtime = MappingRuntime(mapping(queue, batch_size=10, batching_window_seconds=0), in_process_factory(), sqs)

    assert len(runtime._receive_batch()) == 3
    assert len(sqs.calls) == 1


def test_mapping_rejects_settings_lambda_rejects(queue):
    with pytest.raises(ValueError, match="batching window"):
        mapping(queue, batch_size=20, batching_window_seconds=0)
    with pytest.raises(ValueError, match="maximum concurrency"):
        mapping(queue, maximum_concurrency=0)


def test_runtime_stops_all_mappings_and_finds_them_by_function(sqs, queue):
    runtime = EventSourceRuntime([MappingRuntime(mapping(queue), in_process_factory(), sqs)])
    runtime.start()
    assert runtime.by_function("fn").name == "fn"
    runtime.stop(timeout=10)
    assert not [t for t in threading.enumerate() if t.name.startswith("esm-")]
    with pytest.raises(KeyError):
        runtime.by_function("other")


class BrokenInvoker:
    """An execution environment whose plumbing fails (not the handler): the poller must survive it."""

    calls = 0

    def invoke(self, event):
        BrokenInvoker.calls += 1
        raise OSError("pipe broke")

    def close(self):
        pass


def test_a_failing_environment_does_not_kill_the_poller(sqs, busy_queue):
    for body in ("a", "b"):
        sqs.send_message(QueueUrl=busy_queue[0], MessageBody=body)
    BrokenInvoker.calls = 0
    runtime = MappingRuntime(
        mapping(busy_queue, batch_size=1, maximum_concurrency=1), lambda function: BrokenInvoker(), sqs
    )
    runtime.start()
    try:
        wait_until(lambda: BrokenInvoker.calls >= 2, what="both batches attempted by the one poller")
    finally:
        runtime.stop(timeout=10)
    assert runtime.stats.snapshot()["deleted"] == 0
    assert runtime.stats.snapshot()["invocation_errors"] >= 2
