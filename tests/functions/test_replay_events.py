"""The example app's console replay events (``functions/events/replay/*.json``): the construct's
console test events for each tier, as files the operator pastes or passes to ``aws lambda invoke``."""

from __future__ import annotations

import json
from pathlib import Path

from infra.app import load_cdk_context
from tiered_jobs.contract.names import DEFAULT_TIERS
from tiered_jobs.contract.replay_events import PAUSE_ACTIONS, PAUSE_EVENT_FIELDS, console_events, routed_glob
from tiered_jobs.replay import parse_event

ROOT = Path(__file__).resolve().parents[2]


def test_console_event_files_equal_console_events_and_parse():
    directory = ROOT / "functions" / "events" / "replay"
    routes = load_cdk_context()["tiered_jobs"]["routes"]
    expected = {
        name: event for tier in DEFAULT_TIERS for name, event in console_events(tier, routed_glob(tier, routes)).items()
    }
    files = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in directory.glob("*.json")}
    assert files == expected
    for name, event in files.items():
        if event["action"] in PAUSE_ACTIONS:  # the tier's mapping, not its letters: the pause event's fields
            assert set(event) <= set(PAUSE_EVENT_FIELDS) and name == f"{event['tier']}-{event['action']}"
            continue
        request = parse_event(event, tiers=DEFAULT_TIERS)
        assert name.startswith(request.tier + "-")
