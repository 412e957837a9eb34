"""How a settings mistake reaches the person running ``cdk synth``: one line, no traceback.

``one_line(error)`` is the line (``tiered_jobs settings: <message>``). This repository's ``app.py``
prints it and exits 1 (``infra.app.main``); any other app gets the same from
:func:`install_excepthook`, which importing ``tiered_jobs.cdk`` calls: a ``SettingsError`` that
nothing caught prints that line and exits 1, as the CDK CLI expects of a failed app; every other
exception keeps Python's traceback (it is a bug to look into, not a setting to fix).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType

from tiered_jobs.contract.names import CONTEXT_KEY

from .values import SettingsError


def one_line(error: SettingsError) -> str:
    """The one line a settings mistake prints (its message names the key and the fix)."""
    return f"{CONTEXT_KEY} settings: {' '.join(str(error).splitlines())}"


ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], object]
#: Marks the hook installed, so a second import (or a reload) does not wrap it twice.
MARK = "tiered_jobs_settings"


def _hook(previous: ExceptHook) -> ExceptHook:
    def excepthook(kind: type[BaseException], error: BaseException, traceback: TracebackType | None) -> None:
        if isinstance(error, SettingsError):
            print(one_line(error), file=sys.stderr)
            return
        previous(kind, error, traceback)

    setattr(excepthook, MARK, True)
    return excepthook


def install_excepthook() -> None:
    """Print an uncaught ``SettingsError`` as :func:`one_line`'s line (once, keeping any hook already set)."""
    if not getattr(sys.excepthook, MARK, False):
        sys.excepthook = _hook(sys.excepthook)
