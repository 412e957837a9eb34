"""What the composed run turns on and injects: every feature at once, faults through wrapped clients.

One seeded generator decides every fault, so a run can be repeated. Faults go through the
clients the consumer, the mapping and the replay are given (:class:`Wrapped`), never through a
job's code: the code under test is the code that ships.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError


class SimulatedCrash(BaseException):
    """The process dies here: nothing in the handler can catch it (it is not an Exception)."""


@dataclass
class FaultPlan:
    """Probabilities per call or per job; the features the run turns on."""

    seed: int = 20261129
    # -- faults ------------------------------------------------------------------------------
    #: The invocation dies after the job's side effect, before its idempotency record completes.
    crash_before_idempotency_completes: float = 0.01
    #: The mapping dies after the invocation, before it deletes the batch (``DeleteMessageBatch``).
    crash_before_ack: float = 0.02
    #: The job's own write fails with a 503 (transient: retried).
    transient_job_error: float = 0.05
    #: The idempotency table throttles (transient: retried).
    idempotency_throttle: float = 0.03
    #: The rate limiter's table throttles: the bucket's jobs are held briefly.
    limiter_throttle: float = 0.03
    #: SQS refuses a copy the consumer sends back (a held or deferred job): it stays in the queue.
    copy_refused: float = 0.02
    #: The job's write takes ``slow_job_seconds``, nearly the invocation's 4 s: whatever its place in its batch,
    #: the records after it are deferred by the time budget. (Slow jobs of 1 s at 5 % deferred a batch only
    #: when three or four met in it, or while rate-limit waits were slept inside the invocation: about once a
    #: run since waits became holds, so a quiet machine could finish a run without a deferral.)
    slow_job: float = 0.01
    slow_job_seconds: float = 3.7
    #: An invocation reaches its records with less than the time budget's margin left (its time spent before
    #: them), so every record it would run is deferred, whatever the batch's size. A slow job defers only
    #: the records after it in its batch, and with most records held by the rate limit a run could end
    #: with no such batch: this makes the deferral the run must exercise certain, not a matter of chance.
    late_invocation: float = 0.01
    #: The invocation dies after a batch member's completion (its idempotency record written), before its
    #: count in the batches table: its next delivery is answered from its record and counted then.
    crash_before_batch_count: float = 0.15
    #: A replay run dies between its send and its delete, and runs again.
    replay_crashes_between_send_and_delete: bool = True
    #: AWS applied a mutating call of a consumer's, the publisher's or a replay's, and its answer was lost:
    #: botocore's retry sends the same request again (``bench/invariant/faults.py``), per applied call. At 1 % a
    #: run took three times as long: a held batch's copies sent twice stay held, each copy claiming tokens
    #: again, until the limiter lets it reach idempotency (250 jobs: 6 268 receives instead of 1 453).
    lost_answer: float = 0.002
    #: DynamoDB cancels a batch member's count (its ``TransactWriteItems``) with ``TransactionConflict`` (a run
    #: makes a few dozen counts: at 5 % one in seven runs met none).
    batch_count_conflict: float = 0.2
    # -- the jobs ----------------------------------------------------------------------------
    #: Jobs that can never succeed (a payload the job refuses), sent past the publisher.
    poison_fraction: float = 0.01
    #: Jobs published three times instead of twice (the copies from two threads at once).
    three_copies_fraction: float = 0.1
    #: Jobs whose body is close to the publisher's limit (1 MiB less the runtime's headroom).
    big_body_fraction: float = 0.006
    #: Plain payments past SQS's 1 MiB, chosen by place: the publisher stores them in S3 (``large_payloads``).
    large_body_jobs: int = 2
    #: Jobs published for a tenant (the envelope's ``tenant``, the message's group).
    tenant_fraction: float = 0.3
    #: Jobs published with a delay (SQS's ``DelaySeconds``).
    delayed_fraction: float = 0.05
    #: Scheduled times of a periodic job, each fire delivered twice (Scheduler is at-least-once).
    schedule_fires: int = 3
    #: Jobs of ``capped.update_balance``, a type with its own retry policy that never succeeds: half
    #: exhaust its two attempts, half raise a bug its policy makes permanent (``bench/invariant/jobs``).
    capped_fraction: float = 0.02
    #: Jobs of ``fragile.update_balance``, whose module fails to import for the run's first
    #: ``broken_module_seconds`` (then retried by the consumer after its interval, and fixed).
    fragile_fraction: float = 0.05
    #: Jobs of ``stepped.update_balance``: three steps (``ctx.checkpoint``), the payment on the last.
    stepped_fraction: float = 0.03
    broken_module_seconds: float = 30.0
    #: Jobs whose deadline (the envelope's ``expires_at``) has passed when they arrive (a publisher whose
    #: clock is behind), and jobs an operator cancels before they are published: each copy must be
    #: archived unrun with its reason, never applied, never a letter.
    expired_fraction: float = 0.01
    cancelled_fraction: float = 0.01
    #: Jobs published with ``unique_for=`` (a window longer than the run): a copy published while the first
    #: is pending is refused as already queued, nothing sent; each is applied once and its lock released.
    unique_fraction: float = 0.05
    #: Jobs a newer producer wrote (envelope ``version`` 2): the run's consumer does not read them yet, so
    #: it holds each (copies, never an attempt) until its bound, then dead-letters it ``envelope_too_new``.
    too_new_fraction: float = 0.01
    #: Plain payments opened as members of batches (``publisher.batch``) of ``batch_size``, each batch with one
    #: callback (``on_complete`` or ``on_success``, in turn), itself a payment the checker expects applied once.
    batch_fraction: float = 0.04
    batch_size: int = 5
    # -- features ----------------------------------------------------------------------------
    #: The job type's rate limit (jobs per second across the tier's consumers; ``None``: off).
    rate_limit_per_second: float | None = 60.0
    #: A small burst and a short wait bound: one batch's claim can take its own jobs past the bound (a
    #: token every 1/60 s after the burst of 2: a batch's 9th payment starts 117 ms on, past 100 ms), so
    #: jobs are held with their turns (``TieredJobs.Turn``) and run from their copies even where batches
    #: seldom claim at once. With 250 ms it took two batches claiming together, which a slow machine's
    #: run once never did (no copy with a turn); with 50 ms most payments were held, and under that load
    #: their copies came back past their turns' grace and were held again, about six times a job.
    rate_limit_burst: int = 2
    #: The stepped jobs' own limit, far below what the run's four consumers can start: their steps are claimed
    #: at their starts like the payments', and two claims within half a second (two steps in one batch, or
    #: two consumers at once) hold the later one with its turn, so the run's held copies are certain.
    stepped_rate_limit_per_second: float = 2.0
    rate_limit_max_wait_seconds: float = 0.1
    #: Replays while jobs still flow: a batch replay, then a native one (``StartMessageMoveTask``).
    mid_run_replays: bool = True
    #: An operator pauses the tier ``pause_after_seconds`` into the publishing, for ``pause_seconds``
    #: (its mapping disabled, as ``tiered-jobs pause`` does), while jobs are still published; then
    #: resumes it (``None``: no pause).
    pause_after_seconds: float | None = 4.0
    pause_seconds: float = 3.0
    #: The tier's circuit breaker opens ``breaker_after_seconds`` after the operator resumed it (or after the
    #: publishing began), stays open ``breaker_open_seconds``, probes ``breaker_probe_seconds``, then closes:
    #: each change's alarm event delivered three times, the first dying midway (``breaker_events``). ``None``: none.
    breaker_after_seconds: float | None = 2.0
    breaker_open_seconds: float = 1.0
    breaker_probe_seconds: float = 1.0
    #: Sabotage, to show the checker can fail: the payment's marker condition is dropped (run it
    #: with POWERTOOLS_IDEMPOTENCY_DISABLED=true and duplicates must be counted).
    drop_marker_condition: bool = False
    #: Sabotage, to show the checker can fail: the pollers ignore the mapping's state they read, so the
    #: operator's pause is not honoured and its receives must be counted.
    ignore_pause: bool = False
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

    @classmethod
    def quiet(cls, **changes: Any) -> FaultPlan:
        """No fault and no feature but what ``changes`` turns on (the checker's own tests)."""
        off = {
            name: 0
            for name in (
                "crash_before_idempotency_completes",
                "crash_before_ack",
                "transient_job_error",
                "idempotency_throttle",
                "limiter_throttle",
                "copy_refused",
                "slow_job",
                "late_invocation",
                "poison_fraction",
                "big_body_fraction",
                "large_body_jobs",
                "tenant_fraction",
                "delayed_fraction",
                "schedule_fires",
                "capped_fraction",
                "fragile_fraction",
                "stepped_fraction",
                "broken_module_seconds",
                "expired_fraction",
                "cancelled_fraction",
                "unique_fraction",
                "too_new_fraction",
                "crash_before_batch_count",
                "batch_fraction",
                "lost_answer",
                "batch_count_conflict",
            )
        }
        return cls(
            **{
                **off,
                "replay_crashes_between_send_and_delete": False,
                "rate_limit_per_second": None,
                "mid_run_replays": False,
                "pause_after_seconds": None,
                "breaker_after_seconds": None,
                **changes,
            }
        )


class Wrapped:
    """A boto3 client whose calls pass through ``before(op, kwargs)`` and ``after(op, kwargs, result)``."""

    def __init__(self, real: Any, before: Any = None, after: Any = None):
        self._real, self._before, self._after = real, before, after

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)
        if not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._before:
                replaced = self._before(name, kwargs)
                if replaced is not None:  # the hook answered instead of the service
                    return replaced
            result = method(*args, **kwargs)
            if self._after:
                self._after(name, kwargs, result)
            return result

        return call


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": f"{code} (injected)"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "Injected",
    )
