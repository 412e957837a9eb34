"""Replay and inspect on moto: what moves, what stays, and that no letter is ever lost."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import boto3
import pytest

from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.names import (
    SQS_MAX_MESSAGE_ATTRIBUTES,
    SQS_MAX_MESSAGE_BYTES,
    Attributes,
    DeadLetter,
    Replay,
)
from tiered_jobs.contract.replay_events import RESPONSE_FIELDS
from tiered_jobs.contract.sqs_limits import message_size
from tiered_jobs.contract.times import iso_text
from tiered_jobs.replay import (
    ReplayEventError,
    ReplayRequest,
    TierQueues,
    parse_event,
    run,
)

REGION = "us-east-1"
#: The replay's clock: an hour ahead of moto's (which stamps SentTimestamp with the real time), so every
#: letter has an age, and well inside the tier's idempotency window.
NOW = (datetime.now(timezone.utc) + timedelta(hours=1)).replace(microsecond=678000)
#: The default window of a tier: queue retention (4 days) + DLQ retention (14 days).
TTL = 18 * 86400


iso = iso_text  # the form every time attribute takes (tiered_jobs.contract.times)


@dataclass
class Dlq:
    """A tier's main queue and DLQ on moto, with ways to put letters in and read them out."""

    sqs: Any
    queue_url: str
    dlq_url: str
    tiers: dict[str, TierQueues] = field(default_factory=dict)

    def dead_letter(
        self,
        body: str,
        *,
        job_type: str = "testjobs.effect",
        error_type: str = "TimeoutError",
        error_message: str = "timed out",
        reason: str = DeadLetter.REASON_RETRIES_EXHAUSTED,
        failed_at: datetime = NOW,
        attributes: dict[str, dict] | None = None,
    ) -> str:
        """A letter as our consumer dead-letters it: the user's attributes plus ``DeadLetter.*``."""
        reasons = {
            DeadLetter.REASON: reason,
            DeadLetter.ERROR_TYPE: error_type,
            DeadLetter.ERROR_MESSAGE: error_message,
            DeadLetter.ATTEMPTS: "5",
            DeadLetter.FIRST_FAILED_AT: iso(failed_at - timedelta(minutes=13)),
            DeadLetter.LAST_FAILED_AT: iso(failed_at),
            DeadLetter.SOURCE_QUEUE: self.queue_url,
            DeadLetter.JOB_TYPE: job_type,
        }
        attrs = {name: {"DataType": "String", "StringValue": value} for name, value in reasons.items()}
        return self.redriven(body, {**(attributes or {}), **attrs})

    def redriven(self, body: str, attributes: dict[str, dict] | None = None) -> str:
        """A letter as SQS's redrive policy moves it: no reasons at all."""
        extra = {"MessageAttributes": attributes} if attributes else {}
        return self.sqs.send_message(QueueUrl=self.dlq_url, MessageBody=body, **extra)["MessageId"]

    def take_all(self, url: str) -> list[dict]:
        """Every visible message of a queue (hidden afterwards: call at the end of a test)."""
        out: list[dict] = []
        while batch := self.sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=600,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", []):
            out += batch
        return out

    def counts(self, url: str) -> tuple[int, int]:
        """(visible, in flight) messages of a queue."""
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]), int(attrs["ApproximateNumberOfMessagesNotVisible"])

    def run(self, event: dict, sqs: Any = None, **options: Any) -> dict:
        options.setdefault("wait_seconds", 0)
        options.setdefault("now", lambda: NOW)
        request = parse_event({"tier": "critical", **event}, tiers=self.tiers)
        response = run(request, sqs=sqs or self.sqs, tiers=self.tiers, **options)
        assert tuple(response) == RESPONSE_FIELDS
        return response


def make_dlq() -> Dlq:
    """A tier with the default idempotency window (inside ``mock_aws``)."""
    sqs = boto3.client("sqs", region_name=REGION)
    dlq_url = sqs.create_queue(QueueName="critical-dlq")["QueueUrl"]
    queue_url = sqs.create_queue(QueueName="critical")["QueueUrl"]
    return Dlq(sqs, queue_url, dlq_url, {"critical": TierQueues(queue_url, dlq_url, idempotency_ttl_seconds=TTL)})


def job(job_type: str = "testjobs.effect", key: str = "k1", **payload: Any) -> str:
    return build(job_type, payload or {"counter": "acc-1", "amount": 5}, key, published_at=iso(NOW)).to_json()


class Wrapper:
    """A real client with some calls replaced: the way tests make SQS fail where they choose."""

    def __init__(self, client: Any, **overrides: Any):
        self._client = client
        self._overrides = overrides

    def __getattr__(self, name: str) -> Any:
        return self._overrides.get(name) or getattr(self._client, name)


def user_attributes(message: dict) -> dict[str, dict]:
    return {
        name: {k: v for k, v in value.items() if k in ("DataType", "StringValue", "BinaryValue")}
        for name, value in message.get("MessageAttributes", {}).items()
    }


# -- replay -------------------------------------------------------------------------------------


def test_the_scan_long_polls_so_an_empty_answer_means_empty(dlq, monkeypatch):
    """A short poll samples a subset of SQS's servers and may answer empty while letters wait; any
    wait makes SQS query them all. The suite shortens the wait on moto (tests/conftest.py): as
    shipped, every receive of a scan waits."""
    from tests.conftest import SHIPPED_RECEIVE_WAIT_SECONDS
    from tiered_jobs.replay import service

    monkeypatch.setattr(service, "RECEIVE_WAIT_SECONDS", SHIPPED_RECEIVE_WAIT_SECONDS)
    waits: list[int] = []

    def receive_message(**kwargs: Any) -> dict:
        waits.append(kwargs["WaitTimeSeconds"])
        return {}

    request = parse_event({"tier": "critical", "dry_run": True}, tiers=dlq.tiers)
    run(request, sqs=Wrapper(dlq.sqs, receive_message=receive_message), tiers=dlq.tiers, now=lambda: NOW)
    assert waits and all(wait == SHIPPED_RECEIVE_WAIT_SECONDS >= 1 for wait in waits)


def test_replay_moves_the_body_byte_for_byte_keeps_user_attributes_and_marks_the_replay(dlq):
    body = '{"type": "testjobs.ok",\n  "idempotency_key": "pay-é-1",\t"payload": {"memo": "café ☕ 日本  "}}  '
    mine = {
        "trace_id": {"DataType": "String", "StringValue": "t-1 ✓"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xffraw"},
    }
    dlq.dead_letter(body, attributes=mine)

    response = dlq.run({})

    assert response == {
        "action": "replay",
        "tier": "critical",
        "mode": "batch",
        "dry_run": False,
        "matched": 1,
        "moved": 1,
        "failed": 0,
        "left_in_dlq": 0,
        "groups": response["groups"],
        "stopped_because": "dlq_empty",
        "task_handle": None,
        "idempotency_ttl_seconds": TTL,
        "outside_window": 0,
        "refused_outside_window": 0,
        "left_expired": 0,
        "discarded": 0,
        "archive": None,
        "archive_error": None,
        "letters": [],
        "outcomes": None,  # the event named no message_ids
    }
    [moved] = dlq.take_all(dlq.queue_url)
    assert moved["Body"] == body
    assert user_attributes(moved) == {
        **mine,
        Replay.COUNT: {"DataType": "Number", "StringValue": "1"},
        Replay.AT: {"DataType": "String", "StringValue": iso(NOW)},
        # a new run of the job, which keeps its real first failure (its letter's)
        Attributes.FIRST_FAILED_AT: {"DataType": "String", "StringValue": iso(NOW - timedelta(minutes=13))},
    }
    assert dlq.counts(dlq.dlq_url) == (0, 0)


def test_replay_count_increments_when_a_replayed_job_fails_again(dlq):
    earlier = {
        Replay.COUNT: {"DataType": "Number", "StringValue": "2"},
        Replay.AT: {"DataType": "String", "StringValue": "2029-12-31T00:00:00.000Z"},
    }
    dlq.dead_letter(job(), attributes=earlier)

    dlq.run({})

    [moved] = dlq.take_all(dlq.queue_url)
    assert moved["MessageAttributes"][Replay.COUNT]["StringValue"] == "3"
    assert moved["MessageAttributes"][Replay.AT]["StringValue"] == iso(NOW)


@pytest.mark.parametrize(
    ("user_count", "markers"),
    [
        (2, [Attributes.FIRST_FAILED_AT, Replay.AT, Replay.COUNT]),  # the most a letter with reasons can carry
        (8, [Replay.AT, Replay.COUNT]),  # more than a letter with reasons can hold: a redriven one
        (9, [Replay.COUNT]),
        (10, []),
    ],
)
def test_the_replayed_copy_never_exceeds_the_attribute_limit_and_user_attributes_win(dlq, user_count, markers):
    mine = {f"a{i}": {"DataType": "String", "StringValue": str(i)} for i in range(user_count)}
    if user_count <= SQS_MAX_MESSAGE_ATTRIBUTES - len(DeadLetter.ALL):
        dlq.dead_letter(job(), attributes=mine)
    else:
        dlq.redriven(job(), mine)

    dlq.run({})

    [moved] = dlq.take_all(dlq.queue_url)
    names = set(moved["MessageAttributes"])
    assert len(names) <= SQS_MAX_MESSAGE_ATTRIBUTES
    assert names == set(mine) | set(markers)


def test_job_type_filter_is_a_glob_and_reads_redriven_letters_from_their_body(dlq):
    dlq.dead_letter(job("testjobs.effect"), job_type="testjobs.effect")
    dlq.dead_letter(job("other.email"), job_type="other.email")
    dlq.redriven(job("testjobs.ok", key="r1"))
    dlq.redriven("not an envelope")

    response = dlq.run({"job_type": "testjobs.*"})

    assert (response["matched"], response["moved"], response["left_in_dlq"]) == (2, 2, 2)
    assert sorted(json.loads(m["Body"])["type"] for m in dlq.take_all(dlq.queue_url)) == [
        "testjobs.effect",
        "testjobs.ok",
    ]
    left = dlq.take_all(dlq.dlq_url)
    assert sorted(m["Body"] for m in left) == sorted([job("other.email"), "not an envelope"])


def test_error_type_unknown_matches_only_letters_without_reasons(dlq):
    dlq.dead_letter(job(key="a"), error_type="TimeoutError")
    dlq.dead_letter(job(key="b"), error_type="ValueError", reason=DeadLetter.REASON_PERMANENT)
    redriven = dlq.redriven(job(key="c"))

    assert dlq.run({"error_type": "unknown"})["moved"] == 1
    [moved] = dlq.take_all(dlq.queue_url)
    assert json.loads(moved["Body"])["idempotency_key"] == "c"
    assert redriven not in {m["MessageId"] for m in dlq.take_all(dlq.dlq_url)}


def test_error_type_filter_matches_the_dead_letter_error_type(dlq):
    dlq.dead_letter(job(key="a"), error_type="TimeoutError")
    dlq.dead_letter(job(key="b"), error_type="ValueError", reason=DeadLetter.REASON_PERMANENT)
    dlq.redriven(job(key="c"))

    assert dlq.run({"error_type": "TimeoutError"})["moved"] == 1
    assert [json.loads(m["Body"])["idempotency_key"] for m in dlq.take_all(dlq.queue_url)] == ["a"]
    assert dlq.counts(dlq.dlq_url) == (2, 0)


def test_older_than_uses_the_last_failure_or_else_the_time_sent(dlq):
    real_now = datetime.now(timezone.utc)  # moto stamps SentTimestamp with the real clock
    dlq.dead_letter(job(key="old"), failed_at=real_now - timedelta(hours=2))
    dlq.dead_letter(job(key="new"), failed_at=real_now - timedelta(minutes=5))
    dlq.redriven(job(key="redriven"))

    def moved_keys(at: datetime) -> list[str]:
        assert dlq.run({"older_than_seconds": 3600}, now=lambda: at)["stopped_because"] == "dlq_empty"
        return sorted(json.loads(m["Body"])["idempotency_key"] for m in dlq.take_all(dlq.queue_url))

    assert moved_keys(real_now) == ["old"]
    # 58 min later: "new" failed 63 min ago (sent to the DLQ only 58 min ago); the redriven one, 58 min.
    assert moved_keys(real_now + timedelta(minutes=58)) == ["new"]
    assert moved_keys(real_now + timedelta(hours=2)) == ["redriven"]
    assert dlq.counts(dlq.dlq_url) == (0, 0)


def test_a_filtered_replay_walks_past_many_non_matching_letters(dlq):
    for i in range(25):
        dlq.dead_letter(job("other.email", key=f"n{i}"), job_type="other.email")
    for i in range(3):
        dlq.dead_letter(job(key=f"p{i}"))

    response = dlq.run({"job_type": "testjobs.*"})

    assert (response["moved"], response["stopped_because"], response["left_in_dlq"]) == (3, "dlq_empty", 25)
    assert dlq.counts(dlq.dlq_url) == (25, 0)  # every non-matching letter is visible again


def test_max_messages_bounds_the_moves(dlq):
    for i in range(25):
        dlq.dead_letter(job(key=f"k{i}"))

    response = dlq.run({"max_messages": 12})

    assert (response["moved"], response["stopped_because"], response["left_in_dlq"]) == (12, "max_messages", 13)
    assert dlq.counts(dlq.dlq_url) == (13, 0)


def test_max_messages_with_a_filter_leaves_the_extra_matches_visible(dlq):
    for i in range(15):
        dlq.dead_letter(job(key=f"k{i}"))

    response = dlq.run({"max_messages": 5, "job_type": "testjobs.*"})

    assert (response["matched"], response["moved"], response["stopped_because"]) == (5, 5, "max_messages")
    assert dlq.counts(dlq.dlq_url) == (10, 0)
    assert len(dlq.take_all(dlq.queue_url)) == 5


def test_progress_is_reported_after_each_batch(dlq):
    for i in range(23):
        dlq.dead_letter(job(key=f"k{i}"))
    seen: list[int] = []

    dlq.run({}, on_progress=seen.append)

    assert seen == [10, 20, 23]


# -- dry run and inspect -----------------------------------------------------------------------


def test_dry_run_counts_what_would_move_and_changes_nothing(dlq):
    for i in range(12):
        dlq.dead_letter(job(key=f"k{i}"))
    dlq.dead_letter(job("other.email"), job_type="other.email")

    response = dlq.run({"dry_run": True, "job_type": "testjobs.*"})

    assert (response["matched"], response["moved"], response["failed"]) == (12, 0, 0)
    assert response["left_in_dlq"] == 13
    assert [(g["job_type"], g["count"]) for g in response["groups"]] == [("testjobs.effect", 12)]
    assert dlq.counts(dlq.queue_url) == (0, 0)
    assert dlq.counts(dlq.dlq_url) == (13, 0)
    assert all(Replay.COUNT not in m["MessageAttributes"] for m in dlq.take_all(dlq.dlq_url))


def test_inspect_consumes_nothing_and_groups_by_normalised_error(dlq):
    first = NOW - timedelta(hours=3)
    a = dlq.dead_letter(
        job(key="a"),
        error_type="AccountNotFound",
        error_message="account 123 not found",
        reason=DeadLetter.REASON_PERMANENT,
        failed_at=first,
    )
    b = dlq.dead_letter(
        job(key="b"),
        error_type="AccountNotFound",
        error_message="account 456 not found",
        reason=DeadLetter.REASON_PERMANENT,
        failed_at=NOW,
    )
    c = dlq.dead_letter(job(key="c"), error_type="TimeoutError", error_message="no answer after 30 s")
    d = dlq.redriven(job("other.email", key="d"))
    e = dlq.redriven("garbage")

    response = dlq.run({"action": "inspect"})

    assert (response["matched"], response["moved"], response["left_in_dlq"]) == (5, 0, 5)
    groups = {(g["job_type"], g["error_type"]): g for g in response["groups"]}
    assert groups[("testjobs.effect", "AccountNotFound")] == {
        "job_type": "testjobs.effect",
        "error_type": "AccountNotFound",
        "reason": "permanent",
        "error_message": "account <n> not found",
        "frame": None,  # letters without DeadLetter.Traceback (older consumers) group as before
        "count": 2,
        "outside_window": 0,
        "oldest": iso(first - timedelta(minutes=13)),
        "newest": iso(NOW),
        "sample_message_ids": [a, b],
        "message_ids": [a, b],
    }
    assert groups[("testjobs.effect", "TimeoutError")]["error_message"] == "no answer after <n> s"
    assert groups[("testjobs.effect", "TimeoutError")]["sample_message_ids"] == [c]
    assert groups[("other.email", "unknown")]["reason"] == "unknown"
    assert groups[("other.email", "unknown")]["sample_message_ids"] == [d]
    assert groups[("unknown", "unknown")]["sample_message_ids"] == [e]
    assert response["groups"][0]["count"] == 2  # biggest first
    assert dlq.counts(dlq.dlq_url) == (5, 0)
    assert dlq.counts(dlq.queue_url) == (0, 0)


def test_inspect_keeps_at_most_three_samples(dlq):
    ids = [dlq.dead_letter(job(key=f"k{i}"), error_message=f"order ord_{i}x failed") for i in range(5)]

    [group] = dlq.run({"action": "inspect"})["groups"]

    assert (group["count"], group["sample_message_ids"], group["error_message"]) == (5, ids[:3], "order <id> failed")
    assert group["message_ids"] == ids  # every letter, for `dlq inspect --ids`


def test_a_letter_seen_again_is_not_counted_twice(dlq):
    # A hold that expires at once (as in a run that outlives it): the scan wraps around and stops.
    for i in range(3):
        dlq.dead_letter(job(key=f"k{i}"))

    def receive(**kwargs):
        return dlq.sqs.receive_message(**{**kwargs, "VisibilityTimeout": 0})

    response = dlq.run({"action": "inspect"}, sqs=Wrapper(dlq.sqs, receive_message=receive))

    assert (response["matched"], response["stopped_because"]) == (3, "all_seen")
    assert dlq.counts(dlq.dlq_url) == (3, 0)


# -- failures: nothing is lost -----------------------------------------------------------------


def test_failed_sends_stay_in_the_dlq_and_are_counted(dlq):
    for key in ("ok1", "fail1", "ok2", "fail2"):
        dlq.dead_letter(job(key=key))

    def send_message_batch(QueueUrl, Entries):
        good = [e for e in Entries if "fail" not in e["MessageBody"]]
        bad = [e for e in Entries if "fail" in e["MessageBody"]]
        answer = dlq.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=good)
        answer["Failed"] = [
            {"Id": e["Id"], "SenderFault": False, "Code": "InternalError", "Message": "boom"} for e in bad
        ]
        return answer

    response = dlq.run({}, sqs=Wrapper(dlq.sqs, send_message_batch=send_message_batch))

    assert (response["matched"], response["moved"], response["failed"], response["left_in_dlq"]) == (4, 2, 2, 2)
    assert sorted(json.loads(m["Body"])["idempotency_key"] for m in dlq.take_all(dlq.queue_url)) == ["ok1", "ok2"]
    assert sorted(json.loads(m["Body"])["idempotency_key"] for m in dlq.take_all(dlq.dlq_url)) == ["fail1", "fail2"]


def test_a_crash_between_send_and_delete_loses_nothing_and_a_rerun_converges(dlq):
    dlq.dead_letter(job(key="k1"))

    def delete_message_batch(**kwargs):
        raise ConnectionError("the process died here")

    with pytest.raises(ConnectionError):
        dlq.run({}, sqs=Wrapper(dlq.sqs, delete_message_batch=delete_message_batch))

    assert dlq.counts(dlq.queue_url) == (1, 0)  # sent...
    assert dlq.counts(dlq.dlq_url) == (1, 0)  # ...and still in the DLQ, visible again

    response = dlq.run({})

    assert (response["moved"], response["left_in_dlq"]) == (1, 0)
    copies = dlq.take_all(dlq.queue_url)
    assert [m["Body"] for m in copies] == [job(key="k1")] * 2  # at most a duplicate, same idempotency key


def test_a_failed_release_does_not_hide_the_result(dlq):
    dlq.dead_letter(job())

    def change_message_visibility_batch(**kwargs):
        raise ConnectionError("network down")

    response = dlq.run(
        {"dry_run": True}, sqs=Wrapper(dlq.sqs, change_message_visibility_batch=change_message_visibility_batch)
    )

    assert response["matched"] == 1
    assert dlq.counts(dlq.dlq_url) == (0, 1)  # held until its hold expires: still in the DLQ, not lost


# -- pacing ------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


def test_the_rate_limit_is_respected(dlq):
    for i in range(23):
        dlq.dead_letter(job(key=f"k{i}"))
    clock = FakeClock()
    sends: list[tuple[float, int]] = []

    def send_message_batch(**kwargs):
        sends.append((clock.t, len(kwargs["Entries"])))
        clock.t += 0.1  # the call itself takes time
        return dlq.sqs.send_message_batch(**kwargs)

    response = dlq.run(
        {"max_per_second": 5},
        sqs=Wrapper(dlq.sqs, send_message_batch=send_message_batch),
        clock=clock,
        sleep=clock.sleep,
    )

    assert response["moved"] == 23
    assert [size for _, size in sends] == [5, 5, 5, 5, 3]
    start = sends[0][0]
    for i, (at, _) in enumerate(sends):
        sent_before = sum(size for _, size in sends[:i])
        assert sent_before <= 5 * (at - start) + 1e-9
    assert [round(at - start, 6) for at, _ in sends] == [0, 1, 2, 3, 4]


def test_the_time_budget_is_respected_and_nothing_is_lost(dlq):
    for i in range(50):
        dlq.dead_letter(job(key=f"k{i}"))
    receives: list[int] = []

    def receive_message(**kwargs):
        receives.append(kwargs["VisibilityTimeout"])
        return dlq.sqs.receive_message(**kwargs)

    def remaining_ms() -> int:  # each batch "takes" 10 s of a 45 s budget
        return 45_000 - 10_000 * len(receives)

    response = dlq.run({}, sqs=Wrapper(dlq.sqs, receive_message=receive_message), remaining_ms=remaining_ms)

    assert (response["moved"], response["stopped_because"], response["left_in_dlq"]) == (40, "time_budget", 10)
    assert receives == [45 + 30] * 4  # held for the rest of the budget plus a margin
    bodies = [m["Body"] for m in dlq.take_all(dlq.queue_url) + dlq.take_all(dlq.dlq_url)]
    assert sorted(bodies) == sorted(job(key=f"k{i}") for i in range(50))


def test_a_rate_limit_wait_that_would_overrun_the_budget_stops_instead(dlq):
    for i in range(3):
        dlq.dead_letter(job(key=f"k{i}"))
    clock = FakeClock()

    response = dlq.run({"max_per_second": 0.05}, remaining_ms=lambda: 15_000, clock=clock, sleep=clock.sleep)

    # One letter per 20 s: the first goes at once, the next would wait past the 10 s safety margin.
    assert (response["moved"], response["stopped_because"], clock.slept) == (1, "time_budget", [])
    assert dlq.counts(dlq.dlq_url) == (2, 0)


def test_an_unknown_tier_at_run_time_lists_the_tiers(dlq):
    with pytest.raises(ReplayEventError, match=r"unknown tier 'bulk' \(this stage has 'critical'\)"):
        run(ReplayRequest(tier="bulk"), sqs=dlq.sqs, tiers=dlq.tiers)


# -- the idempotency window ---------------------------------------------------------------------


def old_job(key: str, age: timedelta) -> str:
    """A job published ``age`` before NOW."""
    return build("testjobs.effect", {"counter": "acc-1", "amount": 5}, key, published_at=iso(NOW - age)).to_json()


def test_a_replay_refuses_letters_older_than_the_idempotency_window_and_leaves_them_in_the_dlq(dlq):
    dlq.dead_letter(job(key="fresh"))
    dlq.dead_letter(old_job("old", timedelta(days=19)), failed_at=NOW - timedelta(days=18, hours=23))
    # Dead-lettered recently, but published 17.99 days ago: under an hour of the window is left.
    dlq.dead_letter(old_job("edge", timedelta(days=18) - timedelta(minutes=30)))

    response = dlq.run({})

    assert (response["matched"], response["moved"], response["refused_outside_window"]) == (1, 1, 2)
    assert (response["outside_window"], response["idempotency_ttl_seconds"], response["left_in_dlq"]) == (2, TTL, 2)
    assert [json.loads(m["Body"])["idempotency_key"] for m in dlq.take_all(dlq.queue_url)] == ["fresh"]
    assert sorted(json.loads(m["Body"])["idempotency_key"] for m in dlq.take_all(dlq.dlq_url)) == ["edge", "old"]
    [group] = response["groups"]
    assert (group["count"], group["outside_window"]) == (3, 2)


def test_a_redriven_letter_is_aged_from_its_earliest_known_moment(dlq):
    # No reasons, a body that is not an envelope: only SQS's SentTimestamp dates it (an hour before NOW):
    # 17 d 23.5 h old at NOW + 17 d 22.5 h, past the 18 d window less its 1 h margin.
    dlq.redriven("not an envelope")

    assert dlq.run({}, now=lambda: NOW + timedelta(days=17, hours=22, minutes=30))["refused_outside_window"] == 1
    assert dlq.run({}, now=lambda: NOW + timedelta(days=16))["moved"] == 1


def test_a_dry_run_reports_what_the_window_would_refuse(dlq):
    dlq.dead_letter(job(key="fresh"))
    dlq.dead_letter(old_job("old", timedelta(days=30)))

    response = dlq.run({"dry_run": True})

    assert (response["matched"], response["refused_outside_window"], response["moved"]) == (1, 1, 0)
    assert dlq.counts(dlq.dlq_url) == (2, 0)


def test_the_explicit_flag_moves_letters_outside_the_window_and_still_reports_them(dlq):
    dlq.dead_letter(job(key="fresh"))
    dlq.dead_letter(old_job("old", timedelta(days=30)))

    response = dlq.run({"allow_outside_idempotency_window": True})

    assert (response["moved"], response["outside_window"], response["refused_outside_window"]) == (2, 1, 0)
    assert dlq.counts(dlq.dlq_url) == (0, 0)


def test_refused_letters_do_not_use_up_max_messages(dlq):
    for i in range(12):
        dlq.dead_letter(old_job(f"old{i}", timedelta(days=30)))
    dlq.dead_letter(job(key="fresh"))

    response = dlq.run({"max_messages": 1})

    assert (response["moved"], response["refused_outside_window"]) == (1, 12)
    assert [json.loads(m["Body"])["idempotency_key"] for m in dlq.take_all(dlq.queue_url)] == ["fresh"]


def test_without_a_known_window_nothing_is_replayed_unless_allowed(dlq):
    """A deployment from before the window was known: no letter can be shown to be inside it."""
    dlq.tiers["critical"] = TierQueues(dlq.queue_url, dlq.dlq_url)
    dlq.dead_letter(job(key="fresh"))

    refused = dlq.run({})
    assert (refused["moved"], refused["refused_outside_window"], refused["idempotency_ttl_seconds"]) == (0, 1, None)
    assert dlq.counts(dlq.dlq_url) == (1, 0)

    assert dlq.run({"allow_outside_idempotency_window": True})["moved"] == 1


def test_inspect_counts_the_letters_outside_the_window_per_group(dlq):
    dlq.dead_letter(job(key="fresh"))
    dlq.dead_letter(old_job("old", timedelta(days=30)))

    response = dlq.run({"action": "inspect"})

    assert (response["matched"], response["outside_window"], response["refused_outside_window"]) == (2, 1, 0)
    assert response["groups"][0]["outside_window"] == 1


# -- size: SendMessageBatch holds at most 1 MiB in all -------------------------------------------


def test_three_400_kb_letters_are_all_replayed_in_batches_sqs_accepts(dlq):
    bodies = [job(key=f"big{i}", blob=chr(ord("a") + i) * 400_000) for i in range(3)]
    for body in bodies:
        dlq.dead_letter(body)
    calls: list[int] = []
    dlq.sqs.meta.events.register(
        "before-parameter-build.sqs.SendMessageBatch", lambda params, **_: calls.append(len(params["Entries"]))
    )

    response = dlq.run({})

    assert (response["matched"], response["moved"], response["failed"], response["left_in_dlq"]) == (3, 3, 0, 0)
    assert calls == [2, 1]  # 2 x 400 KB + attributes fit in 1 MiB; a third would not
    assert sorted(m["Body"] for m in dlq.take_all(dlq.queue_url)) == sorted(bodies)


def test_the_replay_markers_give_way_to_a_body_that_fills_the_message(dlq):
    """A redriven letter (no reasons) whose body and attributes already make 1 MiB."""
    mine = {"trace": {"DataType": "String", "StringValue": "t"}}
    room = SQS_MAX_MESSAGE_BYTES - message_size("", mine)
    body = job(key="full")
    body = body[:-1] + " " * (room - len(body)) + "}"  # JSON whitespace: still the same envelope
    assert message_size(body, mine) == SQS_MAX_MESSAGE_BYTES
    dlq.redriven(body, mine)

    response = dlq.run({})

    assert (response["moved"], response["failed"]) == (1, 0)
    [moved] = dlq.take_all(dlq.queue_url)
    assert moved["Body"] == body and user_attributes(moved) == mine
