"""The story's first act: synthesize the example's stack with the demo's settings and deploy it into
the embedded AWS (moto on 127.0.0.1), saying what moto lacked and local mode handled; then let the
demo's publishers check the deployed app's payload schemas, as a service publishing to it would."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

from demo.steps import breaker
from demo.steps.rate_limit import RATE_LIMITS
from demo.steps.schedules import DEMO_SCHEDULES
from emulator.session import LocalSession
from tiered_jobs.cdk.packaging import SCHEMAS_DIR
from tiered_jobs.contract import payloads

#: The demo's stack: cdk.json's tiers, the transactional one with the e-mail provider's limit, the bulk
#: one with a circuit breaker, and the periodic job. Each step that needs a setting owns it; this only
#: gathers them.
DEMO_SETTINGS: dict[str, Any] = {
    "tiers": {
        "critical": {},
        "bulk": {**breaker.BREAKER, **breaker.RETRIES},
        "transactional": {"rate_limits": RATE_LIMITS},
    },
    "schedules": DEMO_SCHEDULES,
}


@contextmanager
def embedded_aws(console: Console) -> Iterator[LocalSession]:
    """The started session, deployed with :data:`DEMO_SETTINGS`; stopped when the story ends."""
    started = time.monotonic()
    console.print(
        "[bold]Tiered Jobs, local demo[/bold]: synthesizing the real stack and deploying it into an "
        "embedded AWS (moto) on 127.0.0.1 ..."
    )
    with LocalSession(settings=DEMO_SETTINGS) as session:
        deployment, endpoint = session.deployment, session.endpoint
        assert deployment is not None and endpoint is not None, "the session is started"
        console.print(
            f"deployed [bold]{deployment.stack_name}[/bold] at {endpoint.url} "
            f"in {time.monotonic() - started:.0f} s; moto gaps handled:"
        )
        for gap, details in deployment.gaps.items():
            console.print(f"  - {gap}: {len(details)}")
        # The package ships no payload schema: a publisher checks the app's own, the folder `emulator up`
        # tells one to name in TIERED_JOBS_SCHEMA_DIRS. Without it the e-mails step's invalid addresses
        # would be sent, not refused, and dead-lettered twice over.
        assert session.code_source is not None, "the session is started"
        payloads.add_schema_dir(session.code_source.directory / SCHEMAS_DIR)
        yield session
