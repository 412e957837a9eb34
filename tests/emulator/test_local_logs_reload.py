"""The pieces of the local development loop without a stack: log groups, shipping, filters, code snapshots."""

from __future__ import annotations

import os
import re

import boto3
import pytest

from emulator.cli import command_prefix
from emulator.logs import LogFilter, LogShipper, function_log_groups, read_events
from emulator.reload import changed_files, snapshot
from tiered_jobs.cdk.packaging import JobsSource


def test_log_groups_follow_the_functions_logging_config_else_lambdas_default():
    template = {
        "Resources": {
            "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"LoggingConfig": {"LogGroup": {"Ref": "FnLogs"}}}},
            "FnLogs": {"Type": "AWS::Logs::LogGroup", "Properties": {}},
            "Plain": {"Type": "AWS::Lambda::Function", "Properties": {}},
        }
    }
    physical = {"Fn": "stage-fn", "FnLogs": "Stack-FnLogs-ABC", "Plain": "stage-plain"}
    assert function_log_groups(template, physical) == {
        "stage-fn": "Stack-FnLogs-ABC",
        "stage-plain": "/aws/lambda/stage-plain",
    }


def test_shipped_lines_are_read_back_in_order_by_group_and_stream(aws):
    logs = boto3.client("logs")
    logs.create_log_group(logGroupName="existing")
    shipper = LogShipper(logs)
    shipper.add("existing", "2026/01/01/[$LATEST]a", "first")
    shipper.add("created-on-first-use", "2026/01/01/[$LATEST]b", "")
    shipper.add("existing", "2026/01/01/[$LATEST]a", "second")
    shipper.flush()
    events = read_events(logs, {"one": "existing", "two": "created-on-first-use", "none": "missing"}, 0)
    assert [(e.function, e.stream, e.message) for e in events] == [
        ("one", "2026/01/01/[$LATEST]a", "first"),
        ("one", "2026/01/01/[$LATEST]a", "second"),
        ("two", "2026/01/01/[$LATEST]b", " "),  # CloudWatch Logs refuses empty messages
    ]
    seen: set[str] = set()
    assert len(read_events(logs, {"one": "existing"}, 0, seen)) == 2
    assert read_events(logs, {"one": "existing"}, 0, seen) == []  # --follow prints each event once


def test_log_filter_hides_emf_documents_unless_asked_and_greps_with_a_regular_expression():
    emf = '{"_aws": {"Timestamp": 1, "CloudWatchMetrics": []}, "JobsSucceeded": [1]}'
    assert not LogFilter().matches(emf) and LogFilter(metrics=True).matches(emf)
    assert LogFilter(r"pay_\d+").matches("job pay_12 done") and not LogFilter(r"pay_\d+").matches("job pay_x")
    with pytest.raises(re.error):
        LogFilter("(unclosed")


def test_snapshots_see_edits_additions_and_removals_and_copies_leave_bytecode_out(tmp_path):
    (tmp_path / "functions" / "jobs" / "__pycache__").mkdir(parents=True)
    (tmp_path / "functions" / "jobs" / "__init__.py").write_text("")
    (tmp_path / "functions" / "jobs" / "a.py").write_text("A = 1\n")
    (tmp_path / "functions" / "jobs" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "tiered_jobs" / "contract").mkdir(parents=True)
    (tmp_path / "tiered_jobs" / "__init__.py").write_text("")
    (tmp_path / "tiered_jobs" / "contract" / "names.py").write_text("X = 1\n")
    (tmp_path / "tiered_jobs" / "cli.py").write_text("not in the asset\n")
    source = JobsSource(tmp_path / "functions" / "jobs", module="functions.jobs", runtime_dir=tmp_path / "tiered_jobs")
    before = snapshot(source)
    assert set(before) == {
        "functions/jobs/__init__.py",
        "functions/jobs/a.py",
        "tiered_jobs/__init__.py",
        "tiered_jobs/contract/names.py",
    }

    (tmp_path / "functions" / "jobs" / "a.py").write_text("A = 2  # longer\n")
    (tmp_path / "functions" / "jobs" / "b.py").write_text("B = 1\n")
    (tmp_path / "tiered_jobs" / "contract" / "names.py").unlink()
    (tmp_path / "tiered_jobs" / "cli.py").write_text("changed, but not in the asset\n")
    assert changed_files(before, snapshot(source)) == [
        "functions/jobs/a.py",
        "functions/jobs/b.py",
        "tiered_jobs/contract/names.py",
    ]

    copy = source.stage(tmp_path / "copy")
    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file()) == [
        "functions/__init__.py",
        "functions/jobs/__init__.py",
        "functions/jobs/a.py",
        "functions/jobs/b.py",
        "tiered_jobs/__init__.py",
    ]


def test_hints_name_the_command_where_make_setup_puts_it(tmp_path, monkeypatch):
    """``make setup`` installs ``tiered-jobs`` in the virtualenv, not on PATH: hints say ``.venv/bin/tiered-jobs``."""
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "tiered-jobs").write_text("#!/bin/sh\n")
    monkeypatch.setattr("sys.executable", str(bin_dir / "python"))
    monkeypatch.chdir(tmp_path)
    assert command_prefix() == os.path.join(".venv", "bin", "tiered-jobs")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert command_prefix() == str(bin_dir / "tiered-jobs")  # from elsewhere: the full path
