"""A job's result never makes its side effect run again (Powertools stores it after the side effect).

The idempotency table enforces DynamoDB's documented 400 KB item limit here (moto's own checks
are not what AWS decides): an item's size is the sum of the UTF-8 lengths of its attribute names
and values.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from botocore.exceptions import ClientError

from tiered_jobs.runtime.registry import JobRegistry
from tiered_jobs.runtime.results import (
    CIRCULAR,
    PREVIEW_CHARS,
    RESULT_MAX_BYTES,
    storable,
)

DYNAMODB_MAX_ITEM_BYTES = 400 * 1024


class ItemLimit:
    """A DynamoDB client that refuses writes over 400 KB, as DynamoDB does."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    @staticmethod
    def _size(attributes: dict) -> int:
        return sum(len(str(k).encode()) + len(json.dumps(v).encode()) for k, v in attributes.items())

    def _check(self, size: int) -> None:
        if size > DYNAMODB_MAX_ITEM_BYTES:
            raise ClientError(
                {
                    "Error": {
                        "Code": "ValidationException",
                        "Message": "Item size to update has exceeded the maximum allowed size",
                    },
                    "ResponseMetadata": {"HTTPStatusCode": 400},
                },
                "UpdateItem",
            )

    def put_item(self, **kwargs):
        self._check(self._size(kwargs["Item"]))
        return self._real.put_item(**kwargs)

    def update_item(self, **kwargs):
        names = kwargs.get("ExpressionAttributeNames", {})
        self._check(
            self._size(kwargs["Key"])
            + sum(len(n.encode()) for n in names.values())
            + self._size(kwargs.get("ExpressionAttributeValues", {}))
        )
        return self._real.update_item(**kwargs)


class Circular(dict):
    pass


def results_registry(runs: Counter) -> JobRegistry:
    registry = JobRegistry()

    @registry.job("demo.tuple_keys")
    def tuple_keys(payload, ctx):
        runs[ctx.job_type] += 1
        return {(1, 2): "pair", 3: "three", "ok": True}  # json.dumps refuses tuple keys; sort_keys refuses mixed

    @registry.job("demo.circular")
    def circular(payload, ctx):
        runs[ctx.job_type] += 1
        result = Circular(ok=True)
        result["self"] = result
        return result

    @registry.job("demo.big")
    def big(payload, ctx):
        runs[ctx.job_type] += 1
        return {"blob": "x" * 500_000}  # over DynamoDB's 400 KB item limit

    return registry


def stored_result(tier) -> dict:
    (item,) = tier.dynamodb.scan(TableName=tier.idempotency_table)["Items"]
    assert item["status"]["S"] == "COMPLETED"
    assert len(item["data"]["S"].encode()) <= RESULT_MAX_BYTES + 2 * PREVIEW_CHARS
    return json.loads(item["data"]["S"])


@pytest.mark.parametrize("job_type", ["demo.tuple_keys", "demo.circular", "demo.big"])
def test_a_job_whose_result_cannot_be_stored_as_is_runs_exactly_once(tier, job_type):
    runs: Counter = Counter()
    registry = results_registry(runs)
    consumer = tier.consumer(
        client={"sqs": tier.sqs, "dynamodb": ItemLimit(tier.dynamodb)}.__getitem__, registry=registry
    )
    for _ in range(3):  # published three times: redeliveries of one job
        tier.publish(job_type, {}, f"{job_type}-1")
    for _ in range(5):  # every redelivery, and every retry a failure would cause
        if not tier.receive() and not tier.in_flight:
            break
        tier.make_visible()
        tier.run_batch(consumer)
    assert runs[job_type] == 1
    assert tier.receive() == [] and tier.dlq_messages() == []
    stored = stored_result(tier)
    if job_type == "demo.tuple_keys":
        assert stored == {"(1, 2)": "pair", "3": "three", "ok": True}
    elif job_type == "demo.circular":
        assert stored == {"ok": True, "self": CIRCULAR}
    else:
        assert stored["truncated"] is True and stored["original_bytes"] > 500_000
        assert stored["preview"].startswith('{"blob": "xxx')


@pytest.mark.parametrize(
    "value, expected",
    [
        ({None: 1, True: 2, 1.5: 3, (1,): 4}, {"null": 1, "true": 2, "1.5": 3, "(1,)": 4}),
        ({"nan": float("nan"), "inf": float("-inf")}, {"nan": "nan", "inf": "-inf"}),
        ({"big": 10**5000}, {"big": "<int of 16610 bits>"}),
        ({"set": frozenset({1})}, {"set": [1]}),
        ([[[]]], [[[]]]),
    ],
)
def test_storable_forms_are_json_and_bounded(value, expected):
    assert storable(value) == expected
    json.dumps(storable(value), sort_keys=True, allow_nan=False)


def test_storable_survives_objects_that_cannot_describe_themselves():
    class Broken:
        def __str__(self):
            raise RuntimeError("no")

        def __repr__(self):
            raise RuntimeError("no")

    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    assert storable({"x": Broken()}) == {"x": "<Broken>"}
    assert "<nested too deeply>" in json.dumps(storable(deep))
    big = storable([{"k": "é" * 40_000}])  # \u00e9 escapes: 6 bytes per character when stored
    assert big["truncated"] is True and len(json.dumps(big)) <= RESULT_MAX_BYTES


@pytest.mark.parametrize(
    "result",
    [
        None,
        True,
        {},
        {"recorded": True, "event": "page_view", "count": 3, "ratio": 0.25, "none": None},
        {"text": "\u00e9\u4e2d\U0001f600\x00\ud800"},  # escapes of every width, a lone surrogate
        {"big": 2**64 - 1, "neg": -(2**63), "tiny": 5e-324, "huge": 1.7976931348623157e308},
        {"near": "x" * (RESULT_MAX_BYTES // 12 - 10)},  # the bound lets it through: the walk agrees
        {"over": "\U0001f600" * (RESULT_MAX_BYTES // 12 + 1)},  # the bound refuses it: truncated by the walk
        {"nan": float("nan")},
        {"huge_int": 2**65},
        {1: "int key"},
        {"nested": {"a": 1}},
        {"k%d" % i: i for i in range(40)},
    ],
)
def test_a_plain_result_taken_as_is_is_what_the_full_walk_returns(result):
    from tiered_jobs.runtime import results

    reference = results._safe(result, 0, set())  # the full walk, as storable did for every result
    text = json.dumps(reference, sort_keys=True)
    if len(text) > RESULT_MAX_BYTES:
        reference = {"truncated": True, "original_bytes": len(text), "preview": text[:PREVIEW_CHARS]}
    assert json.dumps(storable(result), sort_keys=True) == json.dumps(reference, sort_keys=True)
    if results._plain(result):
        assert storable(result) is result and len(text) <= RESULT_MAX_BYTES
