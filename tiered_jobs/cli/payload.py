"""``--payload``: a job's payload given inline, from a file (``@path``) or from stdin (``-``).

A payload on the command line is bounded by the operating system's argument limit (about 128 KiB
for one argument on Linux: "Argument list too long"), far below what a message may carry, so a
large payload is read from a file or a pipe, as ``curl -d @file`` and ``aws ... file://`` do.
Every way in ends in the same checks, and a mistake is one ``error:`` line with exit code 2 before
anything is published.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from .common import CliError

#: ``--payload -``: read the payload from stdin.
STDIN = "-"
#: ``--payload @path``: read the payload from that file.
FILE_PREFIX = "@"

_KINDS = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}


def read_payload(value: str, stdin: IO[str]) -> dict[str, Any]:
    """The payload object ``value`` gives: inline JSON, ``@path`` or ``-`` (read from ``stdin``)."""
    if value == STDIN:
        source, text = "--payload - (stdin)", stdin.read()
        if not text.strip():
            raise CliError(
                f"{source} is empty: pipe a JSON object into it, e.g. "
                "`jq -n '{\"id\": 1}' | tiered-jobs publish TYPE --key K --payload -`",
                2,
            )
    elif value.startswith(FILE_PREFIX):
        source, text = f"--payload {value}", _read_file(value[len(FILE_PREFIX) :])
    else:
        source, text = "--payload", value
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CliError(f"{source} is not valid JSON: {exc}", 2) from None
    if not isinstance(data, dict):
        kind = "null" if data is None else _KINDS.get(type(data), type(data).__name__)
        raise CliError(f"{source} must hold a JSON object (the job's payload), got {kind}", 2)
    return data


def _read_file(name: str) -> str:
    if not name:
        raise CliError("--payload @: name a file after the @, e.g. --payload @payload.json", 2)
    path = Path(name).expanduser()
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(
            f"--payload @{name}: no such file ({path.absolute()}); paths are relative to the current directory", 2
        ) from None
    except IsADirectoryError:
        raise CliError(f"--payload @{name} is a directory; name the JSON file in it", 2) from None
    except UnicodeDecodeError as exc:
        raise CliError(f"--payload @{name} is not UTF-8 text ({exc.reason} at byte {exc.start})", 2) from None
    except OSError as exc:
        raise CliError(f"--payload @{name} cannot be read: {exc.strerror or exc}", 2) from None
