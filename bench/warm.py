"""Warm path: the CPU a job costs once the container is up, which Lambda bills on every job after the first.

Two figures, both ``time.process_time`` in this process, with boto3 clients that answer at once
(:func:`instant_client`: no moto, whose own CPU would be most of what is measured, and no network, whose
latency is not CPU; botocore still builds, signs and parses each call, as it does in Lambda, for both
sides; the consumer's figure is also taken with calls answered before they are signed):

* the consumer: our :class:`~tiered_jobs.runtime.consumer.Consumer` against the bare Powertools recipe
  (``bench.bare_recipe``: ``BatchProcessor`` + ``idempotent_function``, a log line per record as
  Powertools' batch recipe writes), on batches of 10 new jobs of the example's
  ``analytics.record_event``, both with Logger and EMF metrics as deployed (their output written to
  ``os.devnull``);
* the publisher: ``Publisher.publish_batch`` against a raw ``send_message_batch`` loop over the same
  envelopes, per 1 000 jobs.

A figure is the median of ``rounds`` rounds, the ratio the median of the per-round ratios, with their
spread (min-max). In a round of the consumer's figure the sides take turns batch by batch (the first
turning each batch), so a machine whose speed drifts (a loaded or shared one) slows both sides
alike; the publisher's sides run one whole round each, alternating which goes first.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

BATCH = 10
JOB_TYPE = "analytics.record_event"
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/bench-warm"
TABLE = "bench-warm-idempotency"
#: A consumer side: Lambda's handler signature (the event, the context) -> the partial batch response.
Handler = Callable[[dict[str, Any], Any], Any]


def instant_client(service: str, signed: bool = True) -> Any:
    """A boto3 client whose every call is answered at once, over no network. DynamoDB's writes all succeed
    (every job is new); SQS takes every entry of a batch.

    ``signed`` (the figures' clients): the answer takes the place of the HTTP exchange, so botocore does
    all a call's CPU that Lambda bills but the socket's: it builds and validates the request, signs it
    (SigV4), and parses a 200 answer. Without it, the call is answered before it is signed, and only the
    request's building and validation are paid: about a third of a call's CPU, which magnifies what the
    consumer adds around its calls (the figure's method until the sides were measured both ways)."""
    import boto3

    session = boto3.session.Session(
        aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1"
    )  # fmt: skip
    client = session.client(service, endpoint_url="https://127.0.0.1")
    if signed:
        client.meta.events.register("before-send", _http_answer)
        return client
    from botocore.awsrequest import AWSResponse

    asked: dict[str, Any] = {}

    def keep(params: dict[str, Any], **_: Any) -> None:
        asked["params"] = params

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        entries = asked.pop("params", {}).get("Entries")
        parsed: dict[str, Any] = {}
        if entries is not None:
            parsed = {"Successful": [{"Id": e["Id"], "MessageId": e["Id"]} for e in entries], "Failed": []}
        return AWSResponse(None, 200, {}, None), parsed

    client.meta.events.register("before-parameter-build", keep)
    client.meta.events.register_first("before-call", answer)
    return client


def _http_answer(request: Any, **_: Any) -> Any:
    """The HTTP answer to a signed request, as DynamoDB and SQS (both JSON protocols) write it: ``{}`` for
    a write, and for an SQS batch each entry taken."""
    from botocore.awsrequest import AWSResponse

    body = b"{}"
    entries = json.loads(request.body or b"{}").get("Entries")
    if entries is not None:
        taken = [{"Id": e["Id"], "MessageId": e["Id"], "MD5OfMessageBody": ""} for e in entries]
        body = json.dumps({"Successful": taken, "Failed": []}).encode()
    headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "bench"}
    return AWSResponse(request.url, 200, headers, _Body(body))


class _Body:
    """The raw body botocore reads an answer from (urllib3's response offers the same two calls)."""

    def __init__(self, data: bytes):
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data

    def read(self, *_: Any, **__: Any) -> bytes:
        data, self._data = self._data, b""
        return data


class _Context:
    function_name = "bench-warm"
    function_version = "$LATEST"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench-warm"
    aws_request_id = "warm"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def measure(jobs: int = 1000, rounds: int = 7, publish_jobs: int = 1000) -> dict[str, Any]:
    """``jobs`` per round for the consumer's figure, ``publish_jobs`` for the publisher's."""
    with _as_deployed(), open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        consumer = _interleaved(_consumer_sides(sink), jobs, rounds)
        unsigned = _interleaved(_consumer_sides(sink, signed=False), jobs, rounds)
        publisher = _rounds(_publisher_sides(), publish_jobs, rounds)
    return {
        "consumer": {**consumer, "jobs_per_round": jobs, "batch": BATCH},
        # The same sides with each call answered before it is signed: what the consumer adds, magnified.
        "consumer_unsigned": {**unsigned, "jobs_per_round": jobs, "batch": BATCH},
        "publisher": {**publisher, "jobs_per_round": publish_jobs},
    }


def _rounds(sides: dict[str, Callable[[int], float]], jobs: int, rounds: int) -> dict[str, Any]:
    """CPU µs per job of each side (``ours`` and its baseline), after one untimed warm-up round each.

    Each round of a side starts from a collected heap: a side runs a whole round at once, and a full
    collection that what ran before it made due (the other side, or an earlier figure's objects) would
    otherwise land in one side's round only (a round of the publisher read anywhere from 0.7x to 2.6x)."""
    import gc

    names = list(sides)
    for name in names:
        sides[name](max(BATCH, jobs // 10))
    samples: dict[str, list[float]] = {name: [] for name in names}
    for run in range(rounds):
        for name in names[::-1] if run % 2 else names:
            gc.collect()
            samples[name].append(sides[name](jobs) / jobs * 1e6)
    return _summary(samples, rounds)


def _interleaved(
    handlers: dict[str, Handler], jobs: int, rounds: int, clock: Callable[[], float] = time.process_time
) -> dict[str, Any]:
    """CPU µs per job of each consumer side, ``jobs`` a round, the sides taking turns batch by batch (the
    first turning each batch), after one untimed warm-up of a tenth of a round each."""
    names = list(handlers)
    context = _Context()
    for name in names:
        for event in _events(max(BATCH, jobs // 10)):
            handlers[name](event, context)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        events = {name: _events(jobs) for name in names}  # built before any clock starts
        spent = dict.fromkeys(names, 0.0)
        for turn in range(len(events[names[0]])):
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                started = clock()
                response = handlers[name](events[name][turn], context)
                spent[name] += clock() - started
                assert response == {"batchItemFailures": []}, response
        for name in names:
            samples[name].append(spent[name] / (len(events[name]) * BATCH) * 1e6)
    return _summary(samples, rounds)


def _summary(samples: dict[str, list[float]], rounds: int) -> dict[str, Any]:
    """The figure of per-round samples (µs per job): the first side is ours, the second its baseline, and
    any other is ours less one part."""
    ours, baseline, *others = list(samples)
    ratios = [o / b for o, b in zip(samples[ours], samples[baseline], strict=True)]
    return {
        "ours_us_per_job": round(statistics.median(samples[ours]), 1),
        "baseline_us_per_job": round(statistics.median(samples[baseline]), 1),
        "ratio": round(statistics.median(ratios), 3),
        "ratio_min": round(min(ratios), 3),
        "ratio_max": round(max(ratios), 3),
        "rounds": rounds,
        # What a part of ours costs: ours, less that part, in the same rounds (median of the differences).
        **{f"{name}_us_per_job": _median_difference(samples[ours], samples[name]) for name in others},
    }


def _median_difference(ours: list[float], without: list[float]) -> float:
    return round(statistics.median(o - w for o, w in zip(ours, without, strict=True)), 1)


def _consumer_sides(sink: Any, signed: bool = True) -> dict[str, Handler]:
    from aws_lambda_powertools import Logger

    from bench.bare_recipe import recipe
    from tiered_jobs.runtime.backoff import RetryPolicy
    from tiered_jobs.runtime.config import TierConfig
    from tiered_jobs.runtime.consumer import Consumer
    from tiered_jobs.runtime.job_modules import load_job_modules
    from tiered_jobs.runtime.logger import powertools_logger
    from tiered_jobs.runtime.registry import registry

    load_job_modules(["functions.jobs"])  # the example's jobs and their payload schemas, as its consumer loads them
    clients = {"dynamodb": instant_client("dynamodb", signed), "sqs": instant_client("sqs", signed)}
    suffix = "" if signed else "-unsigned"  # each logger its own service (see _logger)
    config = TierConfig(
        stage="bench", tier="bulk", queue_url=QUEUE_URL, dlq_url=QUEUE_URL + "-dlq", idempotency_table=TABLE,
        retry=RetryPolicy(),
    )  # fmt: skip
    # Each side's Logger as its handler builds it: ours the library's (runtime/logger.py), the recipe Powertools' own.
    ours_logger = _logger(powertools_logger, f"bench-warm-ours{suffix}", sink)
    ours = Consumer(config, registry, client=clients.__getitem__, logger=ours_logger)
    bare_logger = _logger(Logger, f"bench-warm-bare{suffix}", sink)
    bare = recipe(TABLE, dynamodb=clients["dynamodb"], logger=bare_logger, namespace="Bench")
    # The same consumer without its one INFO line per job ("job succeeded", docs/consumer.md): what that line costs.
    quiet = Consumer(
        config,
        registry,
        client=clients.__getitem__,
        logger=_logger(powertools_logger, f"bench-warm-quiet{suffix}", sink, level="WARNING"),
    )
    return {"ours": ours.handle, "bare": bare, "success_line": quiet.handle}


def _logger(cls: Any, service: str, sink: Any, level: str = "INFO") -> Any:
    """A Powertools Logger built by ``cls`` (at the deployed level, INFO, unless told) that writes where nothing reads.

    Its service is the figure's own: Powertools shares one ``logging`` logger per service name, and the
    sink is closed after the figure, so a name other code logs under would leave it a closed stream."""
    return cls(service=service, level=level, logger_handler=logging.StreamHandler(sink))


def _events(jobs: int) -> list[dict[str, Any]]:
    return [_event(BATCH) for _ in range(max(1, jobs // BATCH))]


def _event(size: int) -> dict[str, Any]:
    now_ms = str(int(time.time() * 1000))
    return {
        "Records": [
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": "rh",
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:bench-warm",
                "awsRegion": "us-east-1",
                "messageAttributes": {},
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": now_ms,
                    "ApproximateFirstReceiveTimestamp": now_ms,
                },
                "body": json.dumps(
                    {
                        "type": JOB_TYPE,
                        "idempotency_key": uuid.uuid4().hex,
                        "payload": {"event": "page_view"},
                        "version": 1,
                    }
                ),
            }
            for _ in range(size)
        ]
    }


def _publisher_sides() -> dict[str, Callable[[int], float]]:
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import Job, Publisher

    sqs = instant_client("sqs")
    publisher = Publisher({"bulk": QUEUE_URL}, Routes({"analytics.*": "bulk"}), sqs=sqs)

    def ours(jobs: int) -> float:
        batch = [Job(JOB_TYPE, {"event": "page_view"}, uuid.uuid4().hex) for _ in range(jobs)]
        started = time.process_time()
        results = publisher.publish_batch(batch)
        elapsed = time.process_time() - started
        assert all(r.ok for r in results)
        return elapsed

    def raw(jobs: int) -> float:
        """What a service would write without the library: the envelope as JSON, 10 to a call."""
        keys = [uuid.uuid4().hex for _ in range(jobs)]
        started = time.process_time()
        for start in range(0, jobs, BATCH):
            entries = [
                {
                    "Id": str(i),
                    "MessageBody": json.dumps(
                        {"type": JOB_TYPE, "idempotency_key": key, "payload": {"event": "page_view"}, "version": 1}
                    ),
                }
                for i, key in enumerate(keys[start : start + BATCH])
            ]
            response = sqs.send_message_batch(QueueUrl=QUEUE_URL, Entries=entries)
            assert not response["Failed"]
        return time.process_time() - started

    return {"ours": ours, "raw": raw}


@contextlib.contextmanager
def _as_deployed() -> Iterator[None]:
    """EMF metrics on (``python -m bench`` turns them off for its other figures): both sides flush them."""
    saved = os.environ.get("POWERTOOLS_METRICS_DISABLED")
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "false"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("POWERTOOLS_METRICS_DISABLED", None)
        else:
            os.environ["POWERTOOLS_METRICS_DISABLED"] = saved


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
