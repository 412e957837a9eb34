"""The local-mode tests' shared wait: it ends on the event, and a failure says what it waited for and saw."""

from __future__ import annotations

import itertools

import pytest

from tests.emulator.local_support import wait_until


def test_a_wait_returns_the_value_that_held_as_soon_as_it_holds():
    counts = itertools.count()
    assert wait_until(lambda: next(counts) >= 2 and "done", 5, "the third look") == "done"


def test_a_wait_that_times_out_names_what_it_waited_for_and_what_it_saw():
    depth = {"visible": 3, "in flight": 1}
    with pytest.raises(AssertionError) as failed:
        wait_until(lambda: depth["visible"] == 0, 0.1, "the queue drained", seen=lambda: depth)
    message = str(failed.value)
    assert message.startswith("waited ") and "(limit 0.1 s) for the queue drained" in message, message
    assert message.endswith("saw {'visible': 3, 'in flight': 1}"), message


def test_without_a_reader_a_timed_out_wait_shows_the_conditions_last_value():
    with pytest.raises(AssertionError, match=r"for nothing to read, saw \[\]$"):
        wait_until(list, 0.1, "nothing to read")


def test_a_reader_that_fails_after_the_timeout_does_not_hide_the_timeout():
    def broken() -> object:
        raise ConnectionError("server gone")

    with pytest.raises(AssertionError, match=r"for a message, saw nothing readable \(ConnectionError: server gone\)"):
        wait_until(lambda: False, 0.1, "a message", seen=broken)
