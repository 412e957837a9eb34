#!/usr/bin/env python3
"""CDK entry point (``npx cdk synth`` / ``npx cdk deploy``); the app lives in ``infra``."""

import os
import sys

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # the pinned CLI runs on Node 20
from infra.app import main  # after the variable: jsii reads it on import

sys.exit(main(environ=os.environ))  # the CLI's CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION pick the target
