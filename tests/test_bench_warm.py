"""The warm-path figures' arithmetic and their clients (bench/warm.py), at small sizes: what is computed
and against what, never how fast (timing is the bench's, on its own machine)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ParamValidationError

from bench import warm


def test_a_figure_is_the_median_of_its_rounds_and_its_ratio_the_median_of_the_rounds_ratios():
    # Round by round the sides take 3, 1 and 2 s (ours) against 1, 1 and 1 s, for 1 000 jobs.
    times = {"ours": iter([0.0, 3.0, 1.0, 2.0]), "base": iter([0.0, 1.0, 1.0, 1.0]), "part": iter([0.0, 2.0, 0.5, 1.0])}
    sides = {name: (lambda jobs, name=name: next(times[name])) for name in times}
    figure = warm._rounds(sides, 1000, 3)
    assert figure["ours_us_per_job"] == 2000 and figure["baseline_us_per_job"] == 1000
    assert (figure["ratio"], figure["ratio_min"], figure["ratio_max"]) == (2.0, 1.0, 3.0)
    assert figure["part_us_per_job"] == 1000  # ours less the side without that part: 1000, 500 and 1000 µs
    assert figure["rounds"] == 3


@pytest.mark.parametrize("signed", [True, False])
def test_an_instant_client_answers_each_entry_builds_the_request_as_botocore_does_and_sends_nothing(signed):
    sqs = warm.instant_client("sqs", signed)  # its endpoint has no server: a request sent would fail
    response = sqs.send_message_batch(
        QueueUrl=warm.QUEUE_URL, Entries=[{"Id": "a", "MessageBody": "x"}, {"Id": "b", "MessageBody": "y"}]
    )
    assert [e["Id"] for e in response["Successful"]] == ["a", "b"] and response["Failed"] == []
    with pytest.raises(ParamValidationError):
        sqs.send_message_batch(QueueUrl=warm.QUEUE_URL, Entries=[{"Id": "a"}])  # no body: refused as by AWS
    answered = warm.instant_client("dynamodb", signed).put_item(TableName=warm.TABLE, Item={"id": {"S": "k"}})
    assert {k: v for k, v in answered.items() if k != "ResponseMetadata"} == {}


def test_a_signed_client_signs_each_request_and_parses_its_answer_and_an_unsigned_one_builds_none():
    """What a figure's calls cost: the signed client does a real call's CPU but the network's."""
    seen: dict[str, list] = {"signed": [], "unsigned": []}
    for signed in (True, False):
        dynamodb = warm.instant_client("dynamodb", signed)
        name = "signed" if signed else "unsigned"
        dynamodb.meta.events.register_first("before-send", lambda request, name=name, **_: seen[name].append(request))
        response = dynamodb.put_item(TableName=warm.TABLE, Item={"id": {"S": "k"}})
        assert ("ResponseMetadata" in response) is signed  # parsed from an HTTP answer, or handed over as is
    [request] = seen["signed"]
    assert request.headers["Authorization"].startswith(b"AWS4-HMAC-SHA256 Credential=bench/")
    assert request.headers["X-Amz-Target"] == b"DynamoDB_20120810.PutItem"
    assert seen["unsigned"] == []  # answered before the request was even made


def test_the_publisher_figure_publishes_every_job_on_both_sides():
    sides = warm._publisher_sides()
    assert set(sides) == {"ours", "raw"}
    for side in sides.values():
        assert side(25) >= 0  # each side asserts that every job was accepted


def test_the_consumer_sides_take_turns_batch_by_batch_and_each_is_timed_on_its_own_batches():
    # A clock that each side's batch advances by that side's cost: ours 2 ms a batch, the baseline 1 ms.
    now = [0.0]
    order: list[str] = []

    def side(name: str, seconds: float) -> warm.Handler:
        def handle(event: dict, context: object) -> dict:
            assert len(event["Records"]) == warm.BATCH
            order.append(name)
            now[0] += seconds
            return {"batchItemFailures": []}

        return handle

    handlers = {"ours": side("ours", 0.002), "base": side("base", 0.001), "part": side("part", 0.0015)}
    figure = warm._interleaved(handlers, 40, 2, clock=lambda: now[0])
    assert (figure["ours_us_per_job"], figure["baseline_us_per_job"]) == (200, 100)  # 2 ms / 10 jobs, 1 ms / 10
    assert (figure["ratio"], figure["ratio_min"], figure["ratio_max"]) == (2.0, 2.0, 2.0)
    assert figure["part_us_per_job"] == 50
    timed = order[3:]  # after the warm-up: a tenth of a round, at least one batch, each
    turns = [["ours", "base", "part"], ["base", "part", "ours"], ["part", "ours", "base"], ["ours", "base", "part"]]
    assert timed[:12] == [name for turn in turns for name in turn]
