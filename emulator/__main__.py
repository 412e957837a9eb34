"""The emulator's commands (``up``, ``logs``): ``python -m emulator`` from this checkout, or
``python <checkout>/emulator`` from anywhere else (your CDK app's folder, say)."""

import sys
from pathlib import Path

if not __package__:  # run as a folder: import the emulator from its checkout, not from inside the folder
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from emulator.cli import app, emulator_prefix  # after the checkout is importable

app(prog_name=emulator_prefix(python="python"))
