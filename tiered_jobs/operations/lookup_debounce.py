"""A debounced job's runs: each burst runs once under a key of its own, the publish's key and the run's minute
(``KEY@2026-12-07T19:30Z``, :func:`tiered_jobs.contract.schedules.debounced_run_key`), so ``KEY`` itself
never has an idempotency record.

Nothing lists those runs: the idempotency table's key is a hash of type and key, so no query finds them by
prefix, and what the publisher writes for a debounced job (its one-time schedule) is deleted once it fires.
Adding a write per publish to remember them would cost every debounced publish; instead the lookup asks
for the record of each minute of the last hours (one ``BatchGetItem`` per 100 minutes: 15 calls for the
default 24 hours, only when ``KEY`` has no record) and says how far back it looked.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..contract.idempotency import RecordAttributes, record_id
from ..contract.schedules import debounced_run_key, debounced_run_key_problem
from ..stage.target import Target

#: How far back the lookup looks for a debounced key's runs, by default.
DEFAULT_HOURS = 24
#: DynamoDB's limit of keys per ``BatchGetItem``.
BATCH_KEYS = 100
#: ``UnprocessedKeys`` (DynamoDB answers part of a batch under load) asked again at most this many times.
RETRIES = 5


@dataclass(frozen=True)
class RunSearch:
    """Which minutes were looked at for a debounced key's runs, and the run keys that have a record."""

    since: datetime
    until: datetime
    run_keys: list[str]
    #: Minutes DynamoDB left unanswered after the retries (their runs are not known).
    unanswered: int = 0


def find_runs(
    target: Target,
    job_type: str,
    key: str,
    *,
    hours: float = DEFAULT_HOURS,
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], object] = time.sleep,
) -> RunSearch | None:
    """The run keys of ``key``'s debounced runs of the last ``hours`` (``None``: too long a key to debounce)."""
    if debounced_run_key_problem(key) is not None:
        return None
    table = target.deployment().idempotency_table_name
    until = datetime.fromtimestamp(now(), timezone.utc).replace(second=0, microsecond=0)
    since = until - timedelta(hours=hours)
    keys: dict[str, str] = {}  # record id -> run key
    minute = since
    while minute <= until:
        run_key = debounced_run_key(key, minute)
        keys[record_id(job_type, run_key)] = run_key
        minute += timedelta(minutes=1)
    dynamodb = target.client("dynamodb")
    ids = list(keys)
    found: set[str] = set()
    unanswered = 0
    for start in range(0, len(ids), BATCH_KEYS):
        asked = [{RecordAttributes.KEY: {"S": rid}} for rid in ids[start : start + BATCH_KEYS]]
        for attempt in range(RETRIES + 1):
            answer = dynamodb.batch_get_item(
                RequestItems={
                    table: {
                        "Keys": asked,
                        "ConsistentRead": True,
                        "ProjectionExpression": "#id",
                        "ExpressionAttributeNames": {"#id": RecordAttributes.KEY},
                    }
                }
            )
            found.update(item[RecordAttributes.KEY]["S"] for item in answer.get("Responses", {}).get(table, []))
            asked = answer.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
            if not asked or attempt == RETRIES:
                break
            sleep(random.uniform(0, 0.05 * 2**attempt))  # full jitter, as AWS advises for unprocessed keys
        unanswered += len(asked)
    runs = [keys[rid] for rid in ids if rid in found]
    return RunSearch(since, until, runs, unanswered)
