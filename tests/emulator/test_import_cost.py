"""What importing costs where it is paid often.

Local mode's processes (``up``, its function workers, the suite's own) import the standard-library
parts of ``tiered_jobs.cdk`` (settings, asset staging, the packages layer) without loading the CDK:
jsii starts a Node.js runtime on import, seconds of CPU each time. The consumer's handler, imported
at every Lambda cold start, loads only what a plain job needs; the paths few records take load their
modules on first use. And what it loads defines few dataclasses: each generates and compiles its
methods at import (about a millisecond of CPU), which bytecode in the asset cannot save.
"""

from __future__ import annotations

import os
import subprocess
import sys

#: Modules of paths few records take (a rate limit, a letter, a job that ends unrun, a unique lock, a batch
#: member) and of what no function runs: importing the consumer's handler loads none of them.
NOT_AT_COLD_START = (
    "tiered_jobs.runtime.ratelimit",
    "tiered_jobs.contract.large_payloads",  # a pointer's: read for a record with attributes, or an offloading tier
    "tiered_jobs.contract.progress",  # the stored progress: loaded by the first job that reports it
    "tiered_jobs.contract.tiers",  # the queues' shape: the consumer reads its own from its settings
    "tiered_jobs.contract.rate_limits",
    "tiered_jobs.runtime.deadletter",
    "tiered_jobs.runtime.tracebacks",
    "tiered_jobs.runtime.ended",
    "tiered_jobs.runtime.unique",
    "tiered_jobs.contract.unique",
    "tiered_jobs.contract.batches",
    "tiered_jobs.runtime.batches",
    "tiered_jobs.replay",
    "tiered_jobs.publisher",
    "tiered_jobs.operations",
    "tiered_jobs.cli",
    "tiered_jobs.cdk",
)


def loaded_by(*modules: str, watched: tuple[str, ...] = ("aws_cdk", "constructs", "jsii"), env=None) -> str:
    code = f"import sys, {', '.join(modules)}; print(sorted(m for m in {watched!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
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


def test_the_consumer_handler_loads_no_module_of_a_rare_path_at_import():
    env = {**os.environ, "TIERED_JOBS_JOB_MODULES": "tests.support.jobs"}
    assert loaded_by("tiered_jobs.handlers.consumer", watched=NOT_AT_COLD_START, env=env) == "[]"
    # The check sees a module that is loaded: the package that loads them all.
    assert loaded_by("tiered_jobs.runtime.ratelimit", watched=NOT_AT_COLD_START) == str(
        ["tiered_jobs.contract.rate_limits", "tiered_jobs.runtime.ratelimit"]
    )


def test_reading_a_first_delivery_loads_no_pointer_module_and_a_record_with_attributes_does():
    code = (
        "import json, sys\n"
        "from tiered_jobs.runtime.received import read\n"
        "body = json.dumps({'type': 'a.b', 'idempotency_key': 'k', 'payload': {}, 'version': 1})\n"
        "plain = {'messageId': 'm', 'body': body, 'attributes': {'ApproximateReceiveCount': '1'}}\n"
        "read(plain, set(), fetch=lambda raw: body)\n"
        "print('tiered_jobs.contract.large_payloads' in sys.modules)\n"
        "attributed = {**plain, 'messageAttributes': {'ExtendedPayloadSize': {'stringValue': '9'}}}\n"
        "print(read(attributed, set(), fetch=lambda raw: body).envelope.type)\n"  # the pointer was read
        "print('tiered_jobs.contract.large_payloads' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "a.b", "True"]


#: The dataclasses a plain job's cold path defines: the types a job or a test builds or copies
#: (``dataclasses.replace``); the consumer's internal records are plain classes.
COLD_PATH_DATACLASSES = {
    "tiered_jobs.contract.envelope.Envelope",
    "tiered_jobs.runtime.backoff.RetryPolicy",
    "tiered_jobs.runtime.config.TierConfig",
    "tiered_jobs.runtime.job_policy.JobPolicy",
    "tiered_jobs.runtime.registry.JobContext",
    "tiered_jobs.runtime.registry.JobDefinition",
}


def test_the_consumer_handler_defines_only_the_public_dataclasses_at_import():
    code = (
        "import dataclasses, sys\n"
        "made = []\n"
        "original = dataclasses._process_class\n"
        "def counted(cls, *args, **kwargs):\n"
        "    made.append(f'{cls.__module__}.{cls.__qualname__}')\n"
        "    return original(cls, *args, **kwargs)\n"
        "dataclasses._process_class = counted\n"
        "import tiered_jobs.handlers.consumer\n"
        "print('\\n'.join(sorted(m for m in made if m.startswith('tiered_jobs.'))))\n"
    )
    env = {**os.environ, "TIERED_JOBS_JOB_MODULES": "tests.support.jobs"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert set(result.stdout.split()) == COLD_PATH_DATACLASSES
