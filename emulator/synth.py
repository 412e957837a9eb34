"""Synthesize the real CDK app into a directory, in a child process: ``python -m emulator.synth OUTDIR``.

stdin carries the local overrides as JSON: ``{"settings": {...}, "tier_settings": {...}}``, passed
to the app as context ``LOCAL_OVERRIDES_CONTEXT_KEY`` (the settings model applies them). A child
process keeps jsii's Node.js runtime (a few hundred MB) out of the process that then runs the
local stack.
"""

from __future__ import annotations

import json
import os
import sys

from tiered_jobs.contract.names import LOCAL_OVERRIDES_CONTEXT_KEY


def main(outdir: str) -> None:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    os.environ.setdefault("JSII_DEPRECATED", "quiet")
    from infra.app import (  # after the variables: jsii reads them on import
        build_app,
        load_cdk_context,
    )

    overrides = json.load(sys.stdin)
    context = {**load_cdk_context(), LOCAL_OVERRIDES_CONTEXT_KEY: overrides}
    build_app(context=context, outdir=outdir).synth()


if __name__ == "__main__":
    main(sys.argv[1])
