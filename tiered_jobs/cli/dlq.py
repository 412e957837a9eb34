"""``tiered-jobs dlq inspect | replay | discard | show``: a tier's dead letters, by the replay domain."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from ..contract.names import DeadLetter
from ..operations.display import format_duration
from ..operations.replays import Via, default_archive_path, run_replay
from ..stage.target import Target
from .common import CliError, reported_errors, terminal
from .groups import print_groups, print_message_ids
from .letter_selection import DryRun, ErrorType, JobType, LetterSelection, MaxMessages, MessageIds, OlderThan, Tier

#: ``tiered-jobs dlq ...``, added to ``tiered-jobs`` by :mod:`tiered_jobs.cli`.
commands = typer.Typer(help="Inspect a tier's dead-letter queue and replay it.", no_args_is_help=True)

_VIA_HELP = "Run the replay code here (direct) or invoke the deployed replay function (lambda)."
_STOPPED = {
    "dlq_empty": "nothing else in the DLQ",
    "all_seen": "every visible letter was looked at; run again to continue",
    "max_messages": "reached --max; run again for more",
    "all_found": "every --message-id was found",
    "time_budget": "out of time; run again to continue",
    "archive_failed": "the archive could not be written",
}


@commands.command("inspect")
def dlq_inspect(
    ctx: typer.Context,
    tier: str = typer.Argument(..., help="The tier whose DLQ to read."),
    max_messages: int = typer.Option(100, "--max", help="Read at most this many letters."),
    ids: bool = typer.Option(False, "--ids", help="Also list every letter's message id, by group."),
    as_json: bool = typer.Option(False, "--json", help="Print the replay function's JSON response."),
    via: Via = typer.Option(Via.auto, "--via", help=_VIA_HELP),
) -> None:
    """Group the letters of a tier's DLQ by job type and error (nothing is removed)."""
    with reported_errors():
        answer = _replay(ctx.obj, {"action": "inspect", "tier": tier, "max_messages": max_messages}, via)
        if as_json:
            terminal().print_json(data=answer)
            return
        out = terminal()
        out.print(
            f"{answer['matched']} letter(s) read from the {escape(tier)} DLQ in {len(answer['groups'])} group(s); "
            f"{answer['left_in_dlq']} in the DLQ now ({_stopped(answer)}).",
            soft_wrap=not out.is_terminal,  # one line in a pipe, as the table's rows are; wrapped on a screen
        )
        _print_outside_window(answer)
        print_groups(answer["groups"])
        if ids:
            print_message_ids(answer["groups"])


@commands.command("replay")
def dlq_replay(
    ctx: typer.Context,
    tier: Tier,
    dry_run: DryRun = False,
    message_ids: MessageIds = None,
    job_type: JobType = None,
    error_type: ErrorType = None,
    older_than: OlderThan = 0,
    max_messages: MaxMessages = 100,
    max_per_second: Optional[float] = typer.Option(None, "--max-per-second", help="Rate limit (default: none)."),
    allow_outside_window: bool = typer.Option(
        False,
        "--allow-outside-window",
        help="Also move letters older than the tier's idempotency window (their jobs may run again).",
    ),
    include_expired: bool = typer.Option(
        False,
        "--include-expired",
        help="Also move letters whose job's deadline (expires_at) has passed (the consumer archives them unrun).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the replay function's JSON response."),
    via: Via = typer.Option(Via.auto, "--via", help=_VIA_HELP),
) -> None:
    """Move letters back to the tier's queue: send first, delete only what was sent."""
    with reported_errors():
        selection = LetterSelection(tier, dry_run, message_ids, job_type, error_type, older_than, max_messages)
        event = selection.event("replay") | {"max_per_second": max_per_second}
        if allow_outside_window:
            event["allow_outside_idempotency_window"] = True
        if include_expired:
            event["include_expired"] = True
        answer = _replay(ctx.obj, event, via)
        if as_json:
            terminal().print_json(data=answer)
        else:
            stopped = _stopped(answer)
            if dry_run:
                terminal().print(
                    f"Dry run: {answer['matched']} letter(s) would be replayed to the {escape(tier)} queue; "
                    f"nothing was moved ({stopped})."
                )
            else:
                terminal().print(
                    f"Replayed {answer['moved']} of {answer['matched']} matching letter(s) to the "
                    f"{escape(tier)} queue, {answer['failed']} failed; {answer['left_in_dlq']} left in the DLQ "
                    f"({stopped})."
                )
            _print_outside_window(answer)
            if answer.get("left_expired"):
                terminal().print(
                    f"{answer['left_expired']} letter(s) whose job's deadline has passed were left in the DLQ: "
                    "their jobs would not run. Discard them, or replay with --include-expired.",
                    soft_wrap=True,
                )
            print_groups(answer["groups"])
        if answer["failed"]:
            raise CliError(f"{answer['failed']} letter(s) could not be sent and stay in the DLQ: run the replay again")
        _refuse_not_found(answer, tier)


@commands.command("discard")
def dlq_discard(
    ctx: typer.Context,
    tier: Tier,
    dry_run: DryRun = False,
    message_ids: MessageIds = None,
    job_type: JobType = None,
    error_type: ErrorType = None,
    older_than: OlderThan = 0,
    max_messages: MaxMessages = 100,
    archive: Optional[Path] = typer.Option(
        None,
        "--archive",
        help="JSON-lines file the letters are appended to before they are deleted.  "
        "[default: ./tiered-jobs-discarded-<stage>-<tier>.jsonl]",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the replay function's JSON response."),
    via: Via = typer.Option(Via.auto, "--via", help=_VIA_HELP),
) -> None:
    """Drop letters that will never succeed: each is archived whole (and synced to disk) before it is deleted."""
    with reported_errors():
        target: Target = ctx.obj
        selection = LetterSelection(tier, dry_run, message_ids, job_type, error_type, older_than, max_messages)
        event = selection.event("discard")
        path = archive or default_archive_path(target.stage, tier)
        answer = _replay(target, event, via, archive_path=path)
        if as_json:
            terminal().print_json(data=answer)
        elif dry_run:
            terminal().print(
                f"Dry run: {answer['matched']} letter(s) would be discarded from the {escape(tier)} DLQ; "
                f"nothing was archived or deleted ({_stopped(answer)})."
            )
        else:
            terminal().print(
                f"Discarded {answer['discarded']} of {answer['matched']} matching letter(s) from the "
                f"{escape(tier)} DLQ, archived to {escape(str(answer['archive']))}; {answer['failed']} "
                f"failed; {answer['left_in_dlq']} left in the DLQ ({_stopped(answer)})."
            )
        if not as_json:
            print_groups(answer["groups"])
        if answer["archive_error"]:
            raise CliError(
                f"could not write the archive {answer['archive']} ({answer['archive_error']}): the letters "
                "not archived were not deleted"
            )
        if answer["failed"]:
            raise CliError(
                f"{answer['failed']} archived letter(s) could not be deleted and stay in the DLQ: "
                "run the discard again (the archive may then hold them twice)"
            )
        _refuse_not_found(answer, tier)


@commands.command("show")
def dlq_show(
    ctx: typer.Context,
    tier: str = typer.Argument(..., help="The tier whose DLQ holds the letter."),
    message_ids: list[str] = typer.Option(..., "--message-id", help="The letter's message id (repeatable)."),
    max_messages: int = typer.Option(1000, "--max", help="Look through at most this many letters."),
    as_json: bool = typer.Option(False, "--json", help="Print the letters as JSON."),
    via: Via = typer.Option(Via.auto, "--via", help=_VIA_HELP),
) -> None:
    """Show letters in full: body, every attribute, and the real (unmasked) error message."""
    with reported_errors():
        event = {"action": "show", "tier": tier, "message_ids": list(message_ids), "max_messages": max_messages}
        answer = _replay(ctx.obj, event, via)
        letters = answer.get("letters") or []
        if as_json:
            terminal().print_json(data=letters)
        for letter in [] if as_json else letters:
            _print_letter(letter)
        missing = sorted(set(message_ids) - {letter["message_id"] for letter in letters})
        if missing:
            raise CliError(f"not found in the {tier} DLQ: {', '.join(missing)} ({_stopped(answer)})")


def _print_letter(letter: dict[str, Any]) -> None:
    """Every field on its own line, never wrapped mid-value; then the body, pretty-printed when it is JSON."""
    console = terminal()
    for label, key in (
        ("Message id", "message_id"),
        ("Job type", "job_type"),
        ("Reason", "reason"),
        ("Error type", "error_type"),
        ("Error message", "error_message"),
        ("Failed at", "frame"),
        ("First failed", "first_failed_at"),
        ("Dead-lettered", "dead_lettered_at"),
        ("Sent to the DLQ", "sent_at"),
    ):
        console.print(f"[bold]{label}:[/] {escape(str(letter.get(key)))}", soft_wrap=True)
    offloaded = letter.get("offloaded")
    if offloaded:  # large_payloads: the body below is the stored one, read back (or the pointer, if it could not be)
        where = offloaded.get("url") or offloaded["pointer"]
        said = "the body below was read back" if offloaded.get("error") is None else f"not read: {offloaded['error']}"
        console.print(
            f"[bold]Offloaded:[/] {escape(str(where))} ({offloaded.get('size')} bytes); {escape(said)}", soft_wrap=True
        )
    if letter.get("traceback"):  # where the job failed: its last frames, innermost last
        console.print("[bold]Traceback:[/]")
        console.print(escape(letter["traceback"].rstrip("\n")), soft_wrap=True, highlight=False)
    console.print("[bold]Message attributes:[/]")
    for name, value in sorted(letter["message_attributes"].items()):
        shown = value.get("StringValue", value.get("BinaryValue"))
        if name == DeadLetter.TRACEBACK and letter.get("traceback"):
            shown = "(the traceback above)"
        console.print(f"  {escape(name)} ({value['DataType']}): {escape(str(shown))}", soft_wrap=True)
    console.print(
        "[bold]SQS attributes:[/] " + escape(", ".join(f"{k}={v}" for k, v in sorted(letter["attributes"].items()))),
        soft_wrap=True,
    )
    console.print("[bold]Body:[/]")
    try:
        body = json.dumps(json.loads(letter["body"]), indent=2, ensure_ascii=False)
    except ValueError:
        body = letter["body"]
    console.print(escape(body), soft_wrap=True, highlight=False)
    console.print()


def _refuse_not_found(answer: dict[str, Any], tier: str) -> None:
    """Exit 1 naming every ``--message-id`` the run did not act on: never a silent no-op.

    The letters found were handled as asked; one left out by another filter is named with the others.
    Those refused for their age were already explained by ``_print_outside_window`` and are named too.
    """
    outcomes: dict[str, str] = answer.get("outcomes") or {}
    missing = sorted(mid for mid, outcome in outcomes.items() if outcome == "not_found")
    left_out = sorted(
        mid for mid, outcome in outcomes.items() if outcome in ("not_matched", "refused_outside_window", "left_expired")
    )
    problems = []
    if missing:
        problems.append(f"not found in the {tier} DLQ: {', '.join(missing)} ({_stopped(answer)})")
    if left_out:
        problems.append(f"left in the {tier} DLQ by the other filters or their age: {', '.join(left_out)}")
    if problems:
        raise CliError("; ".join(problems))


def _stopped(answer: dict[str, Any]) -> str:
    stopped: str = _STOPPED.get(answer["stopped_because"], answer["stopped_because"])
    return stopped


def _print_outside_window(answer: dict[str, Any]) -> None:
    """Say how many letters are older than the tier's idempotency window, and what happened to them."""
    outside, refused, ttl = (
        answer.get("outside_window"),
        answer.get("refused_outside_window"),
        answer.get("idempotency_ttl_seconds"),
    )
    if not outside:
        return
    window = (
        f"the tier's idempotency window ({format_duration(ttl)})"
        if ttl is not None
        else ("the tier's idempotency window (unknown: the stage was deployed before replay could read it)")
    )
    if refused:
        terminal().print(
            f"{refused} letter(s) older than {window} were left in the DLQ: replaying them could run "
            "jobs that had completed again. Discard them, or replay with --allow-outside-window after "
            "checking.",
            soft_wrap=True,
        )
    else:
        terminal().print(f"{outside} letter(s) are older than {window}.", soft_wrap=True)


def _replay(target: Target, event: dict[str, Any], via: Via, archive_path: Path | None = None) -> dict[str, Any]:
    """The replay domain (here or in the deployed function), with a progress bar on a terminal.

    Here, each tier's idempotency window comes from the stage's SSM parameters (a note on stderr
    when they cannot be read), and ``discard`` archives to ``archive_path``.
    """
    return run_replay(
        target,
        event,
        via,
        progress=_progress,
        status=terminal(stderr=True).status,
        archive_path=archive_path,
        note=lambda text: terminal(stderr=True).print(f"note: {escape(text)}"),
    )


@contextmanager
def _progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = terminal(stderr=True)
    if not console.is_terminal:  # a log or a pipe gets the summary only
        yield lambda matched: None
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=max(total, 1))
        yield lambda matched: progress.update(task, completed=matched)
