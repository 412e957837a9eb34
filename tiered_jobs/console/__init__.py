"""``tiered-jobs console``: the operator web console (Starlette + Jinja2 + htmx, served by uvicorn).

Needs the ``console`` extra (``pip install 'tiered-jobs[console]'``); services that only publish
never install it. See docs/console.md.
"""

from __future__ import annotations

#: The modules the console needs beyond the base package, and the extra that brings them.
REQUIRED_MODULES = ("starlette", "jinja2", "uvicorn", "multipart")
INSTALL_HINT = "the console needs its extra: pip install 'tiered-jobs[console]'"


def missing_modules() -> list[str]:
    """The console's dependencies not importable here (empty when the extra is installed)."""
    import importlib.util

    return [name for name in REQUIRED_MODULES if importlib.util.find_spec(name) is None]
