"""Synthesize the real CDK app into a directory, in a child process: ``python -m emulator.synth OUTDIR``.

stdin carries the local overrides as JSON: ``{"settings": {...}, "tier_settings": {...}}``.
``settings`` replace keys under ``tiered_jobs`` in ``cdk.json``'s context; ``tier_settings`` are
merged into every tier ``cdk.json`` names. A child process keeps jsii's Node.js runtime (a few
hundred MB) out of the process that then runs the local stack.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tiered_jobs.contract.names import CONTEXT_KEY, DEFAULT_TIERS


def local_context(load_cdk_context: Any, settings: dict[str, Any], tier_settings: dict[str, Any]) -> dict[str, Any]:
    """``cdk.json``'s context with the overrides applied (tiers keep their own other values)."""
    context: dict[str, Any] = load_cdk_context(**settings)
    app_settings = context[CONTEXT_KEY]
    tiers = app_settings.get("tiers") or {name: {} for name in DEFAULT_TIERS}
    app_settings["tiers"] = {name: {**(values or {}), **tier_settings} for name, values in tiers.items()}
    return context


def main(outdir: str) -> None:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    os.environ.setdefault("JSII_DEPRECATED", "quiet")
    from infra.app import (  # after the variables: jsii reads them on import
        build_app,
        load_cdk_context,
    )

    overrides = json.load(sys.stdin)
    context = local_context(load_cdk_context, overrides["settings"], overrides["tier_settings"])
    build_app(context=context, outdir=outdir).synth()


if __name__ == "__main__":
    main(sys.argv[1])
