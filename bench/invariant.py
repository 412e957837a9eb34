"""The effectively-once proof: lost, duplicated and unexpected outcomes counted under faults.

Like a Jepsen queue checker: N payments jobs over many account balances, each published at least twice
(some three times, the copies from two threads at once), consumed through the local
event-source-mapping runtime on moto's server by the real consumer, while a :class:`FaultPlan`
injects, through wrapped clients (never through the job's code):

* a crash after the side effect and before the idempotency record completes (the invocation
  dies; the whole batch returns after its visibility timeout);
* a crash before the ack (the mapping's DeleteMessageBatch never happens);
* transient errors of the job's own write and throttling of the idempotency table;
* poison messages that can never succeed (a payload the job refuses);
* then a replay that crashes between send and delete, run again.

The checker reads the truth from outside the consumer: the successful balance transactions seen
on the wire (per key), the markers and balances in the payments job's table, and the dead letters.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from bench.runtime import depth, drain
from tiered_jobs.contract.names import DeadLetter

TIER = "critical"
JOB_TYPE = "payments.update_balance"


class SimulatedCrash(BaseException):
    """The process dies here: nothing in the handler can catch it (it is not an Exception)."""


@dataclass
class FaultPlan:
    """Probabilities per call; one seeded generator so a run can be repeated."""

    seed: int = 20261129
    crash_before_idempotency_completes: float = 0.01
    crash_before_ack: float = 0.02
    transient_job_error: float = 0.05
    idempotency_throttle: float = 0.03
    poison_fraction: float = 0.01
    three_copies_fraction: float = 0.1
    replay_crashes_between_send_and_delete: bool = True
    #: Sabotage, to show the checker can fail: the payment's marker condition is dropped (run it
    #: with POWERTOOLS_IDEMPOTENCY_DISABLED=true and duplicates must be counted).
    drop_marker_condition: bool = False
    enabled: bool = True
    _rng: random.Random = field(init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    injected: Counter = field(default_factory=Counter, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def roll(self, name: str, probability: float) -> bool:
        with self._lock:
            hit = self.enabled and self._rng.random() < probability
            if hit:
                self.injected[name] += 1
            return hit

    def random(self) -> random.Random:
        return self._rng


class Wrapped:
    """A boto3 client whose calls pass through ``before(op, kwargs)`` and ``after(op, kwargs, result)``."""

    def __init__(self, real: Any, before=None, after=None):
        self._real, self._before, self._after = real, before, after

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)
        if not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._before:
                self._before(name, kwargs)
            result = method(*args, **kwargs)
            if self._after:
                self._after(name, kwargs, result)
            return result

        return call


def _client_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"{code} (injected)"},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "Injected")


@dataclass
class Outcome:
    expected: int
    applied: int
    lost: int
    duplicated: int
    dead_lettered: int
    unexpected: int
    poison: int
    balances_ok: bool
    balances_checked: int
    #: ``{account: [expected, actual]}`` where they differ.
    balance_mismatches: dict[str, list[int]]
    dead_letter_reasons: dict[str, int]
    dead_letters_without_reason_or_unknown: int
    redundant_dead_letters: int
    faults_injected: dict[str, int]
    messages_published: int
    seconds: float

    def holds(self) -> bool:
        return (self.lost == 0 and self.duplicated == 0 and self.unexpected == 0 and self.balances_ok
                and self.applied + self.dead_lettered == self.expected
                and self.dead_letters_without_reason_or_unknown == 0)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "holds": self.holds()}

    def plus(self, other: Outcome) -> Outcome:
        """Two independent runs as one: counts and seconds add up, checks must hold in both."""
        merged: dict[str, Any] = {}
        for name, value in asdict(self).items():
            theirs = getattr(other, name)
            if isinstance(value, bool):
                merged[name] = value and theirs
            elif name == "balance_mismatches":  # shards have their own tables: keep both
                merged[name] = {**value, **{f"{k} (+)": v for k, v in theirs.items()}}
            elif isinstance(value, dict):
                merged[name] = dict(Counter(value) + Counter(theirs))
            else:
                merged[name] = value + theirs
        return Outcome(**merged)


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
            outcomes = list(pool.map(run_shard, seeds, [jobs // shards] * shards, [account_count] * shards))
    else:
        outcomes = [run(jobs=jobs // shards, account_count=account_count, plan=FaultPlan(seed=seed), log=log)
                    for seed in seeds]
    total: Outcome | None = None
    for shard, outcome in enumerate(outcomes):
        log(f"shard {shard + 1}/{shards}: {json.dumps(outcome.as_dict())}")
        total = outcome if total is None else total.plus(outcome)
    assert total is not None
    return total


def run_shard(seed: int, jobs: int, account_count: int) -> Outcome:
    """One shard in a process of its own (``run_shards(processes=...)``), quiet but for its outcome."""
    import logging

    for name in ("emulator.esm", "werkzeug"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return run(jobs=jobs, account_count=account_count, plan=FaultPlan(seed=seed), log=lambda *_: None)


def run(jobs: int = 1000, account_count: int = 100, concurrency: int = 4, plan: FaultPlan | None = None,
        drain_timeout: float = 600.0, log=print) -> Outcome:
    from emulator.server import EmbeddedAws, client_environment

    plan = plan or FaultPlan()
    started = time.monotonic()
    with EmbeddedAws() as endpoint, client_environment(endpoint):
        return _run(jobs, account_count, concurrency, plan, drain_timeout, log, started)


def _run(jobs, account_count, concurrency, plan, drain_timeout, log, started) -> Outcome:
    import boto3

    from bench.runtime import consumer_runtime
    from tests.support.tier import create_tier
    from tiered_jobs.contract import envelope
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import Job, Publisher
    from tiered_jobs.runtime.backoff import RetryPolicy

    # A visibility timeout above the invocation's time, as the stack's guardrail demands.
    max_attempts, visibility, remaining_ms = 5, 3, 1500
    # A fresh name per run: moto's server shares its state with everything else in this process.
    tier = create_tier(f"invariant-{plan.seed}-{time.monotonic_ns() % 10**6}", visibility_timeout=visibility,
                       max_receive_count=max_attempts)

    # --- the jobs: unique keys, amounts per account, poison among them -----------------------
    rng = plan.random()
    catalogue: dict[str, dict[str, Any]] = {}
    for i in range(jobs):
        key = f"pay-{i:06d}"
        poison = rng.random() < plan.poison_fraction
        catalogue[key] = {"account_id": f"acc-{i % account_count:04d}", "amount": 0 if poison else rng.randint(1, 100),
                          "poison": poison}
    copies = [key for key in catalogue for _ in range(3 if rng.random() < plan.three_copies_fraction else 2)]
    rng.shuffle(copies)

    # --- the seams: wrapped clients --------------------------------------------------------------
    applications: Counter[str] = Counter()
    applications_lock = threading.Lock()

    def dynamodb_before(op: str, kwargs: dict) -> None:
        table = kwargs.get("TableName")
        if op == "update_item" and table == tier.idempotency_table and \
                plan.roll("crash_before_idempotency_completes", plan.crash_before_idempotency_completes):
            raise SimulatedCrash("crash after the side effect, before the idempotency record completes")
        if op == "put_item" and table == tier.idempotency_table and \
                plan.roll("idempotency_throttle", plan.idempotency_throttle):
            raise _client_error("ProvisionedThroughputExceededException", 400)
        if op == "transact_write_items" and plan.roll("transient_job_error", plan.transient_job_error):
            raise _client_error("ServiceUnavailable", 503)
        if op == "transact_write_items" and plan.drop_marker_condition:
            kwargs["TransactItems"][1]["Put"].pop("ConditionExpression", None)

    def dynamodb_after(op: str, kwargs: dict, result: Any) -> None:
        if op == "transact_write_items":  # a balance change really happened: record it per key
            marker = kwargs["TransactItems"][1]["Put"]["Item"]["account_id"]["S"]
            with applications_lock:
                applications[marker.rsplit("#", 1)[1]] += 1

    def esm_sqs_before(op: str, kwargs: dict) -> None:
        if op == "delete_message_batch" and plan.roll("crash_before_ack", plan.crash_before_ack):
            raise ConnectionError("crash before the ack (injected)")

    # (moto's DynamoDB is not thread-safe; the embedded server serializes its requests: moto_patches.)
    def environment_clients() -> dict[str, Any]:
        return {"sqs": boto3.client("sqs"),
                "dynamodb": Wrapped(boto3.client("dynamodb"), dynamodb_before, dynamodb_after)}

    runtime = consumer_runtime(
        tier, clients=environment_clients, esm_sqs=Wrapped(boto3.client("sqs"), esm_sqs_before),
        concurrency=concurrency, remaining_ms=remaining_ms,
        retry=RetryPolicy(max_attempts=max_attempts, schedule=(1, 1, 2, 2), jitter=0.2),
    )
    runtime.start()
    try:
        # --- publish: two threads at once, in waves that keep the queue shallow ---------------------
        publisher = Publisher({TIER: tier.queue_url}, Routes({"payments.*": TIER}))
        raw_sqs = boto3.client("sqs")

        def payload_of(key: str) -> dict[str, Any]:
            return {"account_id": catalogue[key]["account_id"], "amount": catalogue[key]["amount"]}
        halves = [copies[0::2], copies[1::2]]

        def publish(part: list[str]) -> None:
            for start in range(0, len(part), 50):
                while depth(tier) > 300:
                    time.sleep(0.2)
                chunk = part[start:start + 50]
                publisher.publish_batch([Job(JOB_TYPE, payload_of(k), k) for k in chunk
                                         if not catalogue[k]["poison"]])
                # The publisher refuses a poison payload (its schema); a publisher in another language
                # that skips the schema still gets it in, and the consumer must dead-letter it.
                for k in chunk:
                    if catalogue[k]["poison"]:
                        raw_sqs.send_message(QueueUrl=tier.queue_url,
                                             MessageBody=envelope.build(JOB_TYPE, payload_of(k), k).to_json())

        threads = [threading.Thread(target=publish, args=(half,)) for half in halves]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        log(f"published {len(copies)} messages for {jobs} jobs; draining")
        drain(tier, drain_timeout)

        # --- replay: crash between send and delete, then run again -----------------------------------
        log(f"first pass drained; replaying {depth(tier, tier.dlq_url)} dead letters")
        _replay_with_crash(tier, plan)
        drain(tier, drain_timeout)
    finally:
        runtime.stop(timeout=60)

    return _check(tier, catalogue, applications, plan, len(copies), time.monotonic() - started)


def _replay_with_crash(tier, plan: FaultPlan) -> None:
    from tiered_jobs.replay.events import parse_event
    from tiered_jobs.replay.service import run as replay
    from tiered_jobs.replay.tiers import TierQueues
    from tiered_jobs.runtime.config import TierConfig

    # The consumer's own window (the letters are minutes old: all inside it).
    tiers = {TIER: TierQueues(tier.queue_url, tier.dlq_url, TierConfig.idempotency_ttl_seconds)}
    request = parse_event({"tier": TIER, "max_messages": 10_000})
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
            replay(request, sqs=Wrapped(tier.sqs, crash_on_delete, remember), tiers=tiers, wait_seconds=0)
        except SimulatedCrash:
            pass
        # The dead run's letters stay invisible until their hold expires; let that time pass now.
        for handle in held:
            tier.sqs.change_message_visibility(QueueUrl=tier.dlq_url, ReceiptHandle=handle, VisibilityTimeout=0)
    replay(request, sqs=tier.sqs, tiers=tiers, wait_seconds=0)


def _check(tier, catalogue, applications, plan, published, seconds) -> Outcome:
    items = _scan(tier.dynamodb, tier.payments_table)
    markers = {i["account_id"]["S"].rsplit("#", 1)[1] for i in items if i["account_id"]["S"].startswith("applied#")}
    balances = {
        i["account_id"]["S"]: int(i["balance"]["N"]) for i in items if not i["account_id"]["S"].startswith("applied#")
    }
    letters = _read_all(tier.sqs, tier.dlq_url)
    reasons: Counter[str] = Counter()
    dlq_keys: set[str] = set()
    missing_reason = 0
    for letter in letters:
        attrs = letter.get("MessageAttributes", {})
        reason = attrs.get(DeadLetter.REASON, {}).get("StringValue", DeadLetter.REASON_UNKNOWN)
        reasons[reason] += 1
        if DeadLetter.REASON not in attrs and reason != DeadLetter.REASON_UNKNOWN:
            missing_reason += 1
        try:
            dlq_keys.add(json.loads(letter["Body"])["idempotency_key"])
        except (ValueError, KeyError):
            missing_reason += 1
    applied = set(applications) | markers
    poison = {k for k, job in catalogue.items() if job["poison"]}
    expected_balance: dict[str, int] = defaultdict(int)
    for key in applied & set(catalogue):
        expected_balance[catalogue[key]["account_id"]] += catalogue[key]["amount"]
    mismatches = {acc: [expected_balance.get(acc, 0), balances.get(acc, 0)]
                  for acc in set(balances) | set(expected_balance)
                  if expected_balance.get(acc, 0) != balances.get(acc, 0)}
    dead_lettered = (dlq_keys - applied) & set(catalogue)
    return Outcome(
        expected=len(catalogue),
        applied=len(applied & set(catalogue)),
        lost=len(set(catalogue) - applied - dlq_keys),
        duplicated=sum(1 for n in applications.values() if n > 1),
        dead_lettered=len(dead_lettered),
        unexpected=len((applied - set(catalogue)) | (applied & poison) | (dlq_keys - set(catalogue))),
        poison=len(poison),
        balances_ok=not mismatches,
        balances_checked=len(balances),
        balance_mismatches=mismatches,
        dead_letter_reasons=dict(reasons),
        dead_letters_without_reason_or_unknown=missing_reason,
        redundant_dead_letters=len(dlq_keys & applied),
        faults_injected=dict(plan.injected),
        messages_published=published,
        seconds=round(seconds, 1),
    )


def _scan(dynamodb, table: str) -> list[dict]:
    items, kwargs = [], {"TableName": table}
    while True:
        page = dynamodb.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _read_all(sqs, url: str) -> list[dict]:
    """Every letter, without consuming: hold each while reading, then release them all."""
    seen: dict[str, dict] = {}
    handles = []
    while True:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60,
                                    MessageAttributeNames=["All"]).get("Messages", [])
        if not batch:
            break
        for message in batch:
            seen[message["MessageId"]] = message
            handles.append(message["ReceiptHandle"])
    for start in range(0, len(handles), 10):
        sqs.change_message_visibility_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": h, "VisibilityTimeout": 0}
                for i, h in enumerate(handles[start : start + 10])
            ],
        )
    return list(seen.values())
