"""A boto3 client that records every call it passes on: ``(operation name, keyword arguments)``."""

from __future__ import annotations

from typing import Any


class Recording:
    """Wraps ``real``; each call is appended to ``calls`` before it runs (failed calls included)."""

    def __init__(self, real: Any, calls: list[tuple[str, dict[str, Any]]] | None = None):
        self._real = real
        self.calls: list[tuple[str, dict[str, Any]]] = [] if calls is None else calls

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)
        if not callable(method):
            return method

        def call(**kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            return method(**kwargs)

        return call

    def of(self, operation: str) -> list[dict[str, Any]]:
        """The keyword arguments of every call of ``operation``, in order."""
        return [kwargs for name, kwargs in self.calls if name == operation]
