"""An app's job modules are imported one way, its schemas first, wherever the real consumer runs.

Each test runs in a fresh interpreter: the suite's own process has the example's schemas added
already (conftest), which is how the composed run once passed here and failed in its own processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tiered_jobs.runtime.job_modules import parse_modules

INVOICE_SCHEMA = {
    "type": "object",
    "required": ["amount_cents"],
    "properties": {"amount_cents": {"type": "integer", "minimum": 1}},
    "additionalProperties": False,
}


def _app(tmp_path: Path) -> Path:
    """A job package of an app: ``billing_jobs`` with one job and its schema in ``schemas/``."""
    package = tmp_path / "billing_jobs"
    (package / "schemas").mkdir(parents=True)
    (package / "schemas" / "invoices.create.schema.json").write_text(json.dumps(INVOICE_SCHEMA))
    (package / "__init__.py").write_text(
        textwrap.dedent("""
        from tiered_jobs.runtime.registry import job

        @job("invoices.create")
        def create(payload, ctx):  # checks nothing itself: only the schema refuses a bad payload
            return payload
    """)
    )
    return tmp_path


def _fresh(code: str, path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": f"{path}:{Path.cwd()}", "PATH": "/usr/bin"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_loading_a_job_module_enforces_the_schemas_beside_it(tmp_path):
    app = _app(tmp_path)
    out = _fresh(
        """
        from tiered_jobs.contract import payloads
        from tiered_jobs.runtime.job_modules import load_job_modules
        from tiered_jobs.runtime.registry import registry

        load_job_modules(["billing_jobs"])
        check = registry.get("invoices.create").validate
        try:
            check({"amount_cents": 0})
        except Exception as exc:
            print(type(exc).__name__, exc)
        check({"amount_cents": 5})
    """,
        app,
    )
    assert out == "PayloadValidationError payload field 'amount_cents' must be >= 1, got 0"


def test_a_bare_import_is_the_gap_it_closes(tmp_path):
    """Without it, the same module's schema is never found: the payload would run unchecked."""
    app = _app(tmp_path)
    out = _fresh(
        """
        import billing_jobs
        from tiered_jobs.contract import payloads
        print(payloads.has_schema("invoices.create"))
    """,
        app,
    )
    assert out == "False"


def test_the_handlers_module_list_is_refused_when_empty():
    assert parse_modules(" a.jobs, b.jobs ,") == ["a.jobs", "b.jobs"]
    with pytest.raises(RuntimeError, match="TIERED_JOBS_JOB_MODULES is not set"):
        parse_modules(" , ")
