"""The checker: lost, duplicated and unexpected outcomes, read from outside the consumer.

Like a Jepsen queue checker, it knows what was published (the catalogue) and reads the truth from
the wire and the tables: the successful balance transactions seen on the job's client (per key),
the payments table's markers and balances, every message the DLQ took in (whoever sent it), and
every copy the main queue took in. The consumer's own view (its outcomes) only says which paths
the run exercised; no invariant rests on it.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from tiered_jobs.contract.names import Attributes, DeadLetter

from .taps import Arrival

#: The outcomes the composed run must exercise (the receive ledger's rows it can reach by faults):
#: a run where one of them never happened proves nothing about it.
EXERCISED = (
    "succeeded",
    "duplicate",
    "retried",
    "dead_lettered",
    "deferred",
    "rate_limited",
    "limiter_error",
    "requeue_kept",
)


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
    #: Every message the DLQ took in without ``DeadLetter.Reason`` (SQS's redrive moved it).
    letters_without_reason: int = 0
    #: ...of which were received in an invocation that crashed (the only path allowed to do it).
    letters_without_reason_after_a_crash: int = 0
    #: Letters the consumer wrote with some of its eight reasons missing (the publisher's headroom).
    letters_missing_some_reasons: int = 0
    #: Messages of a tenant's job the main queue took in without that tenant as their group.
    copies_without_their_tenant: int = 0
    #: The consumer's own copies (held or deferred jobs) the main queue took in.
    copies: int = 0
    #: The consumer's outcomes, by receive-ledger row.
    outcomes: dict[str, int] = field(default_factory=dict)
    #: Messages moved back by the replays (``batch``, ``native``).
    replayed: dict[str, int] = field(default_factory=dict)

    def holds(self) -> bool:
        return (
            self.lost == 0
            and self.duplicated == 0
            and self.unexpected == 0
            and self.balances_ok
            and self.applied + self.dead_lettered == self.expected
            and self.dead_letters_without_reason_or_unknown == 0
            and self.letters_without_reason == self.letters_without_reason_after_a_crash
            and self.letters_missing_some_reasons == 0
            and self.copies_without_their_tenant == 0
        )

    def not_exercised(self) -> list[str]:
        """The outcomes of :data:`EXERCISED` the run never reached."""
        return [name for name in EXERCISED if not self.outcomes.get(name)]

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


@dataclass
class Observed:
    """What the run saw happen, for :func:`check`."""

    #: ``{idempotency key: successful balance transactions}``, seen on the job's client.
    applications: Counter[str]
    #: The payments table's items.
    items: list[dict[str, Any]]
    #: The letters left in the DLQ at the end.
    letters: list[dict[str, Any]]
    #: Everything the DLQ and the main queue took in.
    dlq_arrivals: list[Arrival]
    queue_arrivals: list[Arrival]
    #: Message ids received in an invocation (or an acknowledgement) that crashed.
    crashed_message_ids: set[str]
    outcomes: Counter[str]
    replayed: Counter[str]


def check(
    catalogue: dict[str, dict[str, Any]], seen: Observed, faults: dict[str, int], published: int, seconds: float
) -> Outcome:
    markers = {marker_key_of(i["account_id"]["S"]) for i in seen.items if i["account_id"]["S"].startswith("applied#")}
    balances = {
        i["account_id"]["S"]: int(i["balance"]["N"])
        for i in seen.items
        if not i["account_id"]["S"].startswith("applied#")
    }
    reasons: Counter[str] = Counter()
    dlq_keys: set[str] = set()
    missing_reason = 0
    for letter in seen.letters:
        attrs = letter.get("MessageAttributes", {})
        reason = attrs.get(DeadLetter.REASON, {}).get("StringValue", DeadLetter.REASON_UNKNOWN)
        reasons[reason] += 1
        if DeadLetter.REASON not in attrs and reason != DeadLetter.REASON_UNKNOWN:
            missing_reason += 1
        try:
            dlq_keys.add(json.loads(letter["Body"])["idempotency_key"])
        except (ValueError, KeyError):
            missing_reason += 1
    applied = set(seen.applications) | markers
    poison = {k for k, job in catalogue.items() if job["poison"]}
    expected_balance: dict[str, int] = defaultdict(int)
    for key in applied & set(catalogue):
        expected_balance[catalogue[key]["account_id"]] += catalogue[key]["amount"]
    mismatches = {
        acc: [expected_balance.get(acc, 0), balances.get(acc, 0)]
        for acc in set(balances) | set(expected_balance)
        if expected_balance.get(acc, 0) != balances.get(acc, 0)
    }
    dead_lettered = (dlq_keys - applied) & set(catalogue)
    without_reason = [a for a in seen.dlq_arrivals if DeadLetter.REASON not in a.attributes]
    ours = [a for a in seen.dlq_arrivals if DeadLetter.REASON in a.attributes]
    tenants = {key: job["tenant"] for key, job in catalogue.items() if job.get("tenant")}
    return Outcome(
        expected=len(catalogue),
        applied=len(applied & set(catalogue)),
        lost=len(set(catalogue) - applied - dlq_keys),
        duplicated=sum(1 for n in seen.applications.values() if n > 1),
        dead_lettered=len(dead_lettered),
        unexpected=len((applied - set(catalogue)) | (applied & poison) | (dlq_keys - set(catalogue))),
        poison=len(poison),
        balances_ok=not mismatches,
        balances_checked=len(balances),
        balance_mismatches=mismatches,
        dead_letter_reasons=dict(reasons),
        dead_letters_without_reason_or_unknown=missing_reason,
        redundant_dead_letters=len(dlq_keys & applied),
        faults_injected=dict(faults),
        messages_published=published,
        seconds=round(seconds, 1),
        letters_without_reason=len(without_reason),
        letters_without_reason_after_a_crash=sum(a.message_id in seen.crashed_message_ids for a in without_reason),
        letters_missing_some_reasons=sum(not set(DeadLetter.ALL) <= set(a.attributes) for a in ours),
        copies_without_their_tenant=sum(
            1 for a in seen.queue_arrivals if (key := _key(a.body)) in tenants and a.group_id != tenants[key]
        ),
        copies=sum(1 for a in seen.queue_arrivals if Attributes.PRIOR_ATTEMPTS in a.attributes),
        outcomes=dict(seen.outcomes),
        replayed=dict(seen.replayed),
    )


def marker_key_of(marker: str) -> str:
    """The idempotency key of a payments marker (``applied#<job type>#<key>``; a key may hold ``#``)."""
    return marker.split("#", 2)[2]


def _key(body: str) -> str | None:
    try:
        key = json.loads(body)["idempotency_key"]
    except (ValueError, KeyError, TypeError):
        return None
    return key if isinstance(key, str) else None
