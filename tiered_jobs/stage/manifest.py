"""A stage from its manifest (``tiered_jobs.contract.manifest``): how a publisher in another account finds the
tier queues, with no look-up in the stage's account (its SSM parameters and outputs are not readable there)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..contract.manifest import StageManifest
from ..contract.routing import Routes
from ..contract.tiers import TierQueues
from .discovery import Deployment, DiscoveryError


def from_manifest(source: str | Path | Mapping[str, Any]) -> Deployment:
    """``source``: the manifest's path, its JSON text, or the parsed object (the ``StageManifest`` output)."""
    if isinstance(source, Mapping):
        text, where = json.dumps(source), "stage manifest"
    elif isinstance(source, Path) or not str(source).lstrip().startswith("{"):
        path = Path(source)
        try:
            text, where = path.read_text(), f"stage manifest {path}"
        except OSError as exc:
            raise DiscoveryError(
                f"stage manifest {path}: cannot be read ({exc.strerror}); save the stack's StageManifest output there"
            ) from None
    else:
        text, where = str(source), "stage manifest"
    try:
        manifest = StageManifest.from_json(text, where)
    except ValueError as exc:
        raise DiscoveryError(str(exc)) from None
    return Deployment(
        tiers={tier: TierQueues(url, None) for tier, url in manifest.queues.items()},
        routes=Routes(manifest.routes),
        source=where,
        stage=manifest.stage,
    )
