"""The replacement guard in synthesis: the example's committed lock against templates of changed settings.

``tiered-jobs.lock.json`` records the example's deployed ``dev`` stage. A synthesis that renames the
``bulk`` tier must fail naming its queue and DLQ and the letters at stake; a harmless change passes;
the allowed key goes through. The lock is only read here: the one write goes to a copy.
"""

from __future__ import annotations

import shutil

import pytest

from infra.app import LOCK, build_app, load_cdk_context, main
from tiered_jobs.cdk import TieredJobs
from tiered_jobs.cdk import lock as lock_file
from tiered_jobs.cdk.lock import ALLOW_CONTEXT_KEY, LOCK_CONTEXT_KEY, REPLACEMENT_PROPERTIES, UPDATE_CONTEXT_KEY
from tiered_jobs.contract.names import stack_name

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

STACK = stack_name("dev")
#: ``bulk`` renamed ``batch``, its job types routed along.
RENAMED = {"critical": {}, "transactional": {}, "batch": {}}


def _recorded() -> dict[str, lock_file.Retained]:
    return lock_file.read(LOCK)[STACK]


def test_the_example_lock_records_the_default_templates_retained_queues_and_tables(default_synth):
    recorded = _recorded()
    tiers = ("critical", "transactional", "bulk")
    assert {f"{t}/{part}" for t in tiers for part in ("queue", "dlq")} | {"idempotency/table"} <= set(recorded)
    for key, record in recorded.items():
        resource = default_synth.raw["Resources"].get(record.logical_id)
        assert resource is not None, f"{key}: {record.logical_id} is not in the template"
        assert resource["Type"] == record.type and resource["DeletionPolicy"] == "Retain", key
        template = {name: resource["Properties"].get(name) for name in REPLACEMENT_PROPERTIES[record.type]}
        assert {name: value for name, value in template.items() if value is not None} == record.properties, key


def test_the_replacement_guard_refusing_a_tier_rename(capsys):
    """``app.py``'s synthesis with ``bulk`` renamed: exit 1, the queue named with what it holds and the way out;
    its DLQ, allowed for this deploy, goes through."""
    routes = {**load_cdk_context()["tiered_jobs"]["routes"], "analytics.*": "batch"}
    context = load_cdk_context(tiers=RENAMED, routes=routes)
    context[ALLOW_CONTEXT_KEY] = "bulk/dlq"
    assert main(context=context) == 1
    said = capsys.readouterr().err
    assert "The queue of tier 'bulk' (tiered-jobs-dev-bulk) would leave the stack" in said
    assert "It holds the tier's jobs waiting to run" in said
    assert "`tiered-jobs --stage dev status`" in said and "-c tiered_jobs:allow_replacement=bulk/queue" in said
    assert "The DLQ of tier 'bulk'" not in said  # allowed
    assert "Traceback" not in said


def test_a_harmless_change_passes_and_the_update_records_it_in_the_lock_alone(tmp_path):
    copy = tmp_path / lock_file.LOCK_FILE
    shutil.copy(LOCK, copy)
    before = LOCK.read_bytes()
    tiers = {"critical": {}, "transactional": {}, "bulk": {"max_concurrency": 3, "retention_days": 3}}
    context = load_cdk_context(tiers=tiers)
    context[LOCK_CONTEXT_KEY] = str(LOCK)
    (jobs,) = [c for c in build_app(context, outdir=str(tmp_path / "a")).node.find_all() if isinstance(c, TieredJobs)]
    assert jobs.node.validate() == []  # compared with the committed lock: nothing replaced

    context = {**context, LOCK_CONTEXT_KEY: str(copy), UPDATE_CONTEXT_KEY: "true"}
    (jobs,) = [c for c in build_app(context, outdir=str(tmp_path / "b")).node.find_all() if isinstance(c, TieredJobs)]
    assert jobs.node.validate() == []
    written = lock_file.read(copy)[STACK]
    assert lock_file.replacements(_recorded(), written) == []
    assert {key: written[key] for key in _recorded()} == _recorded()
    assert LOCK.read_bytes() == before  # the committed lock is only ever read


def _validate(context, outdir) -> list[str]:
    (jobs,) = [c for c in build_app(context, outdir=str(outdir)).node.find_all() if isinstance(c, TieredJobs)]
    return jobs.node.validate()


def test_recording_the_lock_lets_through_only_the_replacements_allowed(tmp_path):
    """``lock_update`` alone does not pass a renamed tier, nor rewrite the lock: recording the new state is for
    after a deploy that ``allow_replacement`` let through, and names the same keys."""
    copy = tmp_path / lock_file.LOCK_FILE
    shutil.copy(LOCK, copy)
    before = copy.read_bytes()
    routes = {**load_cdk_context()["tiered_jobs"]["routes"], "analytics.*": "batch"}
    context = {
        **load_cdk_context(tiers=RENAMED, routes=routes),
        LOCK_CONTEXT_KEY: str(copy),
        UPDATE_CONTEXT_KEY: "true",
        ALLOW_CONTEXT_KEY: "bulk/dlq",
    }
    (refused,) = _validate(context, tmp_path / "a")
    assert refused.startswith("The queue of tier 'bulk' (tiered-jobs-dev-bulk) would leave the stack")
    record = "record the new state with -c tiered_jobs:lock_update=true -c tiered_jobs:allow_replacement=bulk/queue"
    assert record in refused
    assert copy.read_bytes() == before  # nothing recorded

    assert _validate({**context, ALLOW_CONTEXT_KEY: "bulk/queue,bulk/dlq"}, tmp_path / "b") == []
    written = lock_file.read(copy)[STACK]
    assert {"batch/queue", "batch/dlq"} <= set(written) and not {"bulk/queue", "bulk/dlq"} & set(written)
