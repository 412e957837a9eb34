"""Each consumer's log group indexes the run line's fields a search filters with ``=`` (CloudFormation's
``AWS::Logs::LogGroup`` ``FieldIndexPolicies``, within ``PutIndexPolicy``'s 20 fields), beside the
retention the stage's settings give."""

from __future__ import annotations

import pytest

from tests.cdk.infra_support import find_consumer
from tiered_jobs.cdk.field_indexes import MAX_FIELDS, RUN_LINE_FIELDS
from tiered_jobs.contract.names import DEFAULT_TIERS
from tiered_jobs.operations.search_query import FIELDS


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_each_consumer_log_group_indexes_the_run_line_fields(default_synth, tier):
    _, consumer = find_consumer(default_synth, "dev", tier)
    group = default_synth.raw["Resources"][consumer["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]]

    assert group["Properties"]["FieldIndexPolicies"] == [{"Fields": list(RUN_LINE_FIELDS)}]
    assert group["Properties"]["RetentionInDays"] == 30


def test_the_indexed_fields_are_run_line_fields_a_search_shows_within_the_limit():
    assert len(RUN_LINE_FIELDS) <= MAX_FIELDS
    assert set(RUN_LINE_FIELDS) <= set(FIELDS)
