"""This app's stack keeps the logical id of every resource a deployed stage has.

CloudFormation replaces a resource whose logical id changes: a queue with its jobs, a table with its
records. An id comes from the construct's path (the stack's name, ``infra/stack.py``'s construct id,
each part's id), so a moved module, a renamed construct or a new level of nesting changes it without
any code saying so. ``app_logical_ids.json`` holds the ids and types of the app's template for
``cdk.json``'s settings (``default_synth``, synthesized once for the construct tests); a resource added
since is free, one whose id or type changed is named here. The lock file guards only the retained
queues and tables at synthesis (``tiered_jobs/cdk/lock.py``); this covers every resource.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.synth

PINNED = Path(__file__).with_name("app_logical_ids.json")
#: The CDK CLI's version report, present only when the CLI synthesizes: not a resource of the app's.
CLI_ONLY = "AWS::CDK::Metadata"


def test_every_pinned_logical_id_keeps_its_type_in_the_apps_template(default_synth):
    pinned: dict[str, str] = json.loads(PINNED.read_text(encoding="utf-8"))["resources"]
    template = {key: resource["Type"] for key, resource in default_synth.raw["Resources"].items()}
    assert len(pinned) > 100 and CLI_ONLY not in pinned.values()
    changed = {key: (kind, template.get(key)) for key, kind in pinned.items() if template.get(key) != kind}
    assert changed == {}, (
        "resources whose logical id or type changed (CloudFormation would replace them; "
        "keep the construct path, or update app_logical_ids.json knowingly): {pinned: (type, now)}"
    )
