#!/usr/bin/env python3
"""CDK entry point (``npx cdk synth`` / ``npx cdk deploy``): everything lives in ``infra``."""
from infra.app import build_app

build_app().synth()
