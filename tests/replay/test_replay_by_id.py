"""Acting on one letter: ``message_ids`` replays (or discards) exactly the letters named, and the
response's ``outcomes`` says what became of each, a letter not found included."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.replay.test_replay import Wrapper, job, old_job
from tests.support.crash_stories import Crashing, _crash_after_the_effect
from tiered_jobs.contract.names import Replay
from tiered_jobs.contract.replay_events import OUTCOMES
from tiered_jobs.replay import JsonLinesArchive, TierQueues, parse_event, read_archive, run


def keys(messages: list[dict]) -> list[str]:
    return sorted(json.loads(m["Body"])["idempotency_key"] for m in messages)


def test_replay_by_id_moves_exactly_the_named_letters_and_names_the_one_not_found(dlq):
    ids = [dlq.dead_letter(job(key=f"k{i}")) for i in range(12)]  # more than one receive's worth

    response = dlq.run({"message_ids": [ids[3], ids[10], "no-such-letter"]})

    assert (response["matched"], response["moved"], response["failed"]) == (2, 2, 0)
    assert response["outcomes"] == {ids[3]: "moved", ids[10]: "moved", "no-such-letter": "not_found"}
    assert response["stopped_because"] == "dlq_empty"  # it looked at every letter for the missing one
    assert keys(dlq.take_all(dlq.queue_url)) == ["k10", "k3"]
    assert keys(dlq.take_all(dlq.dlq_url)) == sorted(f"k{i}" for i in range(12) if i not in (3, 10))


def test_a_dry_run_by_id_moves_nothing_and_says_what_would(dlq):
    wanted = dlq.dead_letter(job(key="wanted"))
    dlq.dead_letter(job(key="other"))

    response = dlq.run({"message_ids": [wanted], "dry_run": True})

    assert response["outcomes"] == {wanted: "would_move"}
    assert (response["matched"], response["moved"], response["stopped_because"]) == (1, 0, "all_found")
    assert dlq.counts(dlq.queue_url) == (0, 0)
    assert dlq.counts(dlq.dlq_url) == (2, 0)


def test_a_named_letter_outside_the_window_or_left_out_by_another_filter_stays_and_says_why(dlq):
    old = dlq.dead_letter(old_job("old", timedelta(days=30)))
    timeout = dlq.dead_letter(job(key="timeout"), error_type="TimeoutError")
    other = dlq.dead_letter(job(key="other"), error_type="AccountNotFound")

    response = dlq.run({"message_ids": [old, timeout, other], "error_type": "TimeoutError"})

    assert response["outcomes"] == {old: "refused_outside_window", timeout: "moved", other: "not_matched"}
    assert keys(dlq.take_all(dlq.queue_url)) == ["timeout"]
    assert keys(dlq.take_all(dlq.dlq_url)) == ["old", "other"]


def test_a_named_letter_whose_send_failed_is_reported_failed_and_stays(dlq):
    good, bad = dlq.dead_letter(job(key="good")), dlq.dead_letter(job(key="bad"))

    def send_message_batch(QueueUrl, Entries):
        kept = [e for e in Entries if json.loads(e["MessageBody"])["idempotency_key"] != "bad"]
        answer = dlq.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=kept)
        refused = [e["Id"] for e in Entries if e not in kept]
        return {**answer, "Failed": [{"Id": i, "Code": "InternalError", "SenderFault": False} for i in refused]}

    response = dlq.run({"message_ids": [good, bad]}, sqs=Wrapper(dlq.sqs, send_message_batch=send_message_batch))

    assert response["outcomes"] == {good: "moved", bad: "failed"}
    assert keys(dlq.take_all(dlq.dlq_url)) == ["bad"]


def test_discard_and_show_by_id_report_each_letter(dlq, tmp_path):
    doomed, kept = dlq.dead_letter(job(key="doomed")), dlq.dead_letter(job(key="kept"))
    archive = JsonLinesArchive(tmp_path / "discarded.jsonl")

    dry = dlq.run({"action": "discard", "message_ids": [doomed], "dry_run": True})
    shown = dlq.run({"action": "show", "message_ids": [kept, "gone"]})
    done = dlq.run({"action": "discard", "message_ids": [doomed, "gone"]}, archive=archive)

    assert dry["outcomes"] == {doomed: "would_discard"}
    assert shown["outcomes"] == {kept: "found", "gone": "not_found"}
    assert done["outcomes"] == {doomed: "discarded", "gone": "not_found"}
    assert [record["message_id"] for record in read_archive(tmp_path / "discarded.jsonl")] == [doomed]
    assert keys(dlq.take_all(dlq.dlq_url)) == ["kept"]


def test_every_outcome_a_run_reports_is_one_the_contract_names(dlq):
    named = [dlq.dead_letter(job(key=f"k{i}")) for i in range(3)]

    for event in ({"action": "inspect"}, {"dry_run": True}, {}):
        outcomes = dlq.run({**event, "message_ids": [*named, "missing"]})["outcomes"]
        assert set(outcomes) == {*named, "missing"}
        assert set(outcomes.values()) <= set(OUTCOMES)


def test_without_message_ids_there_are_no_outcomes_and_groups_list_every_letter(dlq):
    ids = [dlq.dead_letter(job(key=f"k{i}")) for i in range(4)]

    response = dlq.run({"action": "inspect"})

    assert response["outcomes"] is None
    [group] = response["groups"]
    assert sorted(group["message_ids"]) == sorted(ids)
    assert len(group["sample_message_ids"]) == 3


def test_a_letter_replayed_by_id_keeps_its_key_and_its_effect_happens_once(tier):
    """The crash story of a replay, by id: the job took effect, its message was redriven (no reasons),
    the replay by id dies between send and delete and is run again. Two copies, one effect, and the
    letter not named never moves."""
    tiers = {"critical": TierQueues(tier.queue_url, tier.dlq_url, idempotency_ttl_seconds=18 * 86400)}
    bystander = tier.sqs.send_message(
        QueueUrl=tier.dlq_url, MessageBody=json.dumps({"type": "testjobs.ok", "idempotency_key": "b", "payload": {}})
    )["MessageId"]
    _crash_after_the_effect(tier, "testjobs.effect", {"counter": "acc-id", "amount": 7}, "pay-by-id")
    assert tier.counter("acc-id") == 7
    while tier.sqs.receive_message(QueueUrl=tier.queue_url, VisibilityTimeout=0).get("Messages"):
        pass  # it keeps timing out until the redrive policy moves it
    [group] = [
        g
        for g in run(parse_event({"tier": "critical", "action": "inspect"}), sqs=tier.sqs, tiers=tiers, wait_seconds=0)[
            "groups"
        ]
        if g["job_type"] == "testjobs.effect"
    ]
    [letter] = group["message_ids"]
    by_id = parse_event({"tier": "critical", "message_ids": [letter]})

    with pytest.raises(ConnectionError):
        run(
            by_id,
            tiers=tiers,
            wait_seconds=0,
            sqs=Crashing(tier.sqs, "delete_message_batch", error=ConnectionError("died before the delete")),
        )
    assert run(by_id, sqs=tier.sqs, tiers=tiers, wait_seconds=0)["outcomes"] == {letter: "moved"}

    copies = tier.receive()
    assert [json.loads(m["Body"])["idempotency_key"] for m in copies] == ["pay-by-id", "pay-by-id"]
    assert {m["MessageAttributes"][Replay.COUNT]["StringValue"] for m in copies} == {"1"}
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert tier.counter("acc-id") == 7
    assert [m["MessageId"] for m in tier.dlq_messages()] == [bystander]
