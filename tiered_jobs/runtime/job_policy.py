"""A job type's own retry policy (``@job(max_attempts=..., retry_schedule_seconds=..., retry_on=...,
permanent_on=..., unexpected=...)``), and the one decision taken on a failed attempt.

A tier's retry settings are its jobs' defaults; a job may ask for fewer attempts, another backoff
schedule, and its own word on which of its exceptions are worth retrying. What it cannot have is
what its tier's queue cannot honour: SQS's redrive moves a message to the DLQ, without reasons, on
the receive after its ``maxReceiveCount``, so no job gets more attempts than its tier (the queue's
redrive is the hard ceiling), and a visibility timeout (the backoff) is at most 12 hours.

Two checks, so that a mistake is found as early as it can be:

* **when the job registers** (:meth:`JobPolicy.declare`, at import): everything the policy says on
  its own (types, ranges, a schedule within SQS's visibility maximum, an exception both retried and
  permanent). An import that fails names the setting;
* **on the tier** (:meth:`JobPolicy.on_tier`): ``max_attempts`` against the tier's, and the job's
  retries against its tier's queue retention (a retry is the same message made invisible, and SQS
  deletes it once it is older than the retention, mid-backoff, with no letter). A job may be
  imported by several tiers' consumers while routed to one, so this is not a reason to fail a
  whole function: the consumer dead-letters that job type's records as permanent, with
  :class:`JobPolicyError` naming the setting and the fix (replayable once it is fixed), and its
  neighbours run as before. ``tiered_jobs.testing.run_job`` checks it the same way.

:func:`decide` is what the consumer (and ``tiered_jobs.testing``) does with a failed attempt:
retry after a backoff, or dead-letter with a reason. One copy of the rules.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from tiered_jobs.contract.names import SQS_MAX_VISIBILITY_SECONDS, DeadLetter
from tiered_jobs.contract.retention import SQS_MAX_RETENTION_SECONDS, longest_stay_seconds, max_backoff_seconds

from .aws_errors import PERMANENT, TRANSIENT, Kind
from .backoff import RetryPolicy
from .errors import PermanentError, classify

Unexpected = Literal["retry", "permanent"]
#: ``unexpected="retry"``: a failure no rule decides is retried (the default: a bug costs a few
#: attempts, never a silently lost job); ``"permanent"``: it is dead-lettered at once (a job whose
#: unknown failures are bugs, a ``KeyError`` or a ``TypeError``, that no retry will fix).
UNEXPECTED_POLICIES: tuple[Unexpected, ...] = ("retry", "permanent")

ExceptionTypes = tuple[builtins.type[BaseException], ...]


class JobPolicyError(PermanentError):
    """The job's retry policy asks for what its tier's queue cannot honour (a deployment problem:
    its records are dead-lettered as permanent, and replayed once the policy or the tier is fixed)."""


@dataclass(frozen=True)
class JobPolicy:
    """What a job says about its failures; ``None`` for a setting means its tier's."""

    max_attempts: int | None = None
    retry_schedule_seconds: tuple[int, ...] | None = None
    retry_on: ExceptionTypes = ()
    permanent_on: ExceptionTypes = ()
    unexpected: Unexpected = "retry"

    @classmethod
    def declare(
        cls,
        job_type: str,
        *,
        max_attempts: int | None = None,
        retry_schedule_seconds: Iterable[int] | None = None,
        retry_on: Iterable[builtins.type[BaseException]] = (),
        permanent_on: Iterable[builtins.type[BaseException]] = (),
        unexpected: str = "retry",
    ) -> JobPolicy:
        """The policy ``@job`` was given, checked on its own; a ``ValueError`` names the setting."""
        where = f"@job({job_type!r})"
        if max_attempts is not None and (isinstance(max_attempts, bool) or not isinstance(max_attempts, int)):
            raise ValueError(f"{where}: max_attempts must be a whole number of attempts, got {max_attempts!r}")
        if max_attempts is not None and max_attempts < 1:
            raise ValueError(f"{where}: max_attempts must be at least 1 (the first run), got {max_attempts}")
        schedule = None
        if retry_schedule_seconds is not None:
            if isinstance(retry_schedule_seconds, (str, bytes)):
                raise ValueError(f"{where}: retry_schedule_seconds must be a list of seconds, e.g. [10, 60, 300]")
            schedule = tuple(retry_schedule_seconds)
            bad = [s for s in schedule if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s]
            if not schedule or bad:
                raise ValueError(
                    f"{where}: retry_schedule_seconds must be a non-empty list of whole seconds (>= 0), "
                    f"got {list(schedule)!r}"
                )
            too_long = [s for s in schedule if s > SQS_MAX_VISIBILITY_SECONDS]
            if too_long:
                raise ValueError(
                    f"{where}: retry_schedule_seconds {too_long} exceed SQS's longest visibility timeout "
                    f"({SQS_MAX_VISIBILITY_SECONDS} s, 12 h), which is how a backoff waits: "
                    f"use at most {SQS_MAX_VISIBILITY_SECONDS}"
                )
            attempts = max_attempts if max_attempts is not None else 1
            waited = sum(schedule[min(n, len(schedule)) - 1] for n in range(1, attempts))
            if waited >= SQS_MAX_RETENTION_SECONDS:
                # No tier can keep it: SQS's longest retention is 14 days. Its tier's own retention
                # (with the jitter and the attempts' time) is checked when it runs there.
                raise ValueError(
                    f"{where}: retry_schedule_seconds over max_attempts={attempts} waits {waited} s between "
                    f"attempts, past SQS's longest retention ({SQS_MAX_RETENTION_SECONDS} s, 14 days): SQS would "
                    "delete the job mid-backoff, with no letter; shorten the schedule or lower max_attempts"
                )
        retry, permanent = _types(where, "retry_on", retry_on), _types(where, "permanent_on", permanent_on)
        both = sorted(t.__name__ for t in set(retry) & set(permanent))
        if both:
            raise ValueError(f"{where}: {', '.join(both)} is in both retry_on and permanent_on: keep it in one")
        if unexpected not in UNEXPECTED_POLICIES:
            raise ValueError(
                f"{where}: unexpected must be one of {', '.join(map(repr, UNEXPECTED_POLICIES))}, got {unexpected!r}"
            )
        return cls(max_attempts, schedule, retry, permanent, unexpected)

    def classify(self, exc: BaseException) -> Kind:
        """Transient or permanent, by the library's rules with this job's declarations."""
        return classify(
            exc,
            permanent=self.permanent_on,
            retry=self.retry_on,
            unexpected=PERMANENT if self.unexpected == "permanent" else TRANSIENT,
        )

    def on_tier(
        self,
        job_type: str,
        tier: str,
        tier_retry: RetryPolicy,
        receive_limit: int,
        *,
        retention_seconds: int | None = None,
        timeout_seconds: int = 0,
        batching_window_seconds: int = 0,
    ) -> RetryPolicy:
        """The attempts and backoff this job gets on ``tier``; :class:`JobPolicyError` if the tier cannot honour them.

        ``receive_limit`` is the tier queue's redrive ``maxReceiveCount`` (the stack makes it the
        tier's ``max_attempts``): a message is moved to the DLQ, without reasons, past it.
        ``retention_seconds`` is the queue's retention (``None``: not checked), which the job's
        retries at their longest (``contract.retention.longest_stay_seconds``, with the function's
        timeout and the batching window for each attempt) must end within.
        """
        ceiling = min(tier_retry.max_attempts, receive_limit)
        if self.max_attempts is not None and self.max_attempts > ceiling:
            raise JobPolicyError(
                f"{job_type}: @job(max_attempts={self.max_attempts}) is more than tier {tier!r} allows "
                f"({ceiling}: its queue's redrive maxReceiveCount, which would move the job to the DLQ without "
                f"reasons on receive {ceiling + 1}); lower the job's max_attempts to at most {ceiling}, or raise "
                f"tiers.{tier}.max_attempts in cdk.json, or route {job_type} to a tier with more"
            )
        # SQS's 12 hours count from the receive: every backoff leaves the attempt's own time out of them.
        cap = min(tier_retry.max_delay_seconds, max_backoff_seconds(timeout_seconds, batching_window_seconds))
        if self.max_attempts is None and self.retry_schedule_seconds is None:
            # The tier's own schedule: the stack checked it against the retention at synthesis.
            return tier_retry if cap == tier_retry.max_delay_seconds else replace(tier_retry, max_delay_seconds=cap)
        retry = RetryPolicy(
            max_attempts=self.max_attempts if self.max_attempts is not None else tier_retry.max_attempts,
            schedule=self.retry_schedule_seconds if self.retry_schedule_seconds is not None else tier_retry.schedule,
            jitter=tier_retry.jitter,
            max_delay_seconds=cap,
        )
        if retention_seconds is not None:
            stay = longest_stay_seconds(
                retry.schedule,
                retry.jitter,
                retry.max_attempts,
                timeout_seconds=timeout_seconds,
                batching_window_seconds=batching_window_seconds,
                max_backoff=retry.max_delay_seconds,
            )
            if stay >= retention_seconds:
                raise JobPolicyError(
                    f"{job_type}: @job(retry_schedule_seconds={list(retry.schedule)}, "
                    f"max_attempts={retry.max_attempts}) keeps the job up to {stay} s in the queue of tier {tier!r} "
                    f"(each backoff at +{retry.jitter:g} jitter, each attempt {timeout_seconds} s of timeout + "
                    f"{batching_window_seconds} s of batching window), "
                    f"past its retention of {retention_seconds} s: SQS would delete it mid-backoff, with no letter; "
                    f"shorten the job's retry_schedule_seconds or lower its max_attempts, or raise "
                    f"tiers.{tier}.retention_days in cdk.json"
                )
        return retry


#: The policy of a job that declares nothing: the library's rules and its tier's settings.
TIER_DEFAULTS = JobPolicy()


class Decision:
    """What becomes of a failed attempt (a plain class: a dataclass's generated methods cost a
    millisecond of every cold start each)."""

    __slots__ = ("kind", "reason", "delay_seconds")

    def __init__(self, kind: Kind, reason: str | None, delay_seconds: int | None = None):
        self.kind = kind
        #: ``None``: retried after ``delay_seconds``; else the letter's ``DeadLetter.Reason``.
        self.reason = reason
        self.delay_seconds = delay_seconds

    def __repr__(self) -> str:
        return f"Decision({self.kind!r}, {self.reason!r}, {self.delay_seconds!r})"

    @property
    def retry(self) -> bool:
        return self.reason is None


def decide(
    exc: BaseException,
    attempt: int,
    policy: JobPolicy,
    retry: RetryPolicy,
    rand: Callable[[], float],
) -> Decision:
    """Retry after the jittered backoff while attempts are left and the failure is transient; else
    dead-letter it: ``permanent``, or ``retries_exhausted`` on the job's own last attempt."""
    kind = policy.classify(exc)
    if kind == PERMANENT:
        return Decision(kind, DeadLetter.REASON_PERMANENT)
    if retry.is_last(attempt):
        return Decision(kind, DeadLetter.REASON_RETRIES_EXHAUSTED)
    return Decision(kind, None, retry.delay(attempt, rand))


def _types(where: str, setting: str, given: Any) -> ExceptionTypes:
    if isinstance(given, type):
        given = (given,)
    try:
        types = tuple(given)
    except TypeError:
        types = (given,)
    bad = [t for t in types if not (isinstance(t, type) and issubclass(t, BaseException))]
    if bad:
        raise ValueError(f"{where}: {setting} must be exception classes, e.g. {setting}=(KeyError,), got {bad!r}")
    return types
