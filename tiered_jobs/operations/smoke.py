"""``tiered-jobs smoke``: one probe job per tier, sent and waited for, the check a pipeline runs after a deploy.

Each tier gets a fresh probe (``tiered_jobs.contract.probe``: a key of its own, so never a
duplicate's answer) sent to its queue as a publisher sends a job, then the probes are waited for
together until ``timeout``. A probe ends one of four ways, each a line an operator can act on:

* ``completed``: its idempotency record says completed (the one ``GetItem`` ``tiered-jobs job``
  makes), with the tier whose consumer ran it;
* ``dead_lettered``: a letter with its type and key is in the tier's DLQ, with the consumer's
  reasons (or none: moved by SQS's redrive after crashes). The DLQ is read only when its depth
  changed since the probe was sent, and once more at the timeout, so a quiet DLQ costs one
  ``GetQueueAttributes`` per poll;
* ``refused``: SQS refused the send (no such queue, no permission, an encrypted queue's key);
* ``timed_out``: none of those within the timeout: the record's own words, and what to look at
  (a paused tier, an open circuit breaker and a throttled consumer receive nothing).

The probe writes nothing but its record, which expires with the tier's idempotency window, so a
smoke check is safe to run against production as often as a pipeline deploys.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract import envelope
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.contract.probe import KEY_PREFIX, PROBE_TYPE, RESULT_TIER
from tiered_jobs.stage.discovery import UnknownTierError
from tiered_jobs.stage.target import Target

from .errors import OperatorError, client_error_text
from .lookup import COMPLETED, read_record, reasons_of
from .replays import read_letters

DEAD_LETTERED = "dead_lettered"
REFUSED = "refused"
TIMED_OUT = "timed_out"
#: The longest wait a command line may ask (a deploy's smoke check is minutes, not hours).
MAX_TIMEOUT_SECONDS = 3600.0
#: Letters read per DLQ when looking for a probe's letter.
MAX_LETTERS = 1000
#: The letter's reasons a smoke line shows (the rest: ``tiered-jobs job tiered_jobs.probe KEY``).
SHOWN_REASONS = (DeadLetter.REASON, DeadLetter.ERROR_TYPE, DeadLetter.ERROR_MESSAGE, DeadLetter.ATTEMPTS)
_DEPTH_ATTRIBUTES = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]


@dataclass(frozen=True)
class ProbeResult:
    """What became of one tier's probe job, and how long it took."""

    tier: str
    #: The probe's idempotency key (``tiered-jobs job tiered_jobs.probe KEY`` reads its record).
    key: str
    outcome: str  # COMPLETED | DEAD_LETTERED | REFUSED | TIMED_OUT
    #: From the send to the outcome.
    seconds: float
    detail: str

    @property
    def ok(self) -> bool:
        return self.outcome == COMPLETED

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "seconds": round(self.seconds, 3), "ok": self.ok}


@dataclass(frozen=True)
class SmokeReport:
    """``smoke``'s answer for a stage: one probe result per tier."""

    stage: str
    results: list[ProbeResult]

    @property
    def ok(self) -> bool:
        return all(result.ok for result in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "ok": self.ok, "probes": [result.to_dict() for result in self.results]}


def probe_key(now: datetime, token: str | None = None) -> str:
    """``smoke-<UTC moment>-<random>``: sortable by when it ran, unique per probe."""
    return f"{KEY_PREFIX}{now.strftime('%Y%m%dT%H%M%SZ')}-{token or secrets.token_hex(4)}"


@dataclass
class _Probe:
    """A probe job in flight: where it was sent and when."""

    tier: str
    key: str
    queue_url: str
    dlq_url: str | None
    sent_at: float
    #: The DLQ's depth when last read (``None``: not readable, or no DLQ): a change means a look.
    dlq_depth: int | None


def smoke(
    target: Target,
    tiers: Sequence[str] = (),
    *,
    timeout: float = 120.0,
    poll_seconds: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> SmokeReport:
    """Send a probe to each of ``tiers`` (default: every tier of the stage) and wait for them all."""
    from botocore.exceptions import BotoCoreError, ClientError

    if not 0 < timeout <= MAX_TIMEOUT_SECONDS:
        raise OperatorError(
            f"--timeout must be a number of seconds in (0, {MAX_TIMEOUT_SECONDS:g}], got {timeout:g}", 2
        )
    deployment = target.deployment()
    try:
        chosen = {name: deployment.tier(name) for name in (tiers or list(deployment.tiers))}
    except UnknownTierError as exc:
        raise OperatorError(str(exc), 2) from None
    sqs = target.client("sqs")
    started = clock()
    results: dict[str, ProbeResult] = {}
    probes: list[_Probe] = []
    for name, urls in chosen.items():
        key = probe_key(now())
        probe = _Probe(name, key, urls.queue_url, urls.dlq_url, clock(), _dlq_depth(sqs, urls.dlq_url))
        try:
            sqs.send_message(QueueUrl=urls.queue_url, MessageBody=envelope.build(PROBE_TYPE, {}, key).to_json())
        except (BotoCoreError, ClientError) as exc:
            results[name] = ProbeResult(name, key, REFUSED, 0.0, f"SQS refused the probe: {_error_text(exc)}")
            continue
        probes.append(probe)
    while probes:
        for probe in list(probes):
            found = _outcome(target, sqs, probe, clock)
            if found is not None:
                results[probe.tier] = found
                probes.remove(probe)
        if not probes:
            break
        if clock() - started >= timeout:
            for probe in probes:
                results[probe.tier] = _outcome(target, sqs, probe, clock, final=True) or _timed_out(
                    target, probe, clock, timeout
                )
            break
        sleep(poll_seconds)
    return SmokeReport(target.stage, [results[name] for name in chosen])


def _outcome(
    target: Target, sqs: Any, probe: _Probe, clock: Callable[[], float], final: bool = False
) -> ProbeResult | None:
    """The probe's outcome if it has one now: its record completed, or its letter in the DLQ."""
    record = read_record(target, PROBE_TYPE, probe.key)
    elapsed = clock() - probe.sent_at
    if record.state == COMPLETED:
        ran = (record.result or {}).get(RESULT_TIER) if isinstance(record.result, dict) else None
        by = f"the {ran} consumer" if ran else "a consumer"
        return ProbeResult(probe.tier, probe.key, COMPLETED, elapsed, f"completed by {by} in {elapsed:.1f} s")
    depth = _dlq_depth(sqs, probe.dlq_url)
    if probe.dlq_url is None or (depth == probe.dlq_depth and not final) or depth == 0:
        return None
    probe.dlq_depth = depth
    letter = _letter_of(target, probe)
    if letter is None:
        return None
    reasons = "; ".join(
        f"{name.removeprefix(DeadLetter.PREFIX)}={letter[name]}" for name in SHOWN_REASONS if name in letter
    )
    return ProbeResult(
        probe.tier,
        probe.key,
        DEAD_LETTERED,
        elapsed,
        f"dead-lettered: {reasons or 'no reasons (moved by SQS redrive: the consumer crashed or timed out)'}",
    )


def _timed_out(target: Target, probe: _Probe, clock: Callable[[], float], timeout: float) -> ProbeResult:
    record = read_record(target, PROBE_TYPE, probe.key)
    stage = target.stage
    return ProbeResult(
        probe.tier,
        probe.key,
        TIMED_OUT,
        clock() - probe.sent_at,
        f"not completed within {timeout:g} s ({record.state.replace('_', ' ')}: {record.detail}); a paused tier, an "
        f"open circuit breaker or a throttled consumer receives nothing: see tiered-jobs --stage {stage} status, "
        f"then tiered-jobs --stage {stage} job {PROBE_TYPE} {probe.key}",
    )


def _letter_of(target: Target, probe: _Probe) -> dict[str, str] | None:
    """The reasons of the probe's letter in its tier's DLQ, or ``None`` when it has none there."""
    found: list[dict[str, str]] = []

    def collect(letters: list[Any]) -> None:
        for letter in letters:
            try:
                job = envelope.parse(letter.body)
            except envelope.EnvelopeError:
                continue
            if job.type == PROBE_TYPE and job.idempotency_key == probe.key:
                found.append(reasons_of(letter.attributes))

    read_letters(target, probe.tier, max_messages=MAX_LETTERS, on_letters=collect)
    return found[0] if found else None


def _dlq_depth(sqs: Any, dlq_url: str | None) -> int | None:
    """Letters in the DLQ, visible or held (``None``: no DLQ, or not readable: the letter is then looked for)."""
    from botocore.exceptions import BotoCoreError, ClientError

    if dlq_url is None:
        return None
    try:
        attributes = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=_DEPTH_ATTRIBUTES)["Attributes"]
    except (BotoCoreError, ClientError):
        return None
    return sum(int(attributes.get(name, 0)) for name in _DEPTH_ATTRIBUTES)


def _error_text(exc: Exception) -> str:
    return client_error_text(exc) if getattr(exc, "response", None) else str(exc)
