"""``python -m emulator``: the emulator's commands (``up``, ``demo``, ``logs``)."""

from emulator.cli import app

app(prog_name="python -m emulator")
