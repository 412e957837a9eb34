"""The suite's own scheduling (tests/support/scheduling.py): a module that shares a costly fixture
runs on one worker, the synthesizing modules on one worker together; every other test is its own unit."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tests.support import scheduling


def item(nodeid: str, *marks: str) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: name if name in marks else None)


def test_a_module_with_an_e2e_or_slow_test_is_one_unit_and_the_synth_modules_one_together(tmp_path, monkeypatch):
    items = [
        item("tests/a.py::test_one"),
        item("tests/a.py::test_two", "e2e"),
        item("tests/b.py::test_one", "slow"),
        item("tests/c.py::test_one", "synth"),
        item("tests/c.py::test_two"),
        item("tests/d.py::test_one", "synth"),
        item("tests/e.py::test_one"),
    ]
    expected = {"tests/a.py": "tests/a.py", "tests/b.py": "tests/b.py", "tests/c.py": "synth", "tests/d.py": "synth"}
    assert scheduling.units(items) == expected  # type: ignore[arg-type]

    monkeypatch.setenv(scheduling.UNITS_ENV, str(tmp_path))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    scheduling.write_units(items)  # type: ignore[arg-type]
    assert json.loads((tmp_path / scheduling.UNITS_FILE).read_text()) == expected
    assert [p.name for p in tmp_path.iterdir()] == [scheduling.UNITS_FILE]  # no partial file left

    scheduler = object.__new__(scheduling.OneWorkerModules)  # the split alone, without a run's nodes
    scheduler._folder, scheduler._units = str(tmp_path), None
    assert scheduler._split_scope("tests/a.py::test_one") == "tests/a.py"
    assert scheduler._split_scope("tests/a.py::test_two[x::y]") == "tests/a.py"
    assert scheduler._split_scope("tests/c.py::test_two") == scheduler._split_scope("tests/d.py::test_one") == "synth"
    assert scheduler._split_scope("tests/e.py::test_one") == "tests/e.py::test_one"


def test_without_the_list_every_test_is_its_own_unit(tmp_path):
    scheduler = object.__new__(scheduling.OneWorkerModules)
    scheduler._folder, scheduler._units = str(tmp_path), None
    assert scheduler._split_scope("tests/a.py::test_one") == "tests/a.py::test_one"


class MarkedItem:
    """A collected test as the ordering hook reads it: its node id, and marks that can be added."""

    def __init__(self, nodeid: str, *marks: pytest.MarkDecorator) -> None:
        self.nodeid, self.marks = nodeid, [m.mark for m in marks]

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return next((m for m in self.marks if m.name == name), None)

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.marks.append(marker.mark)


def test_an_e2e_or_slow_test_gets_the_long_timeout_unless_it_names_its_own(monkeypatch):
    """pytest-timeout's 300 s counted a module's session start (minutes on a loaded machine) in its first
    test and killed it before its own waits could say what they saw."""
    from tests import conftest

    monkeypatch.delenv(scheduling.UNITS_ENV, raising=False)
    plain = MarkedItem("tests/a.py::test_one")
    e2e, slow = (
        MarkedItem("tests/b.py::test_one", pytest.mark.e2e),
        MarkedItem("tests/c.py::test_one", pytest.mark.slow),
    )
    own = MarkedItem("tests/d.py::test_one", pytest.mark.e2e, pytest.mark.timeout(60))
    conftest.pytest_collection_modifyitems([plain, e2e, slow, own])  # type: ignore[list-item]

    def timeout(item: MarkedItem) -> object:
        marker = item.get_closest_marker("timeout")
        return marker.args[0] if marker else None

    long = conftest.LONG_TEST_TIMEOUT_SECONDS
    assert [timeout(i) for i in (plain, e2e, slow, own)] == [None, long, long, 60]
    assert conftest.LONG_TEST_TIMEOUT_SECONDS >= 1800
