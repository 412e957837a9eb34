"""The TypeScript publisher (publishers/typescript, ``@tiered-jobs/publisher``): its build and its own tests.

Its ``npm test`` builds the ESM and CommonJS outputs, compiles the typed example (whose
``@ts-expect-error`` lines prove the payload types refuse bad payloads), and runs Node's test runner
over every conformance vector, the re-send and aggregate-error tests and discovery, on an in-memory
SQS client. ``make setup`` installs its pinned packages (``npm ci``); this test runs what it installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "publishers" / "typescript"
NPM = shutil.which("npm")

pytestmark = pytest.mark.skipif(shutil.which("node") is None or NPM is None, reason="Node.js is not installed")


def test_the_typescript_publisher_builds_and_passes_its_tests_and_every_vector():
    assert (PACKAGE / "node_modules" / ".installed").exists(), "run make setup: it runs npm ci in publishers/typescript"
    assert NPM is not None
    run = subprocess.run([NPM, "test", "--silent"], cwd=PACKAGE, capture_output=True, text=True, check=False)
    assert run.returncode == 0, f"npm test failed in {PACKAGE}:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    # Node's TAP summary: "# pass 170", "# fail 0"; every vector (151) is one test.
    counts = dict(re.findall(r"^# (pass|fail) (\d+)$", run.stdout, re.M))
    assert counts.get("fail") == "0" and int(counts.get("pass", 0)) >= 151, counts
