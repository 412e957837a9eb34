"""botocore's endpoint rules parsed once per test process.

A real CLI command or a Lambda builds its boto3 session once per process. The suite builds
thousands: every CLI invoke, console request and lookup under test makes its own, as its process
would. Each new session parses botocore's endpoint rules (``endpoints.json``, about 1 MB) again,
and that parse was about half the CPU of a CLI test.

botocore shares one parsed file among the clients of a session; sharing the endpoint rules and the
other shared data files among the sessions of the test process too changes nothing a test can
observe. The service models (``service-2``, with their paginators and waiters) cannot be shared:
moto adds error codes to a session's parsed model when it raises a service's error, botocore
merges its SDK extras into the model in place, and a test that reads botocore's models
(``tests/runtime/test_aws_errors.py``) must see them as botocore ships them. So each session still
gets a model of its own, but made from the first parse's pickle rather than parsed from the
gzipped JSON again: unpickling builds the same ordered dictionaries in a third to a quarter of the
time (DynamoDB's model: 3.4 ms against 8.7 ms), and a copy.deepcopy would cost more than the parse.
"""

from __future__ import annotations

import os
import pickle
import threading
from typing import Any

from botocore.loaders import JSONFileLoader, Loader

#: Files parsed per session as botocore does (the service models, their paginators and waiters).
PER_SESSION = ("service-2", "paginators-1", "waiters-2")
_parsed: dict[str, Any] = {}
#: The per-session files' first parse, pickled: each load unpickles a copy of its own.
_pickled: dict[str, bytes] = {}
_listed: dict[tuple[tuple[str, ...], str], list[str]] = {}
_lock = threading.Lock()


def share_parsed_files() -> None:
    """Patch :meth:`JSONFileLoader.load_file` to keep what it parsed (for :data:`PER_SESSION`, a
    pickle to copy), and :meth:`Loader.list_available_services` to keep what it listed (idempotent)."""
    original = JSONFileLoader.load_file
    if getattr(original, "shares_parsed_files", False):
        return

    def load_file(self: JSONFileLoader, file_path: str) -> Any:
        if os.path.basename(file_path).startswith(PER_SESSION):
            return _own_copy(original, self, file_path)
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

    # Which services a loader can find: a listing of botocore's data folder (about 400 folders, each
    # checked on disk), made again by every session; the same for the same folders.
    list_services = Loader.list_available_services

    def list_available_services(self: Loader, type_name: str) -> list[str]:
        key = (tuple(self.search_paths), type_name)
        with _lock:
            if key in _listed:
                return list(_listed[key])
        listed = list_services(self, type_name)
        with _lock:
            _listed.setdefault(key, list(listed))
        return listed

    Loader.list_available_services = list_available_services  # type: ignore[method-assign]


def _own_copy(original: Any, loader: JSONFileLoader, file_path: str) -> Any:
    """A parse of ``file_path`` that nobody else holds: unpickled from the first parse's pickle."""
    with _lock:
        pickled = _pickled.get(file_path)
    if pickled is not None:
        return pickle.loads(pickled)
    data = original(loader, file_path)
    if data is not None:  # pickled before anyone can change it (the extras' merge, moto's error codes)
        with _lock:
            _pickled.setdefault(file_path, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
    return data
