"""Counting AWS API calls with botocore's event hooks (no estimates).

``before-parameter-build`` fires once per API call (retries of the same call are not new
requests to the caller) and carries the call's own parameters, so calls are also counted per
DynamoDB table.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class CallCounter:
    """Attach to clients; ``counts[("sqs", "SendMessageBatch")]`` is the number of requests."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self.tables: Counter[tuple[str, str]] = Counter()

    def attach(self, client: Any) -> Any:
        client.meta.events.register("before-parameter-build", self._count)
        return client

    def _count(self, model: Any, params: dict, **_: Any) -> None:
        service = model.service_model.service_name
        self.counts[(service, model.name)] += 1
        table = params.get("TableName") if isinstance(params, dict) else None
        if table:
            self.tables[(table, model.name)] += 1
        elif model.name == "TransactWriteItems":  # one request, counted once per table it writes
            tables = {op["TableName"] for item in params.get("TransactItems", []) for op in item.values()}
            for name in tables:
                self.tables[(name, model.name)] += 1

    def total(self, service: str) -> int:
        return sum(n for (svc, _), n in self.counts.items() if svc == service)

    def by_operation(self, service: str) -> dict[str, int]:
        return {op: n for (svc, op), n in sorted(self.counts.items()) if svc == service}

    def by_table(self, table: str) -> dict[str, int]:
        return {op: n for (t, op), n in sorted(self.tables.items()) if t == table}

    def reset(self) -> None:
        self.counts.clear()
        self.tables.clear()
