"""Enqueue after commit: jobs leave only when the transaction commits, never on rollback."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from tests.support.stack import received_bodies
from tiered_jobs.publisher import InvalidJobError
from tiered_jobs.publisher.after_commit import AfterCommitBuffer


class FakeTransaction:
    """A database transaction with commit / rollback hooks, like Django's or SQLAlchemy's."""

    def __init__(self):
        self.rows: list[str] = []
        self.committed: list[str] = []
        self.on_commit: list = []
        self.on_rollback: list = []

    @contextmanager
    def atomic(self):
        try:
            yield self
        except BaseException:
            self.rows.clear()
            for hook in self.on_rollback:
                hook()
            raise
        self.committed.extend(self.rows)
        for hook in self.on_commit:
            hook()


def test_jobs_are_sent_after_the_commit(publisher, deployment):
    db = FakeTransaction()
    seen_at_send: list[list[str]] = []

    with AfterCommitBuffer(publisher) as jobs:
        with db.atomic():
            db.rows.append("order-1")
            jobs.add("notifications.order_confirmation", {"order_id": 1}, "order-1")
            assert received_bodies(deployment.queue_urls["transactional"]) == []  # not yet
        seen_at_send.append(list(db.committed))

    assert seen_at_send == [["order-1"]]
    [body] = received_bodies(deployment.queue_urls["transactional"])
    assert (body["type"], body["payload"]) == ("notifications.order_confirmation", {"order_id": 1})
    assert len(jobs) == 0


def test_jobs_are_dropped_on_rollback(publisher, deployment):
    db = FakeTransaction()

    with pytest.raises(RuntimeError, match="card declined"):
        with AfterCommitBuffer(publisher) as jobs:
            with db.atomic():
                jobs.add("payments.capture", {"order_id": 1}, "capture-1")
                raise RuntimeError("card declined")

    assert len(jobs) == 0
    assert all(received_bodies(url) == [] for url in deployment.queue_urls.values())


def test_hooks_flush_on_commit_and_discard_on_rollback(publisher, deployment):
    """The shape of the Django / SQLAlchemy recipes: the buffer's methods as the transaction's hooks."""
    committed, rolled_back = FakeTransaction(), FakeTransaction()
    for db in (committed, rolled_back):
        buffer = AfterCommitBuffer(publisher)
        db.on_commit.append(buffer.flush)
        db.on_rollback.append(buffer.discard)
        db.buffer = buffer

    with committed.atomic():
        committed.buffer.add("analytics.page_view", {"n": 1}, "view-1")
    with pytest.raises(ValueError):
        with rolled_back.atomic():
            rolled_back.buffer.add("analytics.page_view", {"n": 2}, "view-2")
            raise ValueError("constraint violated")

    assert [b["idempotency_key"] for b in received_bodies(deployment.queue_urls["bulk"])] == ["view-1"]
    assert len(committed.buffer) == len(rolled_back.buffer) == 0


def test_a_bad_job_fails_inside_the_transaction_so_it_can_roll_back(publisher):
    db = FakeTransaction()
    buffer = AfterCommitBuffer(publisher)

    with pytest.raises(InvalidJobError, match="no route for job type 'unrouted.job'"):
        with db.atomic():
            db.rows.append("order-1")
            buffer.add("unrouted.job", {}, "k1")

    assert db.committed == [] and len(buffer) == 0


def test_a_tenant_is_held_as_the_jobs_tenant(publisher):
    buffer = AfterCommitBuffer(publisher)
    job = buffer.add("demo.hello", {}, "t1", tenant="acme")
    assert (job.tenant, job.at) == ("acme", None)


def test_flush_and_discard_report_what_they_did(publisher):
    buffer = AfterCommitBuffer(publisher)
    buffer.add("demo.hello", {}, "h1")
    buffer.add("demo.hello", {}, "h2")
    assert buffer.discard() == 2
    assert buffer.flush() == []

    buffer.add("demo.hello", {}, "h3")
    assert [r.job.idempotency_key for r in buffer.flush()] == ["h3"]
    assert buffer.flush() == []  # a second flush never sends twice
