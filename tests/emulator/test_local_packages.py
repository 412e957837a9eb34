"""Local mode runs a job that imports its folder's packages (``requirements.txt``), installed for this
interpreter, and its hot reload reinstalls them when the file changes.

The app is docs/library.md's (``tests/support/outside_app.py``) with a ``requirements.txt`` and a
job that imports a C extension (``msgpack``) and a pure-Python package (``humanize``); neither is
installed in this environment, so the job runs only with the layer on its path.
"""

from __future__ import annotations

import json
import sys

import pytest

from emulator.cdk_app import CdkApp
from emulator.deploy import LOCAL_STAGE
from emulator.session import LocalSession
from tests.emulator.local_support import PATIENCE_SECONDS, wait_until
from tests.support.outside_app import write_app
from tests.support.packages import REQUIREMENTS, package_cache
from tiered_jobs.cdk.dependencies import CACHE_ENV
from tiered_jobs.publisher import Publisher

pytestmark = pytest.mark.e2e

TIER = "bulk"  # the app routes every type but invoices.* there
JOB = """\
import importlib.metadata
import json

import humanize
import msgpack
from msgpack import _cmsgpack  # the C extension itself (msgpack would fall back to pure Python)

from tiered_jobs.runtime import job


@job("packs.check")
def check(payload, ctx):
    packed = msgpack.packb(payload)
    print("packs.check " + json.dumps({
        "key": ctx.idempotency_key,
        "count": humanize.intcomma(payload["count"]),
        "roundtrip": msgpack.unpackb(packed) == payload,
        "humanize": importlib.metadata.version("humanize"),
        "files": [_cmsgpack.__file__, humanize.__file__],
    }))
"""


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory):
    folder = write_app(tmp_path_factory.mktemp("billing"), sys.executable)
    jobs = folder / "src" / "jobs"
    (jobs / "requirements.txt").write_text(REQUIREMENTS)
    (jobs / "packs.py").write_text(JOB)
    init = jobs / "__init__.py"
    init.write_text(init.read_text() + "from . import packs  # noqa: F401,E402\n")
    return folder


@pytest.fixture(scope="module")
def session(app_dir, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:  # the synthesis (a child process) and the reloads share it
        patch.setenv(CACHE_ENV, str(package_cache(tmp_path_factory)))
        local = LocalSession(app=CdkApp.load(app_dir), reload_interval_seconds=0.5, alarm_interval_seconds=5)
        local.start()
        yield local
        local.stop()


def _reports(session, key):
    consumer = session.deployment.tiers[TIER].consumer.name
    lines = [line for line in list(session.logs.get(consumer, ())) if "packs.check " in line]
    found = [json.loads(line.split("packs.check ", 1)[1]) for line in lines]
    return [report for report in found if report["key"] == key]


def _publish(session, key, count):
    publisher = Publisher.from_stage(LOCAL_STAGE, ssm=session.clients("ssm"), sqs=session.clients("sqs"))
    publisher.publish("packs.check", {"count": count}, key)
    return wait_until(
        lambda: _reports(session, key), what=f"packs.check {key} in the {TIER} consumer's log", timeout=PATIENCE_SECONDS
    )[0]


def test_a_job_imports_its_binary_and_pure_python_packages_from_the_layer(session):
    layers = session.functions[session.deployment.tiers[TIER].consumer.name].layer_paths
    assert len(layers) == 1
    report = _publish(session, "p-1", 1234567)
    assert (report["count"], report["roundtrip"], report["humanize"]) == ("1,234,567", True, "4.13.0")
    assert all(path.startswith(layers[0]) for path in report["files"]), (report["files"], layers)
    assert report["files"][0].endswith(".so")  # the C extension, built for this machine


def test_a_changed_requirements_txt_is_installed_then_reloaded(session, app_dir):
    requirements = app_dir / "src" / "jobs" / "requirements.txt"
    requirements.write_text(REQUIREMENTS.replace("humanize==4.13.0", "humanize==4.12.0"))
    version = wait_until(lambda: session.code_versions, what="a new code version", timeout=PATIENCE_SECONDS)[0]
    assert version.changed == ("jobs/requirements.txt",)
    report = _publish(session, "p-2", 1000)
    assert (report["count"], report["humanize"]) == ("1,000", "4.12.0")
