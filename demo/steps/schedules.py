"""7. Scheduled jobs (EventBridge Scheduler, fired by the local emulation): a periodic job declared in
the demo stack's settings (:data:`DEMO_SCHEDULES`) fires, one of its fires delivered twice runs once,
and a job published for a few seconds later fires on time while a cancelled one never runs."""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta, timezone

from demo.context import Demo
from emulator.view import job_total
from tiered_jobs.contract.names import Metrics
from tiered_jobs.publisher import Publisher

#: A periodic job for the demo's stack (``schedules`` in ``cdk.json``): a rate schedule fires at
#: its creation and every minute after, so it fires within the demo without a sub-minute rate.
DEMO_SCHEDULES = {
    "demo-heartbeat": {
        "expression": "rate(1 minute)",
        "timezone": "Europe/Paris",
        "job_type": "notifications.send_email",
        "payload": {"to": "ops@example.com", "subject": "heartbeat"},
    },
}
#: How far ahead the demo asks for its one-time job (it is scheduled for the next whole minute from then).
LATER_SECONDS = 4


def scheduled_jobs(demo: Demo) -> None:
    demo.console.rule("7. Scheduled jobs: a periodic job, a job for later, a cancelled one [local emulation]")
    runner = demo.session.scheduler
    assert runner is not None, "the session is started"

    def succeeded(job_type: str = "demo.flaky") -> int:
        return job_total(demo.session, "transactional", Metrics.SUCCEEDED, job_type)

    def duplicates() -> int:
        return job_total(demo.session, "transactional", Metrics.DUPLICATE, "notifications.send_email")

    def heartbeats() -> set[datetime]:
        return {f.scheduled_time for f in runner.fires if f.schedule_name == "demo-heartbeat"}

    fired = demo.wait_for(lambda: any(f.schedule_name == "demo-heartbeat" for f in runner.fires), 65)
    demo.expect(
        "schedules",
        "the periodic job declared in the settings fired into its tier queue",
        fired,
        f"{len(heartbeats())} fire(s) so far, rate(1 minute) since deployment",
    )
    email = "notifications.send_email"

    def runs() -> int:  # an answer from the idempotency store counts as succeeded and duplicate
        return succeeded(email) - duplicates()

    # Earlier steps' e-mails (step 2, the rate-limited ones) and the fires so far have all run first.
    demo.wait_for(lambda: demo.drained("transactional"), 15)
    before_runs, before_dup, before_fires = runs(), duplicates(), heartbeats()
    schedule = next(s for s in runner.schedules() if s["Name"] == "demo-heartbeat")
    first = next(f for f in runner.fires if f.schedule_name == "demo-heartbeat")
    runner.fire(schedule, first.scheduled_time)  # Scheduler delivers at least once: the same fire again
    absorbed = demo.wait_for(lambda: duplicates() == before_dup + 1, 15)
    # One run per distinct scheduled time: none for the repeated fire (a new minute's fire may land meanwhile).
    ran_once = demo.wait_for(lambda: runs() == before_runs + len(heartbeats() - before_fires), 5)
    demo.expect(
        "schedules",
        "a fire delivered twice ran once (same key: schedule name + scheduled time)",
        absorbed and ran_once and before_fires <= heartbeats(),
        f"key schedule:demo-heartbeat:{first.scheduled_time.astimezone(timezone.utc):%Y-%m-%dT%H:%M:%SZ}",
    )
    # Jobs due within 15 minutes normally use SQS's own delay; this publisher sends every later
    # job through a one-time schedule so the demo shows that path in seconds, not 15 minutes.
    before_ok = succeeded()
    later = Publisher.from_stage(
        demo.deployment.stage,
        ssm=demo.session.clients("ssm"),
        sqs=demo.session.clients("sqs"),
        scheduler=demo.session.clients("scheduler"),
        schedule_beyond_seconds=0,
    )
    asked = datetime.now(timezone.utc) + timedelta(seconds=LATER_SECONDS)
    job = later.publish("demo.flaky", {"fail_times": 0}, "later-1", at=asked)
    cancelled = later.publish("demo.flaky", {"fail_times": 0}, "later-2", at=asked)
    again = later.publish("demo.flaky", {"fail_times": 0}, "later-1", at=asked)
    demo.expect("schedules", "publishing the same job for later again is a no-op", again.already_scheduled)
    demo.expect("schedules", "a pending job can be cancelled", later.cancel("demo.flaky", "later-2"))
    # Scheduler fires an at() anywhere within its minute, so the publisher rounds up to the next whole one.
    at = job.fire_at or asked
    demo.console.print(
        f"  waiting for {at:%H:%M:%S} UTC: a job asked for {LATER_SECONDS} s ahead is scheduled "
        "for the next whole minute, so it never runs early"
    )
    fired = demo.wait_for(
        lambda: any(f.schedule_name == job.schedule_name for f in runner.fires),
        (at - datetime.now(timezone.utc)).total_seconds() + 15,
    )
    ran = demo.wait_for(lambda: succeeded() >= before_ok + 1, 15)
    fire = next((f for f in runner.fires if f.schedule_name == job.schedule_name), None)
    demo.expect(
        "schedules",
        "the job scheduled for the next whole minute fired on time and ran",
        fired and ran and fire is not None and fire.scheduled_time == at and 0 <= fire.lag_seconds < 2,
        f"{fire.lag_seconds * 1000:+.0f} ms after its time" if fire else "not fired",
    )
    demo.expect(
        "schedules",
        "its one-time schedule deleted itself; the cancelled job never fired",
        all(s["Name"] != job.schedule_name for s in runner.schedules())
        and not any(f.schedule_name == cancelled.schedule_name for f in runner.fires),
    )
    lags = [f.lag_seconds * 1000 for f in runner.fires if f.schedule_name.startswith("once-")]
    if lags:
        demo.figures["one-time fire lag vs scheduled time (local emulation)"] = (
            f"{statistics.median(lags):.0f} ms p50, {max(lags):.0f} ms max ({len(lags)} fire(s))"
        )
