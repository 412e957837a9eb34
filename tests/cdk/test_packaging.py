"""The functions' code: the app's job folder under its import name plus the runtime parts, nothing else."""

from __future__ import annotations

import pytest

from tiered_jobs.cdk.packaging import PACKAGE_DIR, RUNTIME_PARTS, JobsSource, JobsSourceError


def _jobs(tmp_path, name="jobs"):
    folder = tmp_path / "src" / name
    (folder / "__pycache__").mkdir(parents=True)
    (folder / "__init__.py").write_text("from . import invoices  # noqa\n")
    (folder / "invoices.py").write_text("X = 1\n")
    (folder / "__pycache__" / "invoices.cpython-311.pyc").write_bytes(b"\0")
    return folder


def test_the_folder_lands_under_its_module_with_the_runtime_beside_it(tmp_path):
    source = JobsSource(_jobs(tmp_path))
    assert source.module == "jobs"
    staged = source.stage(tmp_path / "asset")
    shipped = {p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()}
    assert {"jobs/__init__.py", "jobs/invoices.py"} <= shipped
    assert not any("__pycache__" in name for name in shipped)
    assert {name.split("/")[1] for name in shipped if name.startswith("tiered_jobs/")} == set(RUNTIME_PARTS)
    assert "tiered_jobs/contract/envelope.schema.json" in shipped  # package data ships with the code
    assert (staged / "tiered_jobs" / "handlers" / "consumer.py").read_bytes() == (
        PACKAGE_DIR / "handlers" / "consumer.py"
    ).read_bytes()
    # Staging again gives the same files (a stale file from an earlier staging is gone).
    (staged / "jobs" / "stale.py").write_text("")
    assert source.stage(tmp_path / "asset") == staged and not (staged / "jobs" / "stale.py").exists()


def test_a_dotted_module_gets_empty_parent_packages(tmp_path):
    source = JobsSource(_jobs(tmp_path), module="billing.jobs")
    staged = source.stage(tmp_path / "asset")
    assert (staged / "billing" / "__init__.py").read_text() == ""
    assert (staged / "billing" / "jobs" / "invoices.py").is_file()


@pytest.mark.parametrize(
    ("make", "module", "message"),
    [
        (lambda tmp: tmp / "missing", "", "does not exist"),
        (lambda tmp: (tmp / "bare").mkdir() or tmp / "bare", "", "has no __init__.py"),
        (_jobs, "my-jobs", "not an importable Python name"),
        (_jobs, "tiered_jobs.mine", "would shadow the Tiered Jobs runtime"),
    ],
)
def test_a_folder_that_cannot_become_code_is_refused_with_the_fix(tmp_path, make, module, message):
    with pytest.raises(JobsSourceError, match=message):
        JobsSource(make(tmp_path), module=module)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            '{"type": "object", "oneOf": [{}]}',
            r"payload schema schemas/invoices\.create\.schema\.json: unsupported keyword\(s\) oneOf; supported: "
            r"additionalProperties, .*; say the rule with those, or check it in the job's own validate= hook$",
        ),
        (
            '{"properties": {"id": {"type": "string", "format": "uuid", "$ref": "#/x"}}}',
            r"schemas/invoices\.create\.schema\.json properties\.id: unsupported keyword\(s\) \$ref",
        ),
        ('{"type": "object",}', r"schemas/invoices\.create\.schema\.json: not valid JSON \(.*\); fix the file$"),
        (
            '{"properties": {"id": {"pattern": "([a-z"}}}',
            r"properties\.id: pattern '\(\[a-z' is not a regular expression",
        ),
    ],
)
def test_a_payload_schema_the_consumer_cannot_check_is_refused_before_staging(tmp_path, document, message):
    """The consumer would meet it at the first payload; staging (the construct's synthesis) refuses it."""
    folder = _jobs(tmp_path)
    (folder / "schemas").mkdir()
    (folder / "schemas" / "invoices.create.schema.json").write_text(document)
    source = JobsSource(folder)
    with pytest.raises(JobsSourceError, match=message) as refused:
        source.stage(tmp_path / "asset")
    assert str(refused.value).startswith(f"job folder {str(folder.resolve())!r}: ")
    assert "\n" not in str(refused.value) and not (tmp_path / "asset").exists()


def test_the_job_folders_valid_schemas_are_checked_and_shipped(tmp_path):
    folder = _jobs(tmp_path)
    (folder / "schemas").mkdir()
    (folder / "schemas" / "invoices.create.schema.json").write_text('{"type": "object", "required": ["id"]}')
    source = JobsSource(folder)
    assert [p.name for p in source.check_schemas()] == ["invoices.create.schema.json"]
    assert (source.stage(tmp_path / "asset") / "jobs" / "schemas" / "invoices.create.schema.json").is_file()
    assert JobsSource(_jobs(tmp_path, "other")).check_schemas() == []  # no schemas/ folder: nothing to check
