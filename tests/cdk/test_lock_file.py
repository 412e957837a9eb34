"""The lock file and its comparison (``tiered_jobs/cdk/lock.py``), on plain records: no synthesis."""

from __future__ import annotations

import json

import pytest

from tiered_jobs.cdk import lock
from tiered_jobs.cdk.lock import Retained

DLQ = Retained(
    "bulk/dlq",
    "AWS::SQS::Queue",
    "TierbulkDlq0A402E09",
    {"QueueName": "tiered-jobs-prod-bulk-dlq"},
    "the tier's letters",
)
TABLE = Retained(
    "idempotency/table",
    "AWS::DynamoDB::Table",
    "IdempotencyTable48612DF4",
    {"KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}]},
    "every finished job's idempotency record",
)


def _with(record: Retained, **changes) -> Retained:
    return Retained(**{**record.__dict__, **changes})


def test_an_unchanged_or_new_resource_passes():
    recorded = {DLQ.key: DLQ}
    new = _with(TABLE, key="unique/table")
    assert lock.replacements(recorded, {DLQ.key: DLQ, new.key: new}) == []


def test_a_resource_that_leaves_the_stack_is_refused_naming_it_what_it_holds_and_the_way_out():
    (problem,) = lock.replacements({DLQ.key: DLQ}, {}, stage="prod")
    assert problem.startswith("The DLQ of tier 'bulk' (tiered-jobs-prod-bulk-dlq) would leave the stack")
    assert "It holds the tier's letters" in problem
    assert "`tiered-jobs --stage prod dlq replay bulk`" in problem
    assert "-c tiered_jobs:allow_replacement=bulk/dlq" in problem and "-c tiered_jobs:lock_update=true" in problem


def test_a_new_logical_id_or_a_replacement_property_is_refused_but_other_properties_are_not():
    moved = _with(DLQ, logical_id="TierbatchDlq1")
    (problem,) = lock.replacements({DLQ.key: DLQ}, {DLQ.key: moved})
    assert "its logical id changes from TierbulkDlq0A402E09 to TierbatchDlq1" in problem
    rekeyed = _with(TABLE, properties={"KeySchema": [{"AttributeName": "key", "KeyType": "HASH"}]})
    (problem,) = lock.replacements({TABLE.key: TABLE}, {TABLE.key: rekeyed})
    assert problem.startswith("The idempotency table (IdempotencyTable48612DF4) would be replaced: KeySchema")
    assert "'id'" in problem and "'key'" in problem and "DynamoDB export or backup" in problem
    fifo = _with(DLQ, properties={**DLQ.properties, "FifoQueue": True})
    assert "FifoQueue None -> True" in lock.replacements({DLQ.key: DLQ}, {DLQ.key: fifo})[0]
    # A property CloudFormation updates in place (here one the guard does not record) is no replacement.
    retention = _with(DLQ, properties={**DLQ.properties, "MessageRetentionPeriod": 60})
    assert lock.replacements({DLQ.key: DLQ}, {DLQ.key: retention}) == []


def test_an_allowed_key_passes_and_only_that_one():
    queue = _with(DLQ, key="bulk/queue", properties={"QueueName": "tiered-jobs-prod-bulk"})
    recorded = {DLQ.key: DLQ, queue.key: queue}
    allowed = lock.allowed_keys("bulk/dlq")
    (problem,) = lock.replacements(recorded, {}, allowed)
    assert problem.startswith("The queue of tier 'bulk'")
    assert lock.replacements(recorded, {}, lock.allowed_keys(["bulk/dlq", "bulk/queue"])) == []
    assert lock.allowed_keys(" bulk/queue, bulk/dlq ,") == {"bulk/queue", "bulk/dlq"}
    assert lock.allowed_keys(None) == frozenset()
    with pytest.raises(lock.LockError, match="tiered_jobs:allow_replacement' must be a list of keys"):
        lock.allowed_keys({"bulk": "dlq"})


def test_writing_keeps_the_other_stages_and_reads_back(tmp_path):
    path = tmp_path / lock.LOCK_FILE
    assert lock.read(path) == {}  # no file: nothing recorded, nothing to compare
    lock.write(path, "TieredJobs-prod", [DLQ, TABLE])
    lock.write(path, "TieredJobs-dev", [DLQ])
    lock.write(path, "TieredJobs-prod", [TABLE])  # a stage's records are replaced as a whole
    assert lock.read(path) == {"TieredJobs-dev": {DLQ.key: DLQ}, "TieredJobs-prod": {TABLE.key: TABLE}}
    assert json.loads(path.read_text())["version"] == lock.FORMAT_VERSION


def test_a_file_that_is_no_lock_names_itself_and_the_fix(tmp_path):
    path = tmp_path / lock.LOCK_FILE
    path.write_text('{"stacks": {"TieredJobs-dev": {"bulk/dlq": {"type": "AWS::SQS::Queue"}}}}')
    with pytest.raises(lock.LockError, match=r"not a Tiered Jobs lock file .*-c tiered_jobs:lock_update=true"):
        lock.read(path)
