"""Local mode's processes (``up``, its function workers, the suite's own) import the standard-library
parts of ``tiered_jobs.cdk`` (settings, asset staging, the packages layer) without loading the CDK:
jsii starts a Node.js runtime on import, seconds of CPU each time."""

from __future__ import annotations

import subprocess
import sys

LOADED = "import sys, {modules}; print(sorted(m for m in ('aws_cdk', 'constructs', 'jsii') if m in sys.modules))"


def loaded_by(*modules: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", LOADED.format(modules=", ".join(modules))], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_the_emulator_and_the_cdk_packages_stdlib_parts_load_no_cdk():
    assert (
        loaded_by(
            "emulator.session",
            "emulator.deploy",
            "tiered_jobs.cdk.packaging",
            "tiered_jobs.cdk.dependencies",
            "tiered_jobs.cdk.settings",
        )
        == "[]"
    )


def test_the_construct_loads_the_cdk_when_it_is_used():
    assert loaded_by("tiered_jobs.cdk; tiered_jobs.cdk.TieredJobs") == "['aws_cdk', 'constructs', 'jsii']"
