"""One composed run: the jobs, the features and the faults together, on an embedded AWS.

N payments jobs over many account balances, each published at least twice (some three times, the
copies from two threads at once), consumed through the local event-source-mapping runtime on
moto's server by the real consumer, with every feature on at once:

* the job type is **rate-limited** (a token bucket in DynamoDB) and its limiter's table throttles;
* some jobs are **slow**, so batches run out of the invocation's **time budget** and defer the rest;
* some bodies are **close to 1 MiB** (the publisher's limit), held, deferred and dead-lettered whole;
* some jobs belong to a **tenant** (the message's group), some are **delayed**;
* a **periodic schedule** fires at a few scheduled times, each fire delivered twice;
* while jobs still flow, a **batch replay** and a **native replay** move the DLQ back;
* an operator **pauses the tier** for a few seconds while jobs are still published (its event
  source mapping in moto disabled by ``tiered_jobs.replay.pause``, as ``tiered-jobs pause`` does;
  the pollers read it before every receive), then resumes it: nothing is received meanwhile;
* a second job type with **its own retry policy** (fewer attempts, its own backoff, unexpected
  errors permanent) never succeeds, so each of its letters is predicted: reason, attempts and the
  **failing frame** its traceback names (``bench/invariant/jobs/capped.py``);
* a third job type's **module fails to import** for the run's first seconds (``fragile.py``), then
  loads: its jobs retry, some are dead-lettered with the import's reason and replayed, each is
  applied once;
* every letter the consumer writes for a job that raised must carry a **traceback** that parses;
* some jobs are **unique while pending** (``unique_for=``): a copy published while the first is
  pending is refused as already queued (nothing sent), each is applied once, and its lock is
  released when it finishes, whatever crash, retry, letter or replay it went through;
* some jobs arrive past their **deadline** (the envelope's ``expires_at``), and an operator
  **cancels** some before they are published (their cancel markers in the idempotency table): every
  copy of each is archived unrun in the discard archive with its reason, never applied, never a letter;
* some come from a **newer producer** (envelope ``version`` 2): held by the run's consumer (1 s at a
  time) until 3 s old, then dead-lettered ``envelope_too_new``, never as permanent;
* some plain payments are **batch members** (``publisher.batch``, five to a batch; their other copies
  published plain), each batch with one callback (``on_complete``, or ``on_success`` in turn), itself a
  payment whose key is the batch's id; invocations crash between a member's completion and its count:
  each batch must end with every member counted once and its callback applied once (a batch still
  waiting after the run's last replay, its member's last copy a letter SQS's redrive or a last attempt
  made after it, has the DLQ replayed once more, as an operator would);

and faults injected through wrapped clients (:class:`~bench.invariant.plan.FaultPlan`): crashes
after the side effect and before the ack, transient job errors, idempotency-table throttling,
copies SQS refuses, poison jobs, and at the end a replay that crashes between send and delete,
run again. :mod:`~bench.invariant.checker` reads the outcome from outside.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from bench.runtime import depth, drain
from tiered_jobs.contract.large_payloads import Offload
from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES, DeadLetter
from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES

from .breaker_events import BreakerRecord, check_ended, create_alarms, deliver_changes
from .checker import RUN_TRACE_HEADER, Observed, Outcome, check, marker_key_of
from .faults import conflict_batch_counts, lose_answers_of
from .jobs import CAPPED_TYPE, FRAGILE_TYPE, STEPPED_TYPE
from .jobs import PACKAGE as INVARIANT_JOBS
from .plan import FaultPlan, SimulatedCrash, Wrapped, client_error
from .receives import Receives
from .taps import FateTap, QueueTap

TIER = "critical"
JOB_TYPE = "payments.update_balance"
#: Longer than any run: a unique job's lock ends when it finishes, never by its window here.
UNIQUE_WINDOW_SECONDS = 3600
#: A newer producer's job is held 1 s at a time, and dead-lettered once 3 s old (a day and 900 s deployed).
TOO_NEW_HOLD_SECONDS, TOO_NEW_MAX_AGE_SECONDS = 1, 3
SCHEDULE = "interest"
#: A body past SQS's 1 MiB (``large_payloads``): the memo of the few jobs the publisher stores in S3.
LARGE_BODY_BYTES = 1_200_000


def run_shards(jobs: int, shards: int, account_count: int = 100, log=print, processes: int = 1) -> Outcome:
    """``jobs`` in ``shards`` independent runs (own tables, own seed), outcomes added up.

    Why shards: moto's TransactWriteItems deep-copies every table it touches on each call, so one
    table of 10 000 balances and markers makes the run quadratic (a single 10 000-job run was
    killed for memory at 24 GB after 4 600 jobs). Each shard proves the same invariant on its own
    tables; the sum is the full-size figure. ``processes`` > 1 runs that many shards at once, each
    in a process of its own with its own embedded AWS (moto's server is CPU-bound Python: one
    process uses one core).
    """
    seeds = [FaultPlan.seed + shard for shard in range(shards)]
    if processes > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn")) as pool:
            total = _added(pool.map(run_shard, seeds, [jobs // shards] * shards, [account_count] * shards), shards, log)
    else:
        each = jobs // shards
        total = _added((run(each, account_count, plan=FaultPlan(seed=seed), log=log) for seed in seeds), shards, log)
    return total


def _added(outcomes: Iterable[Outcome], shards: int, log: Any) -> Outcome:
    """The shards' outcomes added up, each logged as soon as it is in (a long run's figures so far)."""
    total: Outcome | None = None
    for shard, outcome in enumerate(outcomes):
        log(f"shard {shard + 1}/{shards}: {json.dumps(outcome.as_dict())}")
        total = outcome if total is None else total.plus(outcome)
    assert total is not None
    return total


def run_shard(seed: int, jobs: int, account_count: int) -> Outcome:
    """One shard in a process of its own (``run_shards(processes=...)``), quiet but for its outcome."""
    import logging

    for name in ("emulator.esm", "werkzeug", "tiered_jobs.replay.service"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return run(jobs=jobs, account_count=account_count, plan=FaultPlan(seed=seed), log=lambda *_: None)


def run(
    jobs: int = 1000,
    account_count: int = 100,
    concurrency: int = 4,
    plan: FaultPlan | None = None,
    drain_timeout: float = 600.0,
    log=print,
) -> Outcome:
    from emulator.server import EmbeddedAws, client_environment

    plan = plan or FaultPlan()
    started = time.monotonic()
    with EmbeddedAws() as endpoint, client_environment(endpoint):
        return _Run(jobs, account_count, concurrency, plan, log).go(drain_timeout, started)


#: The tier queue's visibility timeout (see ``_Run.__init__``): a batch running longer comes back.
VISIBILITY_TIMEOUT_SECONDS = 10


class _Run:
    def __init__(self, jobs: int, account_count: int, concurrency: int, plan: FaultPlan, log: Any):
        from tests.support.tier import create_rate_limit_table, create_tier

        self.plan, self.log, self.concurrency = plan, log, concurrency
        # Invocations of 4 s: batches of ten on an embedded AWS that four consumers share take 1-3 s, so a
        # few slow jobs run them out of the time budget (its margin: 10 %, 400 ms).
        self.max_attempts, self.remaining_ms = 5, 4000
        # A fresh name per run: moto's server shares its state with everything else in this process.
        name = self.name = f"invariant-{plan.seed}-{time.monotonic_ns() % 10**6}"
        # A visibility timeout above the invocation's longest time (no batch comes back while it still runs):
        # nothing stops a job at the 4 s budget here, as Lambda's timeout would, so a slow job (3.7 s) that
        # starts just inside the budget ends near 8 s. At 6 s such a batch came back while still running,
        # spending receives until SQS's redrive moved a job without its reasons.
        self.tier = create_tier(
            name, visibility_timeout=VISIBILITY_TIMEOUT_SECONDS, max_receive_count=self.max_attempts
        )
        self.bucket_table = create_rate_limit_table(self.tier.dynamodb, f"{name}-buckets")
        self.catalogue = self._catalogue(jobs, account_count)
        self.applications: Counter[str] = Counter()
        self.replayed: Counter[str] = Counter()
        #: Every receive of the mapping by (message id, receive count), and what became of it.
        self.receives = Receives(VISIBILITY_TIMEOUT_SECONDS)
        #: The faults injected through botocore's events on the run's clients, removed when the run ends.
        self.faults = ExitStack()
        self._lock = threading.Lock()
        #: The circuit breaker's changes delivered mid-run, and what the pollers did meanwhile.
        self.breaker = BreakerRecord()
        #: The operator's pause: when it landed (``None``: running), and what it counted (``Outcome``'s fields).
        self._paused_at: float | None = None
        self.pause = {"pauses": 0, "paused_seconds": 0.0, "published_while_paused": 0, "received_while_paused": 0}
        self._polling = threading.local()  # when this poller last read the mapping's state
        #: The unique jobs' locks (created with the run's tables) and the copies refused as already queued.
        self.unique_table = ""
        self.unique_refused = 0
        #: The tier's large_payloads setting: bodies past the publisher's limit go to this bucket.
        self.offload = Offload(f"{self.name}-large", MAX_JOB_MESSAGE_BYTES)
        #: The batches table (created with the run's tables) and the members published through their batches.
        self.batch_table = ""
        self.batch_members_published = 0

    # -- the jobs --------------------------------------------------------------------------

    def _catalogue(self, jobs: int, account_count: int) -> dict[str, dict[str, Any]]:
        from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES

        from .jobs.capped import MAX_ATTEMPTS as CAPPED_ATTEMPTS

        rng, plan = self.plan.random(), self.plan
        catalogue: dict[str, dict[str, Any]] = {}
        for i in range(jobs):
            kind = rng.random()
            job_type = (
                CAPPED_TYPE
                if kind < plan.capped_fraction
                else FRAGILE_TYPE
                if kind < plan.capped_fraction + plan.fragile_fraction
                else STEPPED_TYPE
                if kind < plan.capped_fraction + plan.fragile_fraction + plan.stepped_fraction
                else JOB_TYPE
            )
            poison = job_type == JOB_TYPE and rng.random() < plan.poison_fraction
            job: dict[str, Any] = {
                "type": job_type,
                "account_id": f"acc-{i % account_count:04d}",
                "amount": 0 if poison else rng.randint(1, 100),
                "poison": poison,
            }
            if job_type == JOB_TYPE and not poison:
                ends = rng.random()
                if ends < plan.expired_fraction:
                    job["ends"] = "expired"
                elif ends < plan.expired_fraction + plan.cancelled_fraction:
                    job["ends"] = "cancelled"
                elif ends < plan.expired_fraction + plan.cancelled_fraction + plan.unique_fraction:
                    job["unique"] = True
                elif ends < plan.expired_fraction + plan.cancelled_fraction + plan.unique_fraction + (
                    plan.too_new_fraction
                ):
                    # Held past its bound, then dead-lettered unrun (each replay is held and dead-lettered again).
                    job["too_new"] = True
                    job["dead_letter"], job["raises"] = DeadLetter.REASON_ENVELOPE_TOO_NEW, "EnvelopeTooNew"
                    job["attempts"] = (0, None)  # nothing ran: a crash of its batch may add receives
            if poison:  # refused by its payload's schema on its first attempt (a hold or deferral is not one)
                job["dead_letter"], job["raises"] = DeadLetter.REASON_PERMANENT, "PayloadValidationError"
                job["attempts"] = (1, 1)
            if job_type == CAPPED_TYPE:  # its policy decides its letter: see bench/invariant/jobs/capped.py
                job["refuse"] = "retry" if rng.random() < 0.5 else "bug"
                job["max_attempts"] = CAPPED_ATTEMPTS  # its policy's: an injected fault on the last one letters it
                # Its letter's attempts are exactly its policy's; one past them only where the checker finds the
                # receives before it that lost the consumer's decision (crashed, overran, acknowledged by a dying
                # mapping): see checker._as_its_policy_says.
                if job["refuse"] == "retry":  # its own last attempt, never the tier's
                    job["dead_letter"] = DeadLetter.REASON_RETRIES_EXHAUSTED
                    job["attempts"] = (CAPPED_ATTEMPTS, CAPPED_ATTEMPTS)
                    job["raises"] = "TransientError: capped: refused on purpose"
                else:  # a KeyError its policy makes permanent: not retried, dead-lettered on its first attempt
                    job["dead_letter"] = DeadLetter.REASON_PERMANENT
                    job["attempts"] = (1, 1)
                    job["raises"] = "KeyError: 'missing_field'"
            if rng.random() < plan.big_body_fraction:  # a memo that fills the message to the publisher's limit
                job["memo_bytes"] = MAX_JOB_MESSAGE_BYTES - 300
            if rng.random() < plan.tenant_fraction:
                job["tenant"] = f"tenant-{rng.randint(1, 7)}"
            if rng.random() < plan.delayed_fraction:
                job["delay"] = rng.randint(1, 3)
            catalogue[f"pay-{i:06d}"] = job
        # A few plain payments past SQS's 1 MiB, chosen by place, not by a draw (the other jobs keep theirs): the
        # publisher stores each copy in S3 (large_payloads); retries, copies, letters and replays carry its pointer.
        plain = [
            key
            for key, job in catalogue.items()
            if job["type"] == JOB_TYPE
            and not job["poison"]
            and set(job) <= {"type", "account_id", "amount", "poison", "tenant", "delay"}
        ]
        for key in plain[:: max(1, len(plain) // max(1, plan.large_body_jobs))][: plan.large_body_jobs]:
            catalogue[key]["memo_bytes"] = LARGE_BODY_BYTES
        self._batches(catalogue)
        for fire in range(plan.schedule_fires):  # keys as Scheduler's fires carry them
            from tiered_jobs.contract.schedules import periodic_idempotency_key

            scheduled_time = f"2026-12-0{fire + 1}T00:00:00Z"
            catalogue[periodic_idempotency_key(SCHEDULE, scheduled_time)] = {
                "type": JOB_TYPE,
                "account_id": "acc-interest",
                "amount": 7,
                "poison": False,
                "fires": 2,
                "scheduled_time": scheduled_time,
            }
        return catalogue

    def _batches(self, catalogue: dict[str, dict[str, Any]]) -> None:
        """Group some plain payments into batches; each batch's callback is a payment of the catalogue too."""
        from tiered_jobs.contract.batches import ON_COMPLETE, ON_SUCCESS

        rng, plan = self.plan.random(), self.plan
        plain = [
            key
            for key, job in catalogue.items()
            if job["type"] == JOB_TYPE and set(job) <= {"type", "account_id", "amount", "poison", "tenant", "delay"}
        ]
        members = [key for key in plain if not catalogue[key]["poison"] and rng.random() < plan.batch_fraction]
        for n, start in enumerate(range(0, len(members), plan.batch_size)):
            batch_id = f"batch-{plan.seed}-{n:03d}"
            group = members[start : start + plan.batch_size]
            for key in group:
                catalogue[key]["batch"] = batch_id
            catalogue[batch_id] = {
                "type": JOB_TYPE,
                "account_id": "acc-batches",
                "amount": n + 1,
                "poison": False,
                "callback": ON_COMPLETE if n % 2 == 0 else ON_SUCCESS,
                "members": group,
            }

    def payload(self, key: str) -> dict[str, Any]:
        job = self.catalogue[key]
        payload: dict[str, Any] = {"account_id": job["account_id"], "amount": job["amount"]}
        if "refuse" in job:
            payload["refuse"] = job["refuse"]
        if "memo_bytes" in job:
            payload["memo"] = "m" * (job["memo_bytes"] - len(json.dumps(payload)) - 200)
        return payload

    # -- the seams: wrapped clients ----------------------------------------------------------

    def dynamodb_before(self, op: str, kwargs: dict) -> None:
        plan, table = self.plan, kwargs.get("TableName")
        if op == "transact_write_items" and _writes(kwargs, self.batch_table):  # a batch member's count
            if plan.roll("crash_before_batch_count", plan.crash_before_batch_count):
                raise SimulatedCrash("crash after a batch member's completion, before its count")
            return
        if (
            op == "update_item"
            and table == self.tier.idempotency_table
            and plan.roll("crash_before_idempotency_completes", plan.crash_before_idempotency_completes)
        ):
            raise SimulatedCrash("crash after the side effect, before the idempotency record completes")
        if (
            op == "put_item"
            and table == self.tier.idempotency_table
            and plan.roll("idempotency_throttle", plan.idempotency_throttle)
        ):
            raise client_error("ProvisionedThroughputExceededException", 400)
        if (
            op in ("get_item", "update_item")
            and table == self.bucket_table
            and plan.roll("limiter_throttle", plan.limiter_throttle)
        ):
            raise client_error("ProvisionedThroughputExceededException", 400)
        if op == "transact_write_items":
            if plan.roll("transient_job_error", plan.transient_job_error):
                raise client_error("ServiceUnavailable", 503)
            if plan.roll("slow_job", plan.slow_job):
                time.sleep(plan.slow_job_seconds)
            if plan.drop_marker_condition:
                kwargs["TransactItems"][1]["Put"].pop("ConditionExpression", None)

    def client(self, service: str) -> Any:
        """A client of the run's consumers, publisher or replays: its applied writes may lose their answers."""
        import boto3

        with self._lock:
            return lose_answers_of(boto3.client(service), self.plan, self.faults)

    def count_application(self, response: Any = None, request_dict: Any = None, **_: Any) -> None:
        """Each balance transaction DynamoDB applied, read off the wire (``needs-retry``, which sees every
        attempt): one whose answer was lost counts too, and so would its retry, were it applied again."""
        if response is None or response[0] is None or response[0].status_code >= 300:
            return
        items = json.loads((request_dict or {}).get("body") or b"{}").get("TransactItems", [])
        put = items[1].get("Put", {}) if len(items) == 2 else {}
        if put.get("TableName") != self.tier.payments_table:
            return
        with self._lock:
            self.applications[marker_key_of(put["Item"]["account_id"]["S"])] += 1

    def consumer_sqs_before(self, op: str, kwargs: dict) -> Any:
        """SQS refuses some of the copies the consumer sends back (each entry on its own, as a batch does)."""
        if op != "send_message_batch" or kwargs.get("QueueUrl") != self.tier.queue_url:
            return None
        refused = [e for e in kwargs["Entries"] if self.plan.roll("copy_refused", self.plan.copy_refused)]
        if not refused:
            return None
        kept = [e for e in kwargs["Entries"] if e not in refused]
        answer = self.tier.sqs.send_message_batch(QueueUrl=kwargs["QueueUrl"], Entries=kept) if kept else {}
        return {
            "Successful": answer.get("Successful", []),
            "Failed": [
                {"Id": e["Id"], "SenderFault": False, "Code": "InternalError", "Message": "injected"} for e in refused
            ],
        }

    def esm_sqs_before(self, op: str, kwargs: dict) -> None:
        if op == "delete_message_batch" and self.plan.roll("crash_before_ack", self.plan.crash_before_ack):
            # The records of this ack come back unsettled: their receives' decisions are lost.
            self.receives.ack_crashed([e["ReceiptHandle"] for e in kwargs["Entries"]])
            raise ConnectionError("crash before the ack (injected)")

    def esm_sqs_after(self, op: str, kwargs: dict, result: Any) -> None:
        if op == "receive_message":
            messages = result.get("Messages", [])
            self.receives.received(messages)
            with self._lock:
                # A receive after a read of the mapping's state that found it paused must not happen; one
                # after a read just before the pause landed may, as on Lambda (a batch already on its way).
                paused_at = self._paused_at
                if paused_at is not None and getattr(self._polling, "read_at", 0.0) > paused_at:
                    self.pause["received_while_paused"] += len(messages)
            poller = int(threading.current_thread().name.rsplit("-", 1)[-1])  # the mapping's "esm-<name>-<index>"
            self.breaker.receive(len(messages), getattr(self._polling, "read_at", 0.0), poller)

    def remaining_for(self, event: dict) -> int:
        """An invocation's remaining time at its start: the whole timeout, or for a late one (``late_invocation``)
        less than the time budget's margin (a tenth of it), so that its records are deferred."""
        if self.plan.roll("late_invocation", self.plan.late_invocation):
            return self.remaining_ms // 10 - 1
        return self.remaining_ms

    def on_invoke(self, event: dict, invocation: Any) -> None:
        """Settle each record's receive: the injected crash, any other error (unexplained), or an overrun.

        A record held past the queue's visibility timeout, from its receive to the invocation's end (a batch
        that ran long, or one that waited for a worker first), came back while it was still held: on Lambda a
        batch invoked late is received again alike (and the function's timeout, below the visibility timeout,
        stops one that runs long). It is recorded as an overrun, counted on its own and bounded."""
        from emulator.esm import failed_message_ids

        error, crashed, returned = None, False, frozenset[str]()
        if invocation.error is not None:
            error = f"{invocation.error.error_type}: {invocation.error.message}"
            crashed = invocation.error.error_type == SimulatedCrash.__name__
        elif (kept := failed_message_ids(invocation.response, [r["messageId"] for r in event["Records"]])) is None:
            error = f"invalid partial batch response: {invocation.response!r:.200}"
        else:
            returned = frozenset(kept)
        self.receives.invoked(event, error, crashed, returned)

    # -- the run ---------------------------------------------------------------------------

    def go(self, drain_timeout: float, started: float) -> Outcome:
        import boto3

        from bench.runtime import consumer_runtime
        from tiered_jobs.contract.rate_limits import RateLimit, RateLimits
        from tiered_jobs.runtime.backoff import RetryPolicy

        from .jobs import BREAKAGE, break_fragile_for

        plan, tier = self.plan, self.tier
        break_fragile_for(plan.broken_module_seconds)
        # The discard archive, where the consumers keep the jobs that end unrun (expired, cancelled).
        from tiered_jobs.contract.names import discard_archive_prefix
        from tiered_jobs.replay.archive import S3Archive

        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=f"{self.name}-archive")
        s3.create_bucket(Bucket=self.offload.bucket)  # the stage's bucket of large bodies (large_payloads)
        self.unique_table = _create_unique_table(tier.dynamodb, f"{self.name}-unique")
        from tests.support.batches import create_batch_table

        self.batch_table = create_batch_table(tier.dynamodb, f"{self.name}-batches")
        archive = S3Archive(f"{self.name}-archive", discard_archive_prefix("bench", TIER), s3)

        # (moto's DynamoDB is not thread-safe; the embedded server serializes its requests: moto_patches.)
        def environment_clients() -> dict[str, Any]:
            dynamodb = self.client("dynamodb")
            conflict_batch_counts(dynamodb, plan, lambda: self.batch_table, self.faults)
            dynamodb.meta.events.register("needs-retry.dynamodb.TransactWriteItems", self.count_application)
            return {
                "sqs": Wrapped(self.client("sqs"), self.consumer_sqs_before),
                "dynamodb": Wrapped(dynamodb, self.dynamodb_before),
                "s3": self.client("s3"),
            }

        control = None
        if plan.pause_after_seconds is not None or plan.breaker_after_seconds is not None:
            # A real mapping to pause and to open the breaker of, in moto's Lambda.
            from bench.runtime import REGION

            from .mapping import create_mapping

            self.mapping_uuid, read = create_mapping(self.name, tier.queue_arn, REGION, self.concurrency)
            if plan.breaker_after_seconds is not None:
                create_alarms(boto3.client("cloudwatch"), TIER)

            def control() -> Any:  # the poller reads the mapping's state before each receive: note when
                state = read()
                self._polling.read_at = time.monotonic()
                return replace(state, enabled=True) if plan.ignore_pause else state

        limits = None
        if plan.rate_limit_per_second is not None:
            limits = RateLimits(
                None,
                {
                    "payments.*": RateLimit(plan.rate_limit_per_second, plan.rate_limit_burst),
                    STEPPED_TYPE: RateLimit(plan.stepped_rate_limit_per_second, 1),
                },
                max_wait_seconds=plan.rate_limit_max_wait_seconds,
            )
        runtime = consumer_runtime(
            tier,
            clients=environment_clients,
            esm_sqs=Wrapped(boto3.client("sqs"), self.esm_sqs_before, self.esm_sqs_after),
            concurrency=self.concurrency,
            remaining_ms=self.remaining_ms,
            retry=RetryPolicy(max_attempts=self.max_attempts, schedule=(1, 1, 2, 2), jitter=0.2),
            rate_limits=limits,
            rate_limit_table=self.bucket_table if limits else None,
            on_invoke=self.on_invoke,
            job_packages=("functions.jobs", INVARIANT_JOBS),
            control=control,
            archive=lambda: archive,
            unique_table=self.unique_table,
            too_new=(TOO_NEW_HOLD_SECONDS, TOO_NEW_MAX_AGE_SECONDS),
            large_payloads=self.offload,
            batch_table=self.batch_table,
            remaining_for=self.remaining_for,
        )
        with QueueTap(_name(tier.dlq_url), _name(tier.queue_url)) as queues, FateTap() as fates:
            runtime.start()
            try:
                published = self._publish_with_replays()
                self.log(f"published {published} messages for {len(self.catalogue)} jobs; draining")
                drain(tier, drain_timeout)
                self.log(f"first pass drained; replaying {depth(tier, tier.dlq_url)} dead letters")
                self._replay_with_crash()
                drain(tier, drain_timeout)
                if self._batches_waiting():  # a member's copy SQS's redrive moved after that replay: replay it
                    self.log("a batch waits on a member's letter; replaying the dead letters again")
                    self.plan.injected["batch_member_redriven_after_the_last_replay"] += 1
                    self._replay("batch")
                    drain(tier, drain_timeout)
            finally:
                runtime.stop(timeout=60)
                self.faults.close()
                if BREAKAGE.failed_imports:
                    plan.injected["job_module_import_failure"] += BREAKAGE.failed_imports
            if plan.breaker_after_seconds is not None:
                from bench.runtime import REGION

                from .mapping import lambda_client

                check_ended(
                    self.breaker,
                    uuid=self.mapping_uuid,
                    lambda_client=lambda_client(REGION),
                    concurrency=self.concurrency,
                )
            offloaded = _offloaded(s3, self.offload.bucket)
            plan.injected["offloaded_bodies"] += len(offloaded)
            seen = Observed(
                applications=self.applications,
                items=_scan(tier.dynamodb, tier.payments_table),
                letters=_read_all(tier.sqs, tier.dlq_url),
                dlq_arrivals=queues.of(_name(tier.dlq_url)),
                queue_arrivals=queues.of(_name(tier.queue_url)),
                receives=list(self.receives.all),
                max_receive_count=self.max_attempts,
                unexplained_errors=self.receives.unexplained_errors(runtime.stats.snapshot()["invocation_errors"]),
                breaker=self.breaker,
                outcomes=fates.outcomes,
                replayed=self.replayed,
                pause=dict(self.pause),
                archived=_archived(s3, archive.bucket),
                offloaded=offloaded,
                unique_refused=self.unique_refused,
                unique_locks=_scan(tier.dynamodb, self.unique_table),
                batch_items=_scan(tier.dynamodb, self.batch_table),
            )
        return check(self.catalogue, seen, dict(plan.injected), published, time.monotonic() - started)

    def _publish_with_replays(self) -> int:
        """Two threads publish in waves that keep the queue shallow; a third replays meanwhile."""
        import boto3

        from tiered_jobs.contract import envelope
        from tiered_jobs.contract.routing import Routes
        from tiered_jobs.contract.schedules import SCHEDULED_TIME, periodic_input, substitute
        from tiered_jobs.contract.times import iso_text
        from tiered_jobs.publisher import Job, Publisher

        tier, rng, catalogue = self.tier, self.plan.random(), self.catalogue
        jobs = [key for key, job in catalogue.items() if "fires" not in job and "callback" not in job]
        copies = [key for key in jobs for _ in range(3 if rng.random() < self.plan.three_copies_fraction else 2)]
        rng.shuffle(copies)
        routes = Routes({"payments.*": TIER, "capped.*": TIER, "fragile.*": TIER, "stepped.*": TIER})
        publisher = Publisher(
            {TIER: tier.queue_url},
            routes,
            sqs=self.client("sqs"),
            dynamodb=self.client("dynamodb"),
            unique_table=self.unique_table,
            batch_table=self.batch_table,
            large_payloads={TIER: self.offload},
            s3=self.client("s3"),
            trace_context=lambda: RUN_TRACE_HEADER,  # every job it publishes carries the run's trace on
        )
        self._cancel_before_publishing()
        self._open_batches(publisher)
        # A publisher whose clock is behind: its jobs' deadline has passed when they arrive (ours refuses it).
        passed = iso_text(datetime.now(timezone.utc) - timedelta(minutes=10))
        # A wave kept for the operator's pause: published while the tier is paused.
        while_paused, copies = (copies[:50], copies[50:]) if self.plan.pause_after_seconds is not None else ([], copies)
        halves = [copies[0::2], copies[1::2]]
        publishing = threading.Event()
        publishing.set()

        def publish(part: list[str], *, waves: bool = True) -> None:
            for start in range(0, len(part), 50):
                while waves and depth(tier) > 300:
                    time.sleep(1.0)  # GetQueueAttributes walks every message on moto: ask seldom
                chunk = part[start : start + 50]
                results = publisher.publish_batch(
                    [
                        Job(
                            catalogue[k]["type"],
                            self.payload(k),
                            k,
                            tenant=catalogue[k].get("tenant"),
                            delay=catalogue[k].get("delay"),
                            unique_for=UNIQUE_WINDOW_SECONDS if catalogue[k].get("unique") else None,
                        )
                        for k in chunk
                        if not catalogue[k]["poison"]
                        and catalogue[k].get("ends") != "expired"
                        and not catalogue[k].get("too_new")
                    ]
                )
                with self._lock:  # a unique job's copy while the first is pending: nothing was sent
                    self.unique_refused += sum(1 for result in results if result.already_queued)
                # The publisher refuses a poison payload (its schema); a publisher in another language
                # that skips the schema still gets it in, and the consumer must dead-letter it.
                for k in chunk:
                    if catalogue[k]["poison"] or catalogue[k].get("ends") == "expired" or catalogue[k].get("too_new"):
                        tenant = catalogue[k].get("tenant")
                        deadline = passed if catalogue[k].get("ends") == "expired" else None
                        body = envelope.build(JOB_TYPE, self.payload(k), k, tenant=tenant, expires_at=deadline)
                        text = body.to_json()
                        if catalogue[k].get("too_new"):  # a newer producer's: version 2
                            text = json.dumps({**body.to_dict(), "version": 2})
                        tier.sqs.send_message(
                            QueueUrl=tier.queue_url,
                            MessageBody=text,
                            **({"MessageGroupId": tenant} if tenant else {}),
                        )

        def fire_schedule() -> None:  # each fire as Scheduler sends it, twice (at-least-once delivery)
            template = periodic_input(SCHEDULE, JOB_TYPE, {"account_id": "acc-interest", "amount": 7})
            for key, job in catalogue.items():
                if "fires" in job:
                    body = substitute(template, scheduled_time=job["scheduled_time"])
                    assert SCHEDULED_TIME not in body and json.loads(body)["idempotency_key"] == key
                    for _ in range(job["fires"]):
                        tier.sqs.send_message(QueueUrl=tier.queue_url, MessageBody=body)

        def replay_meanwhile() -> None:
            if not self.plan.mid_run_replays:
                return
            for mode in ("batch", "native"):
                while publishing.is_set() and depth(tier, tier.dlq_url) == 0:
                    time.sleep(1.0)
                if depth(tier, tier.dlq_url):
                    self._replay(mode)

        def pause_meanwhile() -> None:  # an operator pauses the tier, jobs are published, the operator resumes
            from bench.runtime import REGION
            from tiered_jobs.replay.pause import pause, resume

            from .mapping import lambda_client

            assert self.plan.pause_after_seconds is not None
            time.sleep(self.plan.pause_after_seconds)
            lam = lambda_client(REGION)
            paused = pause(lam, TIER, self.mapping_uuid, by="operator (invariant run)")
            assert paused.paused, paused
            started = time.monotonic()
            with self._lock:
                self._paused_at = started
            publish(while_paused, waves=False)
            time.sleep(max(0.0, self.plan.pause_seconds - (time.monotonic() - started)))
            with self._lock:
                self._paused_at = None
            resume(lam, TIER, self.mapping_uuid)
            self.pause["pauses"] += 1
            self.pause["paused_seconds"] += round(time.monotonic() - started, 1)
            self.pause["published_while_paused"] += len(while_paused)
            resumed.set()

        def breaker_meanwhile() -> None:  # the breaker opens, probes and closes, its events delivered at least once
            from bench.runtime import REGION

            from .mapping import lambda_client

            assert self.plan.breaker_after_seconds is not None
            resumed.wait()
            time.sleep(self.plan.breaker_after_seconds)
            deliver_changes(
                self.breaker,
                self.plan,
                tier=TIER,
                uuid=self.mapping_uuid,
                lambda_client=lambda_client(REGION),
                cloudwatch=boto3.client("cloudwatch"),
            )

        resumed = threading.Event()
        if self.plan.pause_after_seconds is None:
            resumed.set()
        threads = [threading.Thread(target=publish, args=(half,)) for half in halves]
        threads.append(threading.Thread(target=fire_schedule))
        if self.plan.pause_after_seconds is not None:
            threads.append(threading.Thread(target=pause_meanwhile))
        if self.plan.breaker_after_seconds is not None:
            threads.append(threading.Thread(target=breaker_meanwhile))
        replays = threading.Thread(target=replay_meanwhile)
        for thread in [*threads, replays]:
            thread.start()
        for thread in threads:
            thread.join()
        publishing.clear()
        replays.join()
        fires = sum(job.get("fires", 0) for job in catalogue.values())
        return len(copies) - self.unique_refused + fires + self.batch_members_published

    def _batches_waiting(self) -> bool:
        """Has a batch not sent its callback? (Its member's last copy is a letter: an operator replays the DLQ.)"""
        from tiered_jobs.contract import batches

        fired = {
            item[batches.KEY]["S"]: set(item.get("fired", {}).get("SS", []))
            for item in _scan(self.tier.dynamodb, self.batch_table)
            if item[batches.MEMBER]["S"] == batches.HEAD
        }
        return any(
            job["callback"] not in fired.get(key, set()) for key, job in self.catalogue.items() if "callback" in job
        )

    def _open_batches(self, publisher: Any) -> None:
        """Each batch: its members published through it (one more copy each), its callback given as a payment."""
        from tiered_jobs.publisher import Job

        for batch_id, callback in self.catalogue.items():
            if "callback" not in callback:
                continue
            spec = (JOB_TYPE, {"account_id": callback["account_id"], "amount": callback["amount"]})
            with publisher.batch(**{callback["callback"]: spec}, batch_id=batch_id) as batch:
                members = callback["members"]
                jobs = self.catalogue
                batch.publish_batch(
                    [
                        Job(JOB_TYPE, self.payload(k), k, tenant=jobs[k].get("tenant"), delay=jobs[k].get("delay"))
                        for k in members
                    ]
                )
            self.batch_members_published += len(callback["members"])

    def _cancel_before_publishing(self) -> None:
        """An operator cancels some jobs before they are published: their markers wait in the idempotency table."""
        from tiered_jobs.runtime.config import TierConfig
        from tiered_jobs.stage.cancelling import MarkTarget, mark_cancelled

        marks = MarkTarget(self.tier.idempotency_table, {TIER: TierConfig.idempotency_ttl_seconds})
        for key, job in self.catalogue.items():
            if job.get("ends") == "cancelled":
                assert mark_cancelled(self.tier.dynamodb, marks, TIER, job["type"], key).outcome == "marked"

    # -- replays ---------------------------------------------------------------------------

    def _tiers(self) -> dict[str, Any]:
        from tiered_jobs.replay.tiers import TierQueues
        from tiered_jobs.runtime.config import TierConfig

        # The consumer's own window (the letters are minutes old: all inside it).
        return {TIER: TierQueues(self.tier.queue_url, self.tier.dlq_url, TierConfig.idempotency_ttl_seconds)}

    def _replay(self, mode: str, sqs: Any = None) -> dict[str, Any]:
        from tiered_jobs.replay.events import parse_event
        from tiered_jobs.replay.service import run as replay

        # Native moves every letter, however old: the run's letters are minutes old, inside the window.
        fields = {"max_messages": 10_000} if mode == "batch" else {"allow_outside_idempotency_window": True}
        request = parse_event({"tier": TIER, "mode": mode, **fields})
        before = depth(self.tier, self.tier.dlq_url)
        answer = replay(request, sqs=sqs or self.client("sqs"), tiers=self._tiers(), wait_seconds=0)
        self.replayed[mode] += answer["moved"] if mode == "batch" else before
        return answer

    def _replay_with_crash(self) -> None:
        tier, plan = self.tier, self.plan
        if plan.replay_crashes_between_send_and_delete:
            held: list[str] = []

            def crash_on_delete(op: str, kwargs: dict) -> None:
                if op == "delete_message_batch":
                    plan.injected["replay_crash_between_send_and_delete"] += 1
                    raise SimulatedCrash("replay died between send and delete")

            def remember(op: str, kwargs: dict, result: Any) -> None:
                if op == "receive_message":
                    held.extend(m["ReceiptHandle"] for m in result.get("Messages", []))

            try:
                self._replay("batch", Wrapped(self.client("sqs"), crash_on_delete, remember))
            except SimulatedCrash:
                pass
            # The dead run's letters stay invisible until their hold expires; let that time pass now.
            for handle in held:
                tier.sqs.change_message_visibility(QueueUrl=tier.dlq_url, ReceiptHandle=handle, VisibilityTimeout=0)
        self._replay("batch")


def _writes(kwargs: dict[str, Any], table: str) -> bool:
    """Does this ``TransactWriteItems`` write ``table``?"""
    return any(op.get("TableName") == table for item in kwargs.get("TransactItems", []) for op in item.values())


def _name(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def _scan(dynamodb: Any, table: str) -> list[dict]:
    items, kwargs = [], {"TableName": table}
    while True:
        page = dynamodb.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _create_unique_table(dynamodb: Any, name: str) -> str:
    """The unique jobs' locks, shaped as the stack makes them (partition key ``lock``)."""
    from tiered_jobs.contract.unique import KEY_ATTRIBUTE

    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": KEY_ATTRIBUTE, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": KEY_ATTRIBUTE, "KeyType": "HASH"}],
    )
    return name


def _offloaded(s3: Any, bucket: str) -> dict[str, str]:
    """``{pointer body: idempotency key}`` of every body the publisher stored (one object per copy published)."""
    from tiered_jobs.contract.envelope import parse
    from tiered_jobs.contract.large_payloads import Pointer

    found = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            stored = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read().decode("utf-8")
            found[Pointer(bucket, item["Key"]).body()] = parse(stored, max_bytes=None).idempotency_key
    return found


def _archived(s3: Any, bucket: str) -> dict[str, set[str]]:
    """``{idempotency key: reasons}`` of every job the discard archive holds (one object per job dropped)."""
    found: dict[str, set[str]] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            for line in s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read().splitlines():
                record = json.loads(line)
                found.setdefault(json.loads(record["body"])["idempotency_key"], set()).add(record["reason"])
    return found


def _read_all(sqs: Any, url: str) -> list[dict]:
    """Every letter, without consuming: hold each while reading, then release them all."""
    seen: dict[str, dict] = {}
    handles = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60, MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not batch:
            break
        for message in batch:
            seen[message["MessageId"]] = message
            handles.append(message["ReceiptHandle"])
    for start in range(0, len(handles), SQS_MAX_BATCH_ENTRIES):
        sqs.change_message_visibility_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": h, "VisibilityTimeout": 0}
                for i, h in enumerate(handles[start : start + SQS_MAX_BATCH_ENTRIES])
            ],
        )
    return list(seen.values())
