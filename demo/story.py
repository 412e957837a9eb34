"""``python -m demo`` (``make demo``): this repository's app, its whole story on the embedded AWS
(about two minutes), as the list of its steps in order; each step is a module of ``steps/``.

0. a downstream outage begins under the bulk tier, whose circuit breaker is on (it opens within
   seconds, and closes a CloudWatch minute later: 3. and 8.);
1. payments, each published two or three times -> every balance ends exactly right;
   one payment fans out into five jobs opened as a batch -> its on_complete report runs once, after all;
2. e-mails, three with invalid addresses -> the publisher refuses them (payload schema); sent raw
   anyway, as a publisher skipping the schema would, they are dead-lettered at once (``permanent``);
3. transient outages (``demo.flaky``) -> retried with backoff (1 s, 2 s) then succeed;
   a paused tier: jobs published meanwhile wait unreceived, then run once on resume;
   the bulk tier's downstream, down since the story began (0.) -> its circuit breaker opened:
   "paused since …, by circuit breaker", the jobs wait with their attempts;
4. a rate limit: e-mails held to their provider's rate (5/s here) while payments go through at once;
5. a bad deploy (the critical consumer pointed at a missing ledger table) -> payments are
   dead-lettered, the critical DLQ alarm goes to ALARM and pages the on-call inbox;
6. inspect (the replay function) -> fix (roll the configuration back) -> replay -> the same
   payments apply exactly once, the DLQ empties and the alarm returns to OK;
7. scheduled jobs (EventBridge Scheduler, fired by the local emulation): a periodic job declared
   in the settings fires, one of its fires delivered twice runs once, and a job published for a
   few seconds later fires on time while a cancelled one never runs;
8. the downstream is back: the breaker's probe succeeds and closes it -> every job ran once, 0
   letters, and the on-call was paged twice (opened, closed);
9. an analytics flood on the bulk tier -> the critical tier's latency stays low (measured).

Every step checks what it claims, and so does the end (``end.py``): the final table's alarms are
checked against the only alarms the story may leave in ALARM; any other alarm in ALARM (or without
data) fails the run. The exit code is non-zero if any expectation failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console

from demo import end, start
from demo.context import Demo
from demo.live import live_tiers, repainting
from demo.steps.breaker import breaker_closes, breaker_opened, outage_begins
from demo.steps.emails import emails
from demo.steps.fan_out import payment_fans_out
from demo.steps.flood import flood
from demo.steps.incident import bad_deploy_and_replay
from demo.steps.outages import transient_outages
from demo.steps.pause import pause_and_resume
from demo.steps.payments import payments_with_duplicates
from demo.steps.rate_limit import rate_limited_emails
from demo.steps.schedules import scheduled_jobs
from emulator.full_width import FullWidth

#: The story, in order. Later steps count on earlier ones (the rate limit finds step 2's letters in
#: the DLQ, the replay restores balances every payment so far added up), so the order is the story's.
#: The breaker waits a CloudWatch minute without attempts before it probes: the steps between the
#: outage's start and the breaker's closing run meanwhile (none uses the bulk tier), and the bulk
#: flood comes after it closes (a flood in the breaker's window would water down its share of retries).
STEPS: tuple[Callable[[Demo], None], ...] = (
    outage_begins,  # 0.
    payments_with_duplicates,  # 1.
    payment_fans_out,  # 1, its second half
    emails,  # 2.
    transient_outages,  # 3.
    pause_and_resume,  # 3, its second half
    breaker_opened,  # 3, its third
    rate_limited_emails,  # 4.
    bad_deploy_and_replay,  # 5. and 6.
    scheduled_jobs,  # 7.
    breaker_closes,  # 8.
    flood,  # 9.
)


def run_demo(console: Console | None = None) -> int:
    """Run the whole story; 0 when every expectation held."""
    console = console or Console()
    started = time.monotonic()
    with start.embedded_aws(console) as session:
        demo = Demo(session, console)
        with live_tiers(session, console) as live:
            with repainting(live, session):
                run_steps(demo)
            end.check_final_table(demo, live)
        console.print(FullWidth(end.summary(demo, time.monotonic() - started)))  # whole rows in a pipe
    console.print("[green]Every expectation held.[/green]" if demo.passed else "[red]Some expectations failed.[/red]")
    return 0 if demo.passed else 1


def run_steps(demo: Demo) -> bool:
    """Every step of :data:`STEPS`; a step that raises is one failed expectation, and the story goes on."""
    demo.inbox.subscribe()  # before any step, so the inbox hears every state the critical DLQ alarm announces
    for step in STEPS:
        try:
            step(demo)
        except Exception as exc:  # noqa: BLE001 - a broken step is a failed expectation, the story goes on
            demo.expect(step.__name__, "the step ran without error", False, f"{type(exc).__name__}: {exc}")
    return demo.passed
