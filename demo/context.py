"""What every step of the demo shares: the started session, the console, the expectations checked so
far, the figures for the summary, the balances the payments must add up to, and the few questions
the steps ask of the embedded AWS (is a queue drained, how deep is a DLQ, what are the balances).

The steps are functions of a :class:`Demo` rather than methods of one class so that each reads on
its own (``demo/steps/``); what two or more of them ask lives here, once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rich.console import Console

from demo.inbox import Inbox
from emulator.deploy import LocalDeployment
from emulator.esm import EventSourceRuntime
from emulator.session import LocalSession
from emulator.view import queue_counts
from tiered_jobs.contract.names import Env
from tiered_jobs.publisher import Publisher

#: The accounts the payments go to (the payments, probes and incident steps all pay them).
ACCOUNT_IDS = ("acc_alice", "acc_bob", "acc_carol", "acc_dave")


@dataclass
class Expectation:
    step: str
    claim: str
    ok: bool
    detail: str = ""


@dataclass
class Demo:
    session: LocalSession
    console: Console
    expectations: list[Expectation] = field(default_factory=list)
    figures: dict[str, str] = field(default_factory=dict)
    expected_balances: dict[str, int] = field(default_factory=dict)
    #: What a step leaves for a later one, by name (the circuit breaker opens in one step, closes in another).
    handoffs: dict[str, Any] = field(default_factory=dict)
    inbox: Inbox = field(init=False)

    def __post_init__(self) -> None:
        self.inbox = Inbox(self.session)

    @property
    def deployment(self) -> LocalDeployment:
        """What the started session deployed."""
        assert self.session.deployment is not None, "the session is started"
        return self.session.deployment

    @property
    def runtime(self) -> EventSourceRuntime:
        """The started session's event source mappings."""
        assert self.session.runtime is not None, "the session is started"
        return self.session.runtime

    @cached_property
    def publisher(self) -> Publisher:
        # Discovery exactly as another service would do it: the stage's SSM parameters.
        return Publisher.from_stage(
            self.deployment.stage, ssm=self.session.clients("ssm"), sqs=self.session.clients("sqs")
        )

    # -- what the story claims ---------------------------------------------------------

    def expect(self, step: str, claim: str, ok: bool, detail: str = "") -> bool:
        self.expectations.append(Expectation(step, claim, ok, detail))
        mark = "[green]✓[/green]" if ok else "[red]✗[/red]"
        self.console.print(f"  {mark} {claim}" + (f" [dim]({detail})[/dim]" if detail else ""))
        return ok

    @property
    def passed(self) -> bool:
        """Every expectation so far held."""
        return all(e.ok for e in self.expectations)

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            time.sleep(0.25)
        return condition()

    # -- what the steps ask of the embedded AWS ------------------------------------------

    def tier(self, name: str) -> Any:
        return self.deployment.tiers[name]

    def drained(self, tier: str) -> bool:
        return queue_counts(self.session, self.tier(tier).queue_url) == (0, 0)

    def dlq_depth(self, tier: str) -> int:
        return sum(queue_counts(self.session, self.tier(tier).dlq_url))

    def payments_table(self) -> str:
        """The resource the payments job writes to: the one table ``cdk.json`` gives the critical tier's
        consumer (read from its environment, as the job does; the emulator never imports the app's jobs)."""
        (name,) = Env.resources_in(self.tier("critical").consumer.environment)
        return name

    def balances(self) -> dict[str, int]:
        dynamodb = self.session.clients("dynamodb")
        found = {}
        table = self.deployment.resources[self.payments_table()]
        for account in ACCOUNT_IDS:
            item = dynamodb.get_item(TableName=table, Key={"account_id": {"S": account}}, ConsistentRead=True).get(
                "Item"
            )
            found[account] = int(item["balance"]["N"]) if item else 0
        return found

    def pay(self, prefix: str, count: int, copies: Callable[[int], int]) -> None:
        """Publish ``count`` payments, the i-th ``copies(i)`` times, and add each once to the expected balances."""
        jobs = []
        for i in range(count):
            account, amount = ACCOUNT_IDS[i % len(ACCOUNT_IDS)], 100 * (i + 1)
            self.expected_balances[account] = self.expected_balances.get(account, 0) + amount
            job = {
                "job_type": "payments.update_balance",
                "idempotency_key": f"{prefix}-{i}",
                "payload": {"account_id": account, "amount": amount},
            }
            jobs.extend([job] * copies(i))
        self.publisher.publish_batch(jobs)

    def new_latencies(self, tier: str, before: int) -> list[float]:
        stats = self.runtime.by_function(self.tier(tier).consumer.name).stats.snapshot()
        latencies: list[float] = stats["latencies_ms"][before:]
        return latencies

    def latency_mark(self, tier: str) -> int:
        return len(self.runtime.by_function(self.tier(tier).consumer.name).stats.snapshot()["latencies_ms"])
