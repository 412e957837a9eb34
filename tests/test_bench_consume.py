"""The local runtime's throughput figure keeps what the mapping warned of (bench/consume.py), so a rate
that fell says why: a batch left to its visibility timeout is a minute of a 1 000-job run."""

from __future__ import annotations

import logging

from bench import __main__ as report
from bench import consume


def test_the_mapping_warnings_of_a_run_are_kept_and_shown_in_the_row():
    mapping_log = logging.getLogger("emulator.esm")
    before = mapping_log.level
    mapping_log.setLevel(logging.ERROR)  # as make bench quiets it (bench/__main__.py), and some tests do
    try:
        with consume._mapping_warnings() as warned:
            mapping_log.info("a batch of 10 invoked")  # not a warning: not kept
            mapping_log.warning("delete from %s failed: %s", "queue-url", "timed out")
        mapping_log.warning("after the run: not kept")
        assert mapping_log.level == logging.ERROR  # restored
    finally:
        mapping_log.setLevel(before)

    assert warned == ["delete from queue-url failed: timed out"]
    assert report._warned(warned) == "; the mapping warned 1 time(s), first: delete from queue-url failed: timed out"
    assert report._warned([]) == ""
