"""What ``ctx.progress`` and ``ctx.checkpoint`` cost when used, against the base path, counted on moto.

Per 1 000 jobs, the consumer's calls (its clients counted by botocore's hooks), for:

- **base**: a job that returns at once (Powertools' conditional ``PutItem`` and completing ``UpdateItem``);
- **progress, within one interval**: the job calls ``ctx.progress`` 20 times within its interval
  (5 s): the first call is written at once, the rest coalesced and the last written at the end, so
  2 ``UpdateItem`` more per job whatever the number of calls;
- **progress, every call** (``progress_every_seconds=0``): one ``UpdateItem`` per call, the price of
  a job that asks for it;
- **three steps**: the job checkpoints twice (steps 0, 1, 2): each later step is claimed and completed
  on its record (an ``UpdateItem`` each, as Powertools' two writes for step 0), and each checkpoint
  sends the next step (one ``SendMessageBatch`` request of one entry: the copies' one sender) and
  writes its step and state (``UpdateItem``).

A running job's progress costs at most one write unit per interval: :func:`progress_usd_per_job_hour`.
"""

from __future__ import annotations

from typing import Any

from tests.support.tier import create_tier

from .calls import CallCounter
from .cost import PRICES

CALLS_PER_JOB = 20
STEPS = 3


def measure(jobs: int = 200) -> dict[str, Any]:
    from moto import mock_aws

    with mock_aws():
        return _measure(jobs)


def _measure(jobs: int) -> dict[str, Any]:
    from aws_lambda_powertools import Logger

    from tiered_jobs.contract.envelope import build
    from tiered_jobs.runtime import consumer as consumer_module
    from tiered_jobs.runtime.consumer import Consumer
    from tiered_jobs.runtime.registry import JobRegistry

    quiet = Logger(service="bench-steps", level="WARNING")  # a line per job is not what is measured
    tier = create_tier("steps")
    counter = CallCounter()
    clients = {"sqs": counter.attach(tier.sqs), "dynamodb": counter.attach(tier.dynamodb)}
    registry = JobRegistry()
    registry.job("bench.noop")(lambda payload, ctx: {"ok": True})

    def report(payload: dict[str, Any], ctx: Any) -> dict[str, Any]:
        for done in range(CALLS_PER_JOB):
            ctx.progress(done + 1, CALLS_PER_JOB)
        return {"ok": True}

    registry.job("bench.progress")(report)
    registry.job("bench.progress_every_call", progress_every_seconds=0)(report)

    @registry.job("bench.steps")
    def steps(payload: dict[str, Any], ctx: Any) -> Any:
        return ctx.checkpoint({"cursor": ctx.step + 1}) if ctx.step < STEPS - 1 else {"steps": STEPS}

    def consume(job_type: str) -> dict[str, float]:
        """Run ``jobs`` of ``job_type`` through a fresh consumer; its calls per 1 000 jobs (not the mapping's)."""
        consumer = Consumer(tier.config(), registry, client=clients.__getitem__, logger=quiet)
        for n in range(jobs):
            tier.send_raw(build(job_type, {}, f"{job_type}-{n}").to_json())
        counter.reset()
        while messages := tier.receive_for_batch():
            tier.run_messages(consumer, messages)
        calls = {f"{svc}:{op}": n for (svc, op), n in counter.counts.items() if op not in _MAPPING}
        return {op: round(n * 1000 / jobs, 1) for op, n in sorted(calls.items()) if n}

    # The next step is delayed 1 s in production (its record's write lands first); here at once.
    delay = getattr(consumer_module, "CONTINUATION_DELAY_SECONDS")  # noqa: B009 -- set back below
    setattr(consumer_module, "CONTINUATION_DELAY_SECONDS", 0)  # noqa: B010
    try:
        base = consume("bench.noop")
        progress = consume("bench.progress")
        every_call = consume("bench.progress_every_call")
        stepped = consume("bench.steps")
    finally:
        setattr(consumer_module, "CONTINUATION_DELAY_SECONDS", delay)  # noqa: B010

    def more(per_1000: dict[str, float], times: float = 1.0) -> dict[str, float]:
        ops = set(per_1000) | set(base)
        return {op: round(per_1000.get(op, 0) - times * base.get(op, 0), 1) for op in sorted(ops)}

    def writes(per_1000: dict[str, float]) -> float:
        return per_1000.get("dynamodb:PutItem", 0) + per_1000.get("dynamodb:UpdateItem", 0)

    # A later step's claim and completion stand for Powertools' PutItem and UpdateItem: a run's two writes.
    checkpoints = (STEPS - 1) * 1000
    per_step = {
        "dynamodb_writes": round((writes(stepped) - STEPS * writes(base)) / checkpoints, 2),
        "sqs_requests": round(stepped.get("sqs:SendMessageBatch", 0) / checkpoints, 2),
    }
    return {
        "jobs": jobs,
        "consumer_calls_per_1000": {
            "base": base,
            f"progress_{CALLS_PER_JOB}_calls_within_the_interval": progress,
            "progress_every_call": every_call,
            f"{STEPS}_steps": stepped,
        },
        "progress_writes_per_job": more(progress).get("dynamodb:UpdateItem", 0) / 1000,
        "progress_writes_per_job_every_call": more(every_call).get("dynamodb:UpdateItem", 0) / 1000,
        #: What a checkpoint adds to the runs its steps take (each run costs a job's own two writes).
        "per_step_beyond_its_run": per_step,
        "usd_per_million_steps_beyond_their_runs": round(
            per_step["dynamodb_writes"] * PRICES["dynamodb_per_million_write_units"]
            + per_step["sqs_requests"] * PRICES["sqs_per_million_requests"],
            3,
        ),
        "progress_usd_per_job_hour": progress_usd_per_job_hour(),
    }


#: The event source mapping's own calls, which the consumer does not make.
_MAPPING = ("ReceiveMessage", "DeleteMessage", "DeleteMessageBatch")


def progress_usd_per_job_hour(interval_seconds: float = 5.0) -> float:
    """A job reporting all the time for an hour: one write unit (under 1 KB) per interval."""
    return round(3600 / interval_seconds * PRICES["dynamodb_per_million_write_units"] / 1e6, 6)


if __name__ == "__main__":
    import json
    import os

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    print(json.dumps(measure(), indent=2))
