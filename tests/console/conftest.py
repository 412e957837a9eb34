"""A console served from a thread against the miniature stack on moto (in-process)."""

from __future__ import annotations

import pytest

from tiered_jobs.contract.names import stack_name
from tiered_jobs.stage.target import Target


@pytest.fixture
def serve(deployment):
    """``serve(**security)`` starts a console on a free loopback port; all are stopped after the test."""
    from tiered_jobs.console.security import Security
    from tiered_jobs.console.server import start_in_thread

    running = []

    def start(host: str = "127.0.0.1", **security):
        target = Target(deployment.stage, stack_name(deployment.stage), "us-east-1", None)
        console = start_in_thread(target, Security(**security), host=host)
        running.append(console)
        return console

    yield start
    for console in running:
        console.stop()
