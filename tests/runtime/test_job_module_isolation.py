"""One tier's broken code never stops another tier: a job module is imported per job-type prefix, on
its first record, and a module that fails to import fails only its own records, transiently, with
its reason (docs/consumer.md, "One module per prefix").

The app here is written as a user would: a job package with one module per prefix (``ledger`` on
critical, ``mail`` on transactional, ``reports`` on bulk). Its jobs register into a registry of the
test's own (``tiered_jobs.runtime.job`` points at it while the test runs), so the suite's registry
never holds them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections import Counter
from pathlib import Path

import pytest

import tiered_jobs.runtime
from tests.support.tier import create_tier
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime.job_modules import RETRY_FAILED_IMPORT_AFTER_SECONDS, JobModuleError, JobModules
from tiered_jobs.runtime.registry import JobRegistry

RUNS = "from {package}._runs import RUNS\n"
JOB = """
from tiered_jobs.runtime import job
{runs}

@job("{job_type}")
def run(payload, ctx):
    RUNS.append(("{job_type}", ctx.idempotency_key))
"""
#: Registers its job, then fails while loading (a missing template, a failed client set-up...):
#: counts its import attempts beside itself, and must leave no half-built job registered.
FAILS_AT_IMPORT = """
import pathlib
with open(pathlib.Path(__file__).with_suffix(".attempts"), "a") as attempts:
    attempts.write("x")
from tiered_jobs.runtime import job

@job("reports.build")
def build(payload, ctx):
    raise AssertionError("a module that failed to import must never run")

raise RuntimeError("reports template is missing")
"""
SYNTAX_ERROR = "def build(payload, ctx:\n    return payload\n"


class JobApp:
    """A job package on ``sys.path`` under a unique name, its modules written (and rewritten) by the test."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch, clock: list[float]):
        self.package = f"isojobs_{uuid.uuid4().hex[:8]}"
        self.folder = root / self.package
        self.folder.mkdir()
        (self.folder / "__init__.py").write_text('"""One module per job-type prefix; nothing imported here."""\n')
        (self.folder / "_runs.py").write_text("RUNS = []\n")
        monkeypatch.syspath_prepend(str(root))
        self.registry = JobRegistry()
        monkeypatch.setattr(tiered_jobs.runtime, "job", self.registry.job)
        self.modules = JobModules(self.registry, clock=lambda: clock[0])
        self.modules.add(self.package, strict=True)

    def write(self, prefix: str, source: str) -> None:
        (self.folder / f"{prefix}.py").write_text(source)

    def job(self, job_type: str) -> None:
        self.write(job_type.split(".")[0], JOB.format(job_type=job_type, runs=RUNS.format(package=self.package)))

    def import_attempts(self, prefix: str) -> int:
        attempts = self.folder / f"{prefix}.attempts"
        return len(attempts.read_text()) if attempts.exists() else 0

    def runs(self) -> Counter:
        return Counter(sys.modules[f"{self.package}._runs"].RUNS)

    def imported(self) -> set[str]:
        return {name.rsplit(".", 1)[1] for name in sys.modules if name.startswith(f"{self.package}.")}

    def close(self) -> None:
        for name in [n for n in sys.modules if n == self.package or n.startswith(f"{self.package}.")]:
            del sys.modules[name]


@pytest.fixture
def clock() -> list[float]:
    return [1000.0]


@pytest.fixture
def app(tmp_path, monkeypatch, clock):
    made = JobApp(tmp_path, monkeypatch, clock)
    made.job("ledger.post")
    made.job("mail.send")
    yield made
    made.close()


def failed_ids(response: dict) -> set[str]:
    return {failure["itemIdentifier"] for failure in response["batchItemFailures"]}


def test_a_broken_module_on_bulk_stops_only_its_jobs_which_run_once_it_is_fixed(aws, app, clock):
    critical, transactional, bulk = (create_tier(name, visibility_timeout=180) for name in ("c", "t", "b"))
    app.write("reports", FAILS_AT_IMPORT)
    critical.publish("ledger.post", {}, "on-critical")
    transactional.publish("mail.send", {}, "on-transactional")
    reports = {bulk.publish("reports.build", {"n": n}, f"report-{n}") for n in range(3)}
    bulk.publish("ledger.post", {}, "on-bulk")  # another prefix in the broken module's batch

    for tier in (critical, transactional):
        assert tier.run_batch(tier.consumer(registry=app.registry))["batchItemFailures"] == []
    assert app.import_attempts("reports") == 0 and "reports" not in app.imported()

    consumer = bulk.consumer(registry=app.registry, max_attempts=5)
    assert failed_ids(bulk.run_batch(consumer)) == reports  # retried later, never permanent
    assert app.runs() == {("ledger.post", "on-critical"): 1, ("mail.send", "on-transactional"): 1,
                          ("ledger.post", "on-bulk"): 1}  # fmt: skip
    assert "reports.build" not in app.registry.types()  # what it registered before failing is forgotten
    assert bulk.dlq_messages() == []

    bulk.make_visible()  # within the interval the failure is answered from memory: one import, not one per record
    assert failed_ids(bulk.run_batch(consumer)) == reports
    assert app.import_attempts("reports") == 1

    app.job("reports.build")  # the fix, deployed
    clock[0] += RETRY_FAILED_IMPORT_AFTER_SECONDS
    bulk.make_visible()
    assert bulk.run_batch(consumer)["batchItemFailures"] == []
    assert {key: n for (job_type, key), n in app.runs().items() if job_type == "reports.build"} == {
        f"report-{n}": 1 for n in range(3)
    }
    assert bulk.receive() == [] and bulk.dlq_messages() == []


def test_a_module_that_never_imports_is_dead_lettered_with_its_reason_on_the_last_attempt(aws, app, clock):
    tier = create_tier("b", visibility_timeout=180)
    app.write("reports", SYNTAX_ERROR)
    tier.publish("reports.build", {}, "report-1")
    consumer = tier.consumer(registry=app.registry, max_attempts=2)

    assert len(tier.run_batch(consumer)["batchItemFailures"]) == 1  # attempt 1: transient
    clock[0] += RETRY_FAILED_IMPORT_AFTER_SECONDS
    tier.make_visible()
    assert tier.run_batch(consumer)["batchItemFailures"] == []  # attempt 2: dead-lettered, then deleted

    [letter] = tier.dlq_messages()
    reasons = {name: value["StringValue"] for name, value in letter["MessageAttributes"].items()}
    assert reasons[DeadLetter.REASON] == DeadLetter.REASON_RETRIES_EXHAUSTED
    assert reasons[DeadLetter.ERROR_TYPE] == "JobModuleError"
    assert f"job module '{app.package}.reports' failed to import (SyntaxError:" in reasons[DeadLetter.ERROR_MESSAGE]
    assert "reports.py, line 1" in reasons[DeadLetter.ERROR_MESSAGE]
    assert reasons[DeadLetter.ATTEMPTS] == "2" and reasons[DeadLetter.JOB_TYPE] == "reports.build"


def test_a_type_with_no_module_or_not_in_its_module_is_still_unknown_and_permanent(aws, app):
    tier = create_tier("c", visibility_timeout=180)
    tier.publish("nowhere.run", {}, "k-1")  # no module ``nowhere``
    tier.publish("ledger.typo", {}, "k-2")  # module ``ledger`` imports, registers no such type
    assert tier.run_batch(tier.consumer(registry=app.registry, max_attempts=5))["batchItemFailures"] == []
    reasons = [{k: v["StringValue"] for k, v in letter["MessageAttributes"].items()} for letter in tier.dlq_messages()]
    assert [(r[DeadLetter.REASON], r[DeadLetter.ERROR_TYPE]) for r in reasons] == [
        (DeadLetter.REASON_PERMANENT, "UnknownJobTypeError")
    ] * 2


def test_the_registry_raises_the_import_failure_not_unknown_and_retries_it_after_the_interval(app, clock):
    app.write("reports", FAILS_AT_IMPORT)
    assert "reports.build" not in app.registry
    with pytest.raises(JobModuleError, match=r"RuntimeError: reports template is missing at reports\.py:\d+") as raised:
        app.registry.get("reports.build")
    assert isinstance(raised.value.__cause__, RuntimeError)  # the module's own error and traceback, chained
    assert app.import_attempts("reports") == 1
    clock[0] += RETRY_FAILED_IMPORT_AFTER_SECONDS
    with pytest.raises(JobModuleError):
        app.registry.get("reports.build")
    assert app.import_attempts("reports") == 2


def _fresh(code: str, root: Path, package: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": f"{root}:{Path.cwd()}", "PATH": "/usr/bin", "TIERED_JOBS_JOB_MODULES": package},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


HANDLER_COLD_START = """
import sys
import tiered_jobs.handlers.consumer  # the container's init: never fails on a job's code
from tiered_jobs.runtime.registry import registry
from tiered_jobs.runtime.job_modules import JobModuleError

for job_type in ("ledger.post", "reports.build"):
    try:
        print(job_type, "registered as", registry.get(job_type).type)
    except JobModuleError as exc:
        print(job_type, "JobModuleError from", type(exc.__cause__).__name__)
print(sorted(name for name in sys.modules if name.startswith("appjobs.")))
"""


@pytest.mark.parametrize("imports_everything", [False, True], ids=["module-per-prefix", "init-imports-all"])
def test_the_consumers_cold_start_survives_a_broken_module(tmp_path, imports_everything):
    """In a fresh interpreter, as a container: the handler module, with ``TIERED_JOBS_JOB_MODULES`` naming
    a package with a broken module. An ``__init__`` that imports every module still loads, without the
    isolation: every type of the package fails alike (transiently, with the reason), none crashes the init."""
    package = tmp_path / "appjobs"
    package.mkdir()
    (package / "ledger.py").write_text(JOB.format(job_type="ledger.post", runs="RUNS = []"))
    (package / "reports.py").write_text(SYNTAX_ERROR)
    (package / "__init__.py").write_text("from appjobs import ledger, reports\n" if imports_everything else "")

    out = _fresh(HANDLER_COLD_START, tmp_path, "appjobs").splitlines()

    if imports_everything:
        assert out == [
            "ledger.post JobModuleError from SyntaxError",
            "reports.build JobModuleError from SyntaxError",
            "[]",  # what the failed import loaded is unloaded, so a retry runs it afresh
        ]
    else:
        assert out == [
            "ledger.post registered as ledger.post",
            "reports.build JobModuleError from SyntaxError",
            "['appjobs.ledger']",  # never a module no record asked for
        ]


def test_the_replay_function_imports_no_job_module(tmp_path):
    """Replay moves letters; it never runs a job, so a broken job package cannot stop it (even if its
    environment named one: the stack gives it none)."""
    package = tmp_path / "appjobs"
    package.mkdir()
    (package / "__init__.py").write_text(SYNTAX_ERROR)
    out = _fresh(
        """
        import sys
        import tiered_jobs.handlers.replay
        import tiered_jobs.runtime.aws  # what its handler loads on the first invocation
        print(sorted(name for name in sys.modules if name.startswith("appjobs")))
        """,
        tmp_path,
        "appjobs",
    )
    assert out == "[]"
