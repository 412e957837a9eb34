"""The base of every error the library raises on purpose, with the exit status an operator tool gives it.

Each part keeps its own error type (an envelope's, a route's, the publisher's, the settings'...),
and each is a :class:`TieredJobsError` too, so a face of the library (the CLI, the console, an
app's synthesis) reports any of them the same way: its message as one line, and ``code`` as the
exit status: 2 for a mistake in the request (bad input, an unknown name), 1 for anything else
(something missing or refused where the request was sent).

Only the standard library: the contract is imported everywhere, the consumer's cold start included.
"""

from __future__ import annotations

#: The exit status of a mistake in the request (``typer``'s usage errors use it too).
USAGE = 2
#: The exit status of any other failure an operator can act on.
FAILURE = 1


class TieredJobsError(Exception):
    """A failure the library raises on purpose: ``str(error)`` is one readable line, ``code`` its exit status."""

    code: int = FAILURE
    #: The exception it was raised from says more to an operator (a publish that failed on a client
    #: error): tools explain that cause instead.
    explained_by_cause: bool = False
