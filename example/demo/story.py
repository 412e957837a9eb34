"""``python -m example.demo`` (``make demo``): this repository's app, its whole story on the embedded AWS
(about two minutes).

1. payments, each published two or three times -> every balance ends exactly right;
2. e-mails, three with invalid addresses -> the publisher refuses them (payload schema); sent raw
   anyway, as a publisher skipping the schema would, they are dead-lettered at once (``permanent``);
3. transient outages (``demo.flaky``) -> retried with backoff (1 s, 2 s) then succeed;
4. an analytics flood on the bulk tier -> the critical tier's latency stays low (measured);
   a rate limit: e-mails held to their provider's rate (5/s here) while payments go through at once;
5. a bad deploy (the critical consumer pointed at a missing ledger table) -> payments are
   dead-lettered, the critical DLQ alarm goes to ALARM and pages the on-call inbox;
6. inspect (the replay function) -> fix (roll the configuration back) -> replay -> the same
   payments apply exactly once, the DLQ empties and the alarm returns to OK;
7. scheduled jobs (EventBridge Scheduler, fired by the local emulation): a periodic job declared
   in the settings fires, one of its fires delivered twice runs once, and a job published for a
   few seconds later fires on time while a cancelled one never runs.

Every step checks what it claims, and so does the end: the final table's alarms are checked
against :data:`STORY_ALARMS`, the only alarms the story may leave in ALARM; any other alarm in
ALARM (or without data) fails the run. The exit code is non-zero if any expectation failed.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cached_property
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from emulator.deploy import LocalDeployment
from emulator.esm import EventSourceRuntime
from emulator.session import LocalSession
from emulator.view import TierRow, job_total, queue_counts, rows, safe_table, table
from tiered_jobs.contract import envelope
from tiered_jobs.contract.names import Alarms, DeadLetter, Env, Metrics
from tiered_jobs.publisher import InvalidJobError, Publisher

ACCOUNT_IDS = ("acc_alice", "acc_bob", "acc_carol", "acc_dave")
INVALID_ADDRESSES = ("not-an-address", "bob@", "@example.com")
FLOOD_EVENTS = 400
PROBES = 10
#: The e-mail provider's rate in the demo (the transactional tier's limit for notifications.send_email).
EMAIL_RATE = 5
RATE_LIMITED_EMAILS = 40
#: The demo's stack: cdk.json's tiers, the transactional one with the e-mail provider's limit.
DEMO_SETTINGS: dict[str, Any] = {"tiers": {
    "critical": {}, "bulk": {},
    "transactional": {"rate_limits": {"notifications.send_email": {"per_second": EMAIL_RATE, "burst": 1}}},
}}
#: The bad deploy's ledger table: it does not exist.
MISSING_TABLE = "payments-ledger-typo"
#: The alarms the story itself may leave in ALARM at the end, and why: jobs it makes fail for good
#: count in their tier's failure rate. Every other alarm must end OK (the critical DLQ alarm is
#: back to OK after the replay; retried-then-successful jobs never page).
STORY_ALARMS: dict[tuple[str, str], str] = {
    ("critical", Alarms.FAILURE_RATE): "the bad deploy dead-lettered 4 payments (failed jobs, replayed later)",
    ("transactional", Alarms.FAILURE_RATE): "3 e-mails to invalid addresses were dead-lettered (failed jobs)",
}
#: A periodic job for the demo's stack (``schedules`` in ``cdk.json``): a rate schedule fires at
#: its creation and every minute after, so it fires within the demo without a sub-minute rate.
DEMO_SCHEDULES = {
    "demo-heartbeat": {"expression": "rate(1 minute)", "timezone": "Europe/Paris",
                       "job_type": "notifications.send_email",
                       "payload": {"to": "ops@example.com", "subject": "heartbeat"}},
}
#: How far ahead the demo asks for its one-time job (it is scheduled for the next whole minute from then).
LATER_SECONDS = 4


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
    #: The on-call inbox: an SQS queue subscribed to the alarm topic, and the states it announced.
    inbox_url: str = ""
    inbox: list[str] = field(default_factory=list)

    # -- plumbing ------------------------------------------------------------------------

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
        return Publisher.from_stage(self.deployment.stage, ssm=self.session.clients("ssm"),
                                    sqs=self.session.clients("sqs"))

    def expect(self, step: str, claim: str, ok: bool, detail: str = "") -> bool:
        self.expectations.append(Expectation(step, claim, ok, detail))
        mark = "[green]✓[/green]" if ok else "[red]✗[/red]"
        self.console.print(f"  {mark} {claim}" + (f" [dim]({detail})[/dim]" if detail else ""))
        return ok

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            time.sleep(0.25)
        return condition()

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
            item = dynamodb.get_item(TableName=table,
                                     Key={"account_id": {"S": account}}, ConsistentRead=True).get("Item")
            found[account] = int(item["balance"]["N"]) if item else 0
        return found

    def alarm_state(self, tier: str, kind: str) -> str:
        name = Alarms.name(self.deployment.stage, tier, kind)
        alarm = self.session.clients("cloudwatch").describe_alarms(AlarmNames=[name])["MetricAlarms"][0]
        state: str = alarm["StateValue"]
        return state

    def pay(self, prefix: str, count: int, copies: Callable[[int], int]) -> None:
        jobs = []
        for i in range(count):
            account, amount = ACCOUNT_IDS[i % len(ACCOUNT_IDS)], 100 * (i + 1)
            self.expected_balances[account] = self.expected_balances.get(account, 0) + amount
            job = {"job_type": "payments.update_balance", "idempotency_key": f"{prefix}-{i}",
                   "payload": {"account_id": account, "amount": amount}}
            jobs.extend([job] * copies(i))
        self.publisher.publish_batch(jobs)

    def new_latencies(self, tier: str, before: int) -> list[float]:
        stats = self.runtime.by_function(self.tier(tier).consumer.name).stats.snapshot()
        latencies: list[float] = stats["latencies_ms"][before:]
        return latencies

    def latency_mark(self, tier: str) -> int:
        return len(self.runtime.by_function(self.tier(tier).consumer.name).stats.snapshot()["latencies_ms"])

    # -- the story -----------------------------------------------------------------------

    def payments_with_duplicates(self) -> None:
        self.console.rule("1. Payments, each published 2-3 times (critical)")
        self.pay("pay", 12, copies=lambda i: 3 if i % 3 == 0 else 2)
        self.wait_for(lambda: self.drained("critical") and self.balances() == self.expected_balances, 30)
        balances = self.balances()
        self.expect("payments", "every balance is exactly the sum of its unique payments",
                    balances == self.expected_balances, json.dumps(balances))
        duplicates = job_total(self.session, "critical", Metrics.DUPLICATE)
        self.expect("payments", "duplicates were recognised, not re-applied", duplicates >= 16,
                    f"{duplicates} duplicate deliveries absorbed")

    def emails(self) -> None:
        self.console.rule("2. E-mails, three with invalid addresses (transactional)")
        jobs = [{"job_type": "notifications.send_email", "idempotency_key": f"mail-{i}",
                 "payload": {"to": f"user{i}@example.com", "subject": "Your receipt"}} for i in range(8)]
        bad: list[dict[str, Any]] = [{"job_type": "notifications.send_email", "idempotency_key": f"bad-mail-{i}",
                "payload": {"to": address, "subject": "Your receipt"}} for i, address in enumerate(INVALID_ADDRESSES)]
        self.publisher.publish_batch(jobs)
        try:
            self.publisher.publish_batch(bad)
            refused = ""
        except InvalidJobError as error:
            refused = str(error)
        self.expect("e-mails", "the publisher refused the invalid addresses by the payload schema, sending nothing",
                    refused.count("payload field 'to' must match") == len(bad), refused[:120])
        # A publisher that skips the schema (raw SendMessage from another language) still gets them in:
        sqs = self.session.clients("sqs")
        for job in bad:
            body = envelope.build(job["job_type"], job["payload"], job["idempotency_key"]).to_json()
            sqs.send_message(QueueUrl=self.tier("transactional").queue_url, MessageBody=body)
        self.wait_for(lambda: self.drained("transactional") and self.dlq_depth("transactional") >= 3, 20)
        letters = self.peek_dlq("transactional")
        reasons = sorted((m[DeadLetter.REASON], m[DeadLetter.ATTEMPTS], m[DeadLetter.ERROR_TYPE]) for m in letters)
        self.expect("e-mails", "the 3 invalid addresses were dead-lettered on their first attempt, reason permanent",
                    reasons == [("permanent", "1", "PayloadValidationError")] * 3, f"{reasons}")

    def peek_dlq(self, tier: str) -> list[dict[str, str]]:
        """The DLQ letters' DeadLetter.* attributes (received and released at once)."""
        sqs, url = self.session.clients("sqs"), self.tier(tier).dlq_url
        letters = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                      VisibilityTimeout=0).get("Messages", [])
        return [{k: v.get("StringValue") for k, v in m.get("MessageAttributes", {}).items()} for m in letters]

    def transient_outages(self) -> None:
        self.console.rule("3. Transient outages: demo.flaky fails twice, then succeeds (transactional)")
        self.publisher.publish_batch([
            {"job_type": "demo.flaky", "idempotency_key": f"flaky-{i}", "payload": {"fail_times": 2}}
            for i in range(3)
        ])

        def done() -> bool:
            return job_total(self.session, "transactional", Metrics.SUCCEEDED, "demo.flaky") >= 3

        started = time.monotonic()
        self.wait_for(done, 30)
        retried = job_total(self.session, "transactional", Metrics.RETRIED, "demo.flaky")
        self.expect("outages", "each flaky job was retried twice with backoff, then succeeded",
                    done() and retried == 6, f"{retried} retries, done in {time.monotonic() - started:.1f} s")
        self.expect("outages", "nothing more reached the DLQ", self.dlq_depth("transactional") == 3)

    def probe_critical(self, prefix: str) -> list[float]:
        """Publish small payments one by one; their end-to-end latencies (publish -> deleted), in ms."""
        mark = self.latency_mark("critical")
        for i in range(PROBES):
            self.publisher.publish(
                "payments.update_balance", {"account_id": ACCOUNT_IDS[0], "amount": 1}, f"{prefix}-{i}"
            )
            self.expected_balances[ACCOUNT_IDS[0]] += 1
            time.sleep(0.2)
        self.wait_for(lambda: len(self.new_latencies("critical", mark)) >= PROBES, 20)
        return self.new_latencies("critical", mark)

    def flood(self) -> None:
        self.console.rule(f"4. An analytics flood of {FLOOD_EVENTS} events on the bulk tier, critical keeps going")
        baseline = self.probe_critical("probe-quiet")
        flooding = threading.Thread(target=self.publisher.publish_batch, args=([
            {"job_type": "analytics.record_event", "idempotency_key": f"evt-{i}", "payload": {"event": "page_view"}}
            for i in range(FLOOD_EVENTS)
        ],), name="demo-flood")
        started = time.monotonic()
        flooding.start()
        during = self.probe_critical("probe-flood")
        bulk_backlog = sum(queue_counts(self.session, self.tier("bulk").queue_url))
        flooding.join()
        self.wait_for(lambda: self.drained("bulk"), 90)
        drain = time.monotonic() - started
        quiet_p50, flood_p50 = statistics.median(baseline), statistics.median(during)
        self.figures["critical latency, quiet (p50 / max)"] = f"{quiet_p50:.0f} / {max(baseline):.0f} ms"
        self.figures["critical latency, during flood (p50 / max)"] = f"{flood_p50:.0f} / {max(during):.0f} ms"
        self.figures["bulk flood drained in"] = f"{drain:.1f} s ({FLOOD_EVENTS} events)"
        self.expect("flood", "the bulk tier had a backlog while the critical probes ran",
                    bulk_backlog > 0 or drain > 2, f"{bulk_backlog} bulk messages still queued after the probes")
        self.expect("flood", "critical latency during the flood stayed under 2 s (p50)", flood_p50 < 2000,
                    f"p50 {flood_p50:.0f} ms vs {quiet_p50:.0f} ms quiet")
        self.expect("flood", f"all {FLOOD_EVENTS} analytics events were processed",
                    job_total(self.session, "bulk", Metrics.SUCCEEDED) >= FLOOD_EVENTS)

    def rate_limited_emails(self) -> None:
        self.console.rule(f"A rate limit: {RATE_LIMITED_EMAILS} e-mails at {EMAIL_RATE}/s (the provider's limit), "
                          "payments alongside")
        sent = job_total(self.session, "transactional", Metrics.SUCCEEDED, "notifications.send_email")
        mark = self.latency_mark("critical")
        started = time.monotonic()
        self.publisher.publish_batch(
            [
                {
                    "job_type": "notifications.send_email",
                    "idempotency_key": f"limited-mail-{i}",
                    "payload": {"to": f"user{i}@example.com", "subject": "Your statement"},
                }
                for i in range(RATE_LIMITED_EMAILS)
            ]
        )
        self.pay("limited-pay", 8, copies=lambda _: 1)
        payments_done = self.wait_for(lambda: len(self.new_latencies("critical", mark)) >= 8, 20)
        payments_seconds = time.monotonic() - started

        def emails_done() -> bool:
            return job_total(self.session, "transactional", Metrics.SUCCEEDED, "notifications.send_email") - sent \
                >= RATE_LIMITED_EMAILS

        finished = self.wait_for(emails_done, 3 * RATE_LIMITED_EMAILS / EMAIL_RATE)
        elapsed = time.monotonic() - started
        rate = RATE_LIMITED_EMAILS / elapsed
        held = job_total(self.session, "transactional", Metrics.RATE_LIMITED, "notifications.send_email")
        self.figures[f"e-mails at a {EMAIL_RATE}/s limit"] = (
            f"{RATE_LIMITED_EMAILS} in {elapsed:.1f} s = {rate:.2f}/s ({held} re-sent with a delay)")
        self.expect("rate limit", f"all {RATE_LIMITED_EMAILS} e-mails were delivered, none failed",
                    finished and self.dlq_depth("transactional") == len(INVALID_ADDRESSES))
        self.expect("rate limit", f"e-mails went out no faster than {EMAIL_RATE}/s (+20 %)",
                    rate <= EMAIL_RATE * 1.2, f"{rate:.2f}/s over {elapsed:.1f} s")
        self.expect("rate limit", "payments published with them were done within 5 s (no limit on them)",
                    payments_done and payments_seconds < 5, f"{payments_seconds:.1f} s")

    def bad_deploy_and_replay(self) -> None:
        self.console.rule("5. A bad deploy: the critical consumer points at a missing ledger table")
        consumer = self.tier("critical").consumer
        good_environment = dict(consumer.environment)
        self.session.update_function_configuration(
            consumer.name, {**good_environment, Env.resource_var(self.payments_table()): MISSING_TABLE})
        before = dict(self.expected_balances)
        self.pay("incident", 4, copies=lambda _: 1)
        self.wait_for(lambda: self.dlq_depth("critical") >= 4, 20)
        self.expect("incident", "the failing payments went to the critical DLQ", self.dlq_depth("critical") == 4)
        self.expect("incident", "no balance changed while the ledger was unreachable",
                    self.balances() == before)
        fired = self.wait_for(lambda: self.alarm_state("critical", Alarms.DLQ_DEPTH) == "ALARM", 20)
        self.expect("incident", "the critical DLQ alarm went to ALARM", fired)
        self.expect("incident", "the on-call inbox got the ALARM notification (SNS -> SQS)",
                    self.wait_for(lambda: "ALARM" in self.inbox_states(), 10))

        self.console.rule("6. Inspect -> fix -> replay")
        inspected = self.session.invoke(self.deployment.replay, {"action": "inspect", "tier": "critical"})
        groups = (inspected.response or {}).get("groups", [])
        self.show_groups(groups)
        self.expect("replay", "inspect groups the letters by job type and error",
                    [(g["job_type"], g["error_type"], g["count"]) for g in groups]
                    == [("payments.update_balance", "ResourceNotFoundException", 4)])
        self.session.update_function_configuration(consumer.name, good_environment)
        self.console.print("  fix deployed: the consumer's configuration rolled back (UpdateFunctionConfiguration)")
        replayed = self.session.invoke(self.deployment.replay, {"action": "replay", "tier": "critical"})
        moved = (replayed.response or {}).get("moved")
        self.expect("replay", "replay moved the 4 letters back to the critical queue", moved == 4, f"moved={moved}")
        self.wait_for(lambda: self.drained("critical") and self.balances() == self.expected_balances, 30)
        self.expect(
            "replay",
            "every balance is exactly right after the replay",
            self.balances() == self.expected_balances,
            json.dumps(self.balances()),
        )
        self.expect("replay", "the critical DLQ is empty", self.dlq_depth("critical") == 0)
        ok = self.wait_for(lambda: self.alarm_state("critical", Alarms.DLQ_DEPTH) == "OK", 20)
        self.expect("replay", "the critical DLQ alarm is back to OK, and the inbox was told",
                    ok and self.wait_for(lambda: "OK" in self.inbox_states(), 10))

    def scheduled_jobs(self) -> None:
        self.console.rule("7. Scheduled jobs: a periodic job, a job for later, a cancelled one [local emulation]")
        runner = self.session.scheduler
        assert runner is not None, "the session is started"

        def succeeded(job_type: str = "demo.flaky") -> int:
            return job_total(self.session, "transactional", Metrics.SUCCEEDED, job_type)

        def duplicates() -> int:
            return job_total(self.session, "transactional", Metrics.DUPLICATE, "notifications.send_email")

        def heartbeats() -> set[datetime]:
            return {f.scheduled_time for f in runner.fires if f.schedule_name == "demo-heartbeat"}

        fired = self.wait_for(lambda: any(f.schedule_name == "demo-heartbeat" for f in runner.fires), 65)
        self.expect("schedules", "the periodic job declared in the settings fired into its tier queue", fired,
                    f"{len(heartbeats())} fire(s) so far, rate(1 minute) since deployment")
        email = "notifications.send_email"
        def runs() -> int:  # an answer from the idempotency store counts as succeeded and duplicate
            return succeeded(email) - duplicates()

        # Earlier steps' e-mails (step 2, the rate-limited ones) and the fires so far have all run first.
        self.wait_for(lambda: self.drained("transactional"), 15)
        before_runs, before_dup, before_fires = runs(), duplicates(), heartbeats()
        schedule = next(s for s in runner.schedules() if s["Name"] == "demo-heartbeat")
        first = next(f for f in runner.fires if f.schedule_name == "demo-heartbeat")
        runner.fire(schedule, first.scheduled_time)  # Scheduler delivers at least once: the same fire again
        absorbed = self.wait_for(lambda: duplicates() == before_dup + 1, 15)
        # One run per distinct scheduled time: none for the repeated fire (a new minute's fire may land meanwhile).
        ran_once = self.wait_for(lambda: runs() == before_runs + len(heartbeats() - before_fires), 5)
        self.expect("schedules", "a fire delivered twice ran once (same key: schedule name + scheduled time)",
                    absorbed and ran_once and before_fires <= heartbeats(),
                    f"key schedule:demo-heartbeat:{first.scheduled_time.astimezone(timezone.utc):%Y-%m-%dT%H:%M:%SZ}")
        # Jobs due within 15 minutes normally use SQS's own delay; this publisher sends every later
        # job through a one-time schedule so the demo shows that path in seconds, not 15 minutes.
        before_ok = succeeded()
        later = Publisher.from_stage(self.deployment.stage, ssm=self.session.clients("ssm"),
                                     sqs=self.session.clients("sqs"), scheduler=self.session.clients("scheduler"),
                                     schedule_beyond_seconds=0)
        asked = datetime.now(timezone.utc) + timedelta(seconds=LATER_SECONDS)
        job = later.publish("demo.flaky", {"fail_times": 0}, "later-1", at=asked)
        cancelled = later.publish("demo.flaky", {"fail_times": 0}, "later-2", at=asked)
        again = later.publish("demo.flaky", {"fail_times": 0}, "later-1", at=asked)
        self.expect("schedules", "publishing the same job for later again is a no-op", again.already_scheduled)
        self.expect("schedules", "a pending job can be cancelled", later.cancel("demo.flaky", "later-2"))
        # Scheduler fires an at() anywhere within its minute, so the publisher rounds up to the next whole one.
        at = job.fire_at or asked
        self.console.print(f"  waiting for {at:%H:%M:%S} UTC: a job asked for {LATER_SECONDS} s ahead is scheduled "
                           "for the next whole minute, so it never runs early")
        fired = self.wait_for(lambda: any(f.schedule_name == job.schedule_name for f in runner.fires),
                              (at - datetime.now(timezone.utc)).total_seconds() + 15)
        ran = self.wait_for(lambda: succeeded() >= before_ok + 1, 15)
        fire = next((f for f in runner.fires if f.schedule_name == job.schedule_name), None)
        self.expect("schedules", "the job scheduled for the next whole minute fired on time and ran",
                    fired and ran and fire is not None and fire.scheduled_time == at and 0 <= fire.lag_seconds < 2,
                    f"{fire.lag_seconds * 1000:+.0f} ms after its time" if fire else "not fired")
        self.expect("schedules", "its one-time schedule deleted itself; the cancelled job never fired",
                    all(s["Name"] != job.schedule_name for s in runner.schedules())
                    and not any(f.schedule_name == cancelled.schedule_name for f in runner.fires))
        lags = [f.lag_seconds * 1000 for f in runner.fires if f.schedule_name.startswith("once-")]
        if lags:
            self.figures["one-time fire lag vs scheduled time (local emulation)"] = \
                f"{statistics.median(lags):.0f} ms p50, {max(lags):.0f} ms max ({len(lags)} fire(s))"

    def show_groups(self, groups: list[dict[str, Any]]) -> None:
        table = Table(title="critical DLQ (inspect)")
        for column in ("job type", "error", "reason", "count", "message"):
            table.add_column(column)
        for group in groups:
            table.add_row(group["job_type"], group["error_type"], group.get("reason", ""), str(group["count"]),
                          group["error_message"][:60])
        self.console.print(table)

    # -- the on-call inbox: an SQS queue subscribed to the alarm topic --------------------

    def subscribe_inbox(self) -> None:
        sqs, sns = self.session.clients("sqs"), self.session.clients("sns")
        self.inbox_url = sqs.create_queue(QueueName="oncall-inbox")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=self.inbox_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=self.deployment.alarm_topic_arn, Protocol="sqs", Endpoint=arn,
                      Attributes={"RawMessageDelivery": "true"})

    def inbox_states(self) -> list[str]:
        """States announced for the critical DLQ alarm so far (the inbox is drained as it is read)."""
        sqs = self.session.clients("sqs")
        for message in sqs.receive_message(QueueUrl=self.inbox_url, MaxNumberOfMessages=10).get("Messages", []):
            sqs.delete_message(QueueUrl=self.inbox_url, ReceiptHandle=message["ReceiptHandle"])
            notification = json.loads(message["Body"])
            if notification["AlarmName"] == Alarms.name(self.deployment.stage, "critical", Alarms.DLQ_DEPTH):
                self.inbox.append(notification["NewStateValue"])
        return self.inbox

    # -- run -----------------------------------------------------------------------------

    def run(self) -> bool:
        self.subscribe_inbox()
        for step in (self.payments_with_duplicates, self.emails, self.transient_outages, self.flood,
                     self.rate_limited_emails, self.bad_deploy_and_replay, self.scheduled_jobs):
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - a broken step is a failed expectation, the story goes on
                self.expect(step.__name__, "the step ran without error", False, f"{type(exc).__name__}: {exc}")
        return all(e.ok for e in self.expectations)

    def check_final_alarms(self, snapshot: list[TierRow]) -> bool:
        """The alarms of the final table (``snapshot``) are those the story caused, every other one OK."""
        unexpected = sorted(f"{row.tier} {kind}: {state}" for row in snapshot for kind, state in row.alarms.items()
                            if state != "OK" and not (state == "ALARM" and (row.tier, kind) in STORY_ALARMS))
        caused = sorted(f"{row.tier} {kind}" for row in snapshot for kind, state in row.alarms.items()
                        if state == "ALARM")
        counted = sum(len(row.alarms) for row in snapshot)
        return self.expect(
            "end", "no alarm is in ALARM but those the story caused; every other alarm is OK",
            counted > 0 and not unexpected,
            ("unexpected: " + "; ".join(unexpected)) if unexpected else
            f"{counted} alarms; in ALARM: {', '.join(caused) or 'none'}"
            + "".join(f"; {tier} {kind}: {why}" for (tier, kind), why in STORY_ALARMS.items()
                      if f"{tier} {kind}" in caused),
        )

    def summary(self, elapsed: float) -> Table:
        table = Table(title=f"Summary ({elapsed:.0f} s)")
        table.add_column("step")
        table.add_column("expectation")
        table.add_column("result")
        for e in self.expectations:
            table.add_row(e.step, e.claim, "[green]ok[/green]" if e.ok else f"[red]FAILED[/red] {e.detail}")
        for name, value in self.figures.items():
            table.add_row("figure", name, value)
        return table


def run_demo(console: Console | None = None) -> int:
    """Run the whole story; 0 when every expectation held."""
    console = console or Console()
    started = time.monotonic()
    console.print("[bold]Tiered Jobs, local demo[/bold]: synthesizing the real stack and deploying it into an "
                  "embedded AWS (moto) on 127.0.0.1 ...")
    with LocalSession(settings={**DEMO_SETTINGS, "schedules": DEMO_SCHEDULES}) as session:
        deployment, endpoint = session.deployment, session.endpoint
        assert deployment is not None and endpoint is not None, "the session is started"
        console.print(f"deployed [bold]{deployment.stack_name}[/bold] at {endpoint.url} "
                      f"in {time.monotonic() - started:.0f} s; moto gaps handled:")
        for gap, details in deployment.gaps.items():
            console.print(f"  - {gap}: {len(details)}")
        demo = Demo(session, console)
        with Live(safe_table(session), console=console, refresh_per_second=2, transient=False) as live:
            stop = threading.Event()

            def refresh() -> None:
                while not stop.wait(0.5):
                    live.update(safe_table(session))

            painter = threading.Thread(target=refresh, name="demo-view", daemon=True)
            painter.start()
            try:
                demo.run()
            finally:
                stop.set()
                painter.join()
            try:  # one snapshot: the final table printed is the one checked
                final = rows(session)
                live.update(table(session, "Tiers (final)", final))
                demo.check_final_alarms(final)
            except Exception as exc:  # noqa: BLE001 - an unreadable end is a failed expectation
                demo.expect("end", "the final alarm states could be read", False, f"{type(exc).__name__}: {exc}")
        passed = all(e.ok for e in demo.expectations)
        console.print(demo.summary(time.monotonic() - started))
    console.print("[green]Every expectation held.[/green]" if passed else "[red]Some expectations failed.[/red]")
    return 0 if passed else 1
