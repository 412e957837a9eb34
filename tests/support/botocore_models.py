"""Each botocore data file parsed once per test process.

A real CLI command or a Lambda builds its boto3 session once per process. The suite builds
thousands: every CLI invoke, console request and lookup under test makes its own, as its process
would. Each new session loads the endpoint rules and the service models from botocore's JSON files
again, and that parse was about half the CPU of a CLI test.

botocore already shares one parsed file among all the clients of a session; sharing it among the
sessions of the test process as well changes nothing a test can observe.
"""

from __future__ import annotations

import threading
from typing import Any

from botocore.loaders import JSONFileLoader

_parsed: dict[str, Any] = {}
_lock = threading.Lock()


def share_parsed_files() -> None:
    """Patch :meth:`JSONFileLoader.load_file` to keep what it parsed (idempotent)."""
    original = JSONFileLoader.load_file
    if getattr(original, "shares_parsed_files", False):
        return

    def load_file(self: JSONFileLoader, file_path: str) -> Any:
        with _lock:
            if file_path in _parsed:
                return _parsed[file_path]
        data = original(self, file_path)
        if data is not None:
            with _lock:
                data = _parsed.setdefault(file_path, data)
        return data

    load_file.shares_parsed_files = True  # type: ignore[attr-defined]
    JSONFileLoader.load_file = load_file  # type: ignore[method-assign]
