"""SendMessageBatch calls: per tier's queue, at most 10 entries and 1 MiB in all, greedy and in order."""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES
from tiered_jobs.contract.sqs_limits import (
    MAX_JOB_MESSAGE_BYTES,
    RUNTIME_ATTRIBUTES_HEADROOM_BYTES,
    pack_batches,
)

from ..case import Case, case


def batch_chunks() -> list[Case]:
    kb = 1000
    layouts: list[tuple[str, str, list[tuple[str, int]]]] = [
        ("one", "one entry, one call", [("critical", 200)]),
        ("ten", "ten entries fill one call", [("critical", 200)] * 10),
        ("eleven", "the eleventh entry starts a second call", [("critical", 200)] * 11),
        ("twenty-five", "every ten, in order", [("critical", 200)] * 25),
        ("bytes", "three of 400 kB: two fit in 1 MiB, the third goes alone", [("critical", 400 * kb)] * 3),
        (
            "exactly-1-mib",
            "two halves of 1 MiB fit: the call's limit is inclusive",
            [("critical", SQS_MAX_MESSAGE_BYTES // 2)] * 2,
        ),
        (
            "one-byte-over",
            "one byte past 1 MiB in all starts a new call",
            [("critical", SQS_MAX_MESSAGE_BYTES // 2), ("critical", SQS_MAX_MESSAGE_BYTES // 2 + 1)],
        ),
        ("ten-near-limit", "ten entries of 104 857 bytes: 1 048 570 in all, one call", [("critical", 104_857)] * 10),
        ("ten-over-limit", "ten of 104 858: 1 048 580 in all, nine then one", [("critical", 104_858)] * 10),
        (
            "greedy-in-order",
            "greedy and in order: no entry is moved to fill a call",
            [("critical", 500 * kb), ("critical", 600 * kb), ("critical", 400 * kb)],
        ),
        (
            "largest-job",
            "the largest job and the runtime's headroom make exactly 1 MiB",
            [("critical", MAX_JOB_MESSAGE_BYTES), ("critical", RUNTIME_ATTRIBUTES_HEADROOM_BYTES)],
        ),
        (
            "per-queue",
            "each tier's queue is chunked on its own, tiers in first-seen order",
            [("bulk", 200), ("critical", 200), ("bulk", 200), ("critical", 200)],
        ),
    ]
    return [
        case(name, text, {"entries": [{"tier": tier, "bytes": size} for tier, size in entries]}, _chunks(entries))
        for name, text, entries in layouts
    ]


def _chunks(entries: list[tuple[str, int]]) -> dict[str, Any]:
    by_tier: dict[str, list[int]] = {}
    for index, (tier, _) in enumerate(entries):
        by_tier.setdefault(tier, []).append(index)
    calls = [
        {"tier": tier, "entries": chunk}
        for tier, indexes in by_tier.items()
        for chunk in pack_batches(indexes, lambda index: entries[index][1])
    ]
    return {"calls": calls, "limits": {"entries": SQS_MAX_BATCH_ENTRIES, "bytes": SQS_MAX_MESSAGE_BYTES}}
