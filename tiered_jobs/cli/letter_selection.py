"""The options that pick dead letters, declared once for ``dlq replay`` and ``dlq discard``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Optional

import typer

# typer reads each option from the command's own signature, so the two commands cannot share one
# parameter object; they share these declarations instead, and `LetterSelection` gathers the values.
Tier = Annotated[str, typer.Argument(help="The tier whose DLQ to act on.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Count the letters it would act on; change nothing.")]
MessageIds = Annotated[
    Optional[list[str]],
    typer.Option("--message-id", help="Only this letter (repeat for several; `dlq inspect --ids` lists them)."),
]
JobType = Annotated[Optional[str], typer.Option("--job-type", help="Only these job types (glob, e.g. 'payments.*').")]
ErrorType = Annotated[
    Optional[str],
    typer.Option("--error-type", help="Only these error types (glob; 'unknown' for letters without reasons)."),
]
OlderThan = Annotated[int, typer.Option("--older-than", help="Only letters in the DLQ for at least this many seconds.")]
MaxMessages = Annotated[int, typer.Option("--max", help="Act on at most this many letters.")]


@dataclass(frozen=True)
class LetterSelection:
    """Which letters of a tier's DLQ a replay or a discard acts on, as the replay event names them."""

    tier: str
    dry_run: bool = False
    message_ids: Optional[list[str]] = None
    job_type: Optional[str] = None
    error_type: Optional[str] = None
    older_than: int = 0
    max_messages: int = 100

    def event(self, action: str) -> dict[str, Any]:
        """The replay event's fields for ``action`` (``replay`` or ``discard``)."""
        event: dict[str, Any] = {
            "action": action,
            "tier": self.tier,
            "dry_run": self.dry_run,
            "max_messages": self.max_messages,
            "job_type": self.job_type,
            "error_type": self.error_type,
            "older_than_seconds": self.older_than,
        }
        if self.message_ids:
            event["message_ids"] = list(self.message_ids)
        return event
