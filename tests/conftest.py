"""Shared test fixtures: fake credentials, a fixed region, moto in-process, and on it one tier
(:class:`tests.support.tier.Tier`) or the miniature deployed stack (:mod:`tests.support.stack`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import pytest

from emulator import moto_patches, synth_cache
from tests.support import scheduling
from tests.support.botocore_models import share_parsed_files
from tests.support.context import lambda_context as make_lambda_context
from tests.support.stack import FakeDeployment, deploy
from tests.support.tier import Tier, create_tier
from tiered_jobs.replay import service as replay_service
from tiered_jobs.runtime.job_modules import load_job_modules

# The example's jobs with their schemas, as its consumer imports them (the package ships none); every
# module now, since the tests list every type (a consumer imports one module per prefix, lazily).
load_job_modules(["functions.jobs"], every_module=True)
# The library's own test jobs (testjobs.*), registered the same way: the library's tests run on these.
load_job_modules(["tests.support.jobs"])

share_parsed_files()  # one parse of each botocore data file per test process, not one per boto3 session
# The tests' stacks are JSON, which moto's CloudFormation read with PyYAML's pure-Python loader
# (13 ms a stack; json.loads takes 0.1 ms): read as JSON instead.
moto_patches.cloudformation_json_templates()

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")

REGION = "us-east-1"


@pytest.fixture(autouse=True)
def _aws_test_environment(monkeypatch):
    """Never reach a real AWS account: fake credentials, one region, no endpoint overrides."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


#: The replay scan's long poll as shipped (``_short_polls_on_moto`` shortens it for the suite).
SHIPPED_RECEIVE_WAIT_SECONDS = replay_service.RECEIVE_WAIT_SECONDS


@pytest.fixture(autouse=True)
def _short_polls_on_moto(monkeypatch):
    """moto answers a short poll with every visible message, so the suite's DLQ scans (the CLI's,
    the console's, lookups) need not wait a second for each empty answer. On SQS an empty short
    poll may miss messages: the scan ships with a long poll, which
    ``tests/replay/test_replay.py::test_the_scan_long_polls_so_an_empty_answer_means_empty`` holds."""
    monkeypatch.setattr(replay_service, "RECEIVE_WAIT_SECONDS", 0)


@pytest.fixture
def aws():
    """moto in-process for the duration of one test."""
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def tier(aws) -> Tier:
    """One tier on moto: its queue (redrive after 5 receives), DLQ and tables."""
    return create_tier("critical", visibility_timeout=180, max_receive_count=5)


@pytest.fixture
def redrive_tier(aws) -> Callable[..., Tier]:
    """A factory of tiers on moto with the redrive ``maxReceiveCount`` a test chooses (its consumers know it)."""
    made = iter(range(1000))
    return lambda max_receive_count: create_tier(
        f"redrive-{next(made)}", visibility_timeout=180, max_receive_count=max_receive_count
    )


@pytest.fixture
def recorded() -> list[tuple[str, dict[str, Any]]]:
    """What ``testjobs.ok`` ran with in this test: ``(idempotency key, payload)``, in order."""
    from tests.support.jobs.ok import RECORDED

    RECORDED.clear()
    return RECORDED


@pytest.fixture
def lambda_context() -> Callable[..., Any]:
    """A factory of Lambda contexts (the local runtime's): ``lambda_context(remaining_ms=1)``."""
    return make_lambda_context


@pytest.fixture
def deployment(aws) -> FakeDeployment:
    """The miniature stack (queues, SSM parameters, outputs) deployed into moto through CloudFormation."""
    return deploy()


def _run_folder(config: pytest.Config, env: str, prefix: str) -> None:
    """A folder for the whole run named in ``env``, made by the controller before its workers start,
    so they inherit it; removed when the run ends. A developer's own setting is left alone."""
    if hasattr(config, "workerinput") or env in os.environ:
        return
    folder = tempfile.mkdtemp(prefix=prefix)
    os.environ[env] = folder

    def remove() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(env, None)

    config.add_cleanup(remove)


def pytest_configure(config: pytest.Config) -> None:
    """One synthesis cache for the whole run (``emulator/synth_cache.py``), and the folder where the
    workers say which modules are one unit of work (:mod:`tests.support.scheduling`)."""
    _run_folder(config, synth_cache.CACHE_ENV, "tiered-jobs-synth-")
    _run_folder(config, scheduling.UNITS_ENV, "tiered-jobs-units-")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist load``: each test to whichever worker is free, but a module that shares a costly
    fixture to one worker (:class:`tests.support.scheduling.OneWorkerModules`)."""
    return scheduling.OneWorkerModules(config, log) if config.getvalue("dist") == "load" else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A test's captured output may hold text no UTF-8 encodes (the letters of a job that raised a lone
    surrogate): a parallel worker could not send such a report and would stop, losing the tests it had
    left. The output is kept, with those characters escaped."""
    outcome = yield
    report = outcome.get_result()
    report.sections = [
        (title, text.encode("utf-8", "backslashreplace").decode("utf-8")) for title, text in report.sections
    ]


#: pytest-timeout's bound for a test of a module marked ``e2e`` or ``slow`` (pyproject.toml's 300 s for the
#: rest). Such a module's first test also starts its session (a synthesis and a deployment: about 40 s
#: idle, minutes on a loaded machine), and a scenario waits on real minutes (the breaker's window): 300 s
#: was a load-sensitive bound that killed a test before its own waits could say what they saw.
LONG_TEST_TIMEOUT_SECONDS = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first: the modules marked ``slow`` and those that synthesize (``synth``), then ``e2e``,
    then the rest, each in its collected order.

    ``make test`` hands the tests to parallel workers in this order; a long test picked up last
    would run alone at the end, so the long ones start first and the short ones fill the gaps. The
    slow and e2e modules each go to one worker whole, the synth modules to one worker together
    (:mod:`tests.support.scheduling`): that unit is among the longest.

    The e2e and slow tests get pytest-timeout's longer bound (:data:`LONG_TEST_TIMEOUT_SECONDS`).
    """

    def module(item: pytest.Item) -> str:
        return item.nodeid.split("::", 1)[0]

    def rank(item: pytest.Item) -> int:
        if item.get_closest_marker("slow") or item.get_closest_marker("synth"):
            return 0
        return 1 if item.get_closest_marker("e2e") else 2

    module_rank: dict[str, int] = {}
    module_order: dict[str, int] = {}
    for item in items:
        long = item.get_closest_marker("e2e") or item.get_closest_marker("slow")
        if long and not item.get_closest_marker("timeout"):  # a module's own bound stays
            item.add_marker(pytest.mark.timeout(LONG_TEST_TIMEOUT_SECONDS))
    for index, item in enumerate(items):
        module_rank[module(item)] = min(module_rank.get(module(item), 2), rank(item))
        module_order.setdefault(module(item), index)
    items.sort(key=lambda item: (module_rank[module(item)], module_order[module(item)]))
    scheduling.write_units(items)
