"""A failed job's traceback, bounded for its dead letter, and the frame of the job's code that raised.

A ``KeyError: 'qty'`` alone does not say which line of which job raised it. The function log gets
the whole traceback (the consumer logs the failure with ``exc_info``); the letter gets what fits an
SQS message attribute (``DeadLetter.Traceback``, :mod:`tiered_jobs.contract.letter_traceback`):

- **the last frames**: at most :data:`MAX_FRAMES` per exception of the chain, then whole frames are
  dropped from the top (the oldest, furthest from the error) until the value fits
  :data:`~tiered_jobs.contract.letter_traceback.MAX_BYTES`; a single frame still too long is cut
  from its start. The innermost frames and the exception line are what a developer reads first.
- **the failing frame**: the innermost frame whose file belongs to the job's own code, the package
  that holds the job's handler (``jobs/orders.py:42 in reserve`` in an app's job folder), not the library's, a
  dependency's or the standard library's. ``dlq inspect`` groups letters by it.
- **no caret lines** (``^^^^`` under a source line, since Python 3.11): the log has them.
- **short paths**: a file under a ``sys.path`` entry is written relative to it (``/var/task/``
  and ``site-packages/`` add nothing but bytes).

Loaded on the first failure only (the consumer imports it there): the happy path's cold start does
not pay for ``traceback`` and ``linecache``.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any

from tiered_jobs.contract.letter_traceback import MAX_BYTES, LetterTraceback, encoded_bytes

from .errors import exception_chain

#: Frames kept per exception of the chain before the byte cap applies (a deep recursion has a
#: thousand; its last ones say where it went wrong).
MAX_FRAMES = 12
_CUT = "…"
_CARETS = re.compile(r"^\s*[\^~]+\s*$")


def letter_traceback(
    exc: BaseException, handler: Callable[..., Any] | None, max_bytes: int = MAX_BYTES
) -> LetterTraceback:
    """The bounded traceback of ``exc`` and the innermost frame in the code of ``handler``'s package."""
    roots = _job_code_roots(handler)
    frame = failing_frame(exc, roots)
    summary = traceback.TracebackException.from_exception(exc, limit=-MAX_FRAMES)
    _shorten_paths(summary)
    chunks = [_without_carets(chunk) for chunk in summary.format()]
    while len(chunks) > 1 and encoded_bytes(frame, "".join(chunks)) > max_bytes:
        chunks.pop(0)
    text = "".join(chunks)
    if encoded_bytes(frame, text) > max_bytes:
        text = _CUT + _tail_within(frame, text[-max_bytes:], max_bytes)  # a character is 1 byte or more
    return LetterTraceback(frame=frame, text=text)


def _tail_within(frame: str | None, text: str, max_bytes: int) -> str:
    """The longest tail of ``text`` whose value (after :data:`_CUT`) fits ``max_bytes``: a binary search,
    since a character costs 1 to 6 bytes once UTF-8 and JSON escapes count."""
    low, high = 0, len(text)  # text[high:] == "" always fits
    while low < high:
        middle = (low + high) // 2
        if encoded_bytes(frame, _CUT + text[middle:]) <= max_bytes:
            high = middle
        else:
            low = middle + 1
    return text[low:]


def _without_carets(chunk: str) -> str:
    """A frame without the lines of ``^^^`` / ``~~~`` under its source (bytes the letter spends better on frames)."""
    return "".join(line for line in chunk.splitlines(keepends=True) if not _CARETS.match(line))


def failing_frame(exc: BaseException, roots: tuple[str, ...]) -> str | None:
    """``path:line in function`` of the innermost frame under ``roots``, looking through the chain of
    causes (the job's own frame may be in the exception a wrapper raised from)."""
    if not roots:
        return None
    for err in exception_chain(exc):
        found = None
        for filename, lineno, name in _frames(err.__traceback__):
            if filename.startswith(roots):
                found = f"{short_path(filename)}:{lineno} in {name}"
        if found is not None:
            return found
    return None


def short_path(filename: str) -> str:
    """``filename`` relative to the longest ``sys.path`` entry that holds it (as imports name it)."""
    best = ""
    for entry in sys.path:
        if entry and filename.startswith(entry.rstrip(os.sep) + os.sep) and len(entry) > len(best):
            best = entry.rstrip(os.sep) + os.sep
    return filename[len(best) :] if best else filename


def _job_code_roots(handler: Callable[..., Any] | None) -> tuple[str, ...]:
    """The folder of the top-level package holding ``handler`` (the app's own code), or its file
    when the job is a top-level module."""
    module_name = getattr(handler, "__module__", None)
    if not module_name:
        return ()
    top = sys.modules.get(module_name.split(".")[0])
    filename = getattr(top, "__file__", None)
    if not filename:
        return ()
    if getattr(top, "__path__", None) is not None:  # a package: everything under its folder
        return (os.path.dirname(os.path.abspath(filename)) + os.sep,)
    return (os.path.abspath(filename),)


def _frames(tb: TracebackType | None) -> Iterator[tuple[str, int, str]]:
    while tb is not None:
        code = tb.tb_frame.f_code
        yield os.path.abspath(code.co_filename), tb.tb_lineno, code.co_name
        tb = tb.tb_next


def _shorten_paths(summary: traceback.TracebackException) -> None:
    seen: set[int] = set()
    current: traceback.TracebackException | None = summary
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame_summary in current.stack:
            frame_summary.filename = short_path(frame_summary.filename)
        current = current.__cause__ or current.__context__
