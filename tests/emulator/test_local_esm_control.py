"""The local runtime honours what ``UpdateEventSourceMapping`` changes while a mapping runs: a disabled
mapping receives nothing (its messages wait, no receive spent), and a lowered maximum concurrency idles
the pollers above it."""

from __future__ import annotations

from emulator.esm import MappingControl, MappingRuntime
from emulator.invokers import in_process_factory
from tests.emulator.local_support import PATIENCE_SECONDS, wait_until
from tests.emulator.test_local_esm import mapping


def test_a_disabled_mapping_receives_nothing_until_it_is_enabled(sqs, busy_queue):
    """A visibility timeout (``busy_queue``): a job received is not received again meanwhile."""
    for n in range(4):
        sqs.send_message(QueueUrl=busy_queue[0], MessageBody=f"job-{n}")
    control = {"now": MappingControl(enabled=False)}
    runtime = MappingRuntime(mapping(busy_queue), in_process_factory(), sqs, control=lambda: control["now"])
    runtime.start()
    try:
        # Not a sleep: every poller has read the state and held back, then each has looked again (a
        # receive it would have made by then), however slowly the machine runs.
        wait_until(
            lambda: runtime.holding() == frozenset(range(runtime.pollers)), PATIENCE_SECONDS, "every poller held back"
        )
        looked = runtime.stats.snapshot()["held"]
        wait_until(
            lambda: runtime.stats.snapshot()["held"] >= looked + 2 * runtime.pollers,
            PATIENCE_SECONDS,
            "each poller reading the state again",
            seen=runtime.stats.snapshot,
        )
        assert runtime.stats.snapshot()["records"] == 0
        counts = sqs.get_queue_attributes(QueueUrl=busy_queue[0], AttributeNames=["ApproximateNumberOfMessages"])
        assert counts["Attributes"]["ApproximateNumberOfMessages"] == "4"

        control["now"] = MappingControl(enabled=True)
        wait_until(lambda: runtime.stats.snapshot()["deleted"] >= 4, PATIENCE_SECONDS, "the four jobs, once enabled")
        assert runtime.stats.snapshot()["records"] == 4  # each received once
    finally:
        runtime.stop(10)


def test_the_pollers_held_back_by_the_mappings_state_are_known_and_released_when_it_allows(sqs, queue):
    """What a test waits on instead of a sleep: which pollers the state holds back (a pause has taken
    effect once all do, as Lambda's ``Disabled`` follows ``Disabling``)."""
    control = {"now": MappingControl(enabled=True, maximum_concurrency=2)}
    runtime = MappingRuntime(
        mapping(queue, maximum_concurrency=4), in_process_factory(), sqs, control=lambda: control["now"]
    )
    assert runtime.holding() == frozenset() and runtime.pollers == 0  # not started
    runtime.start()
    try:
        assert runtime.pollers == 4
        wait_until(
            lambda: runtime.holding() == {2, 3},
            PATIENCE_SECONDS,
            "the pollers above the concurrency",
            seen=runtime.holding,
        )
        control["now"] = MappingControl(enabled=False)  # the two polling hold once their long poll returns
        wait_until(
            lambda: runtime.holding() == {0, 1, 2, 3}, PATIENCE_SECONDS, "every poller held back", seen=runtime.holding
        )
        control["now"] = MappingControl(enabled=True)
        wait_until(lambda: not runtime.holding(), PATIENCE_SECONDS, "every poller polling again", seen=runtime.holding)
        assert runtime.stats.snapshot()["held"] > 0
    finally:
        runtime.stop(10)


def test_a_lowered_maximum_concurrency_idles_the_pollers_above_it(queue):
    control = {"now": MappingControl(enabled=True, maximum_concurrency=2)}
    runtime = MappingRuntime(
        mapping(queue, maximum_concurrency=5), in_process_factory(), None, control=lambda: control["now"]
    )
    assert [runtime.may_poll(i) for i in range(5)] == [True, True, False, False, False]
    control["now"] = MappingControl(enabled=True)  # no ScalingConfig: the deployed concurrency
    assert all(runtime.may_poll(i) for i in range(5))
    control["now"] = MappingControl(enabled=False, maximum_concurrency=5)
    assert not any(runtime.may_poll(i) for i in range(5))
    assert MappingRuntime(mapping(queue), in_process_factory(), None).may_poll(7)  # no control: as deployed
