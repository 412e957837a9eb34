"""``python -m demo`` (``make demo``): exit 0 when every expectation of the story held."""

import sys

from demo.story import run_demo

sys.exit(run_demo())
