"""How a status figure reads, the same on every face (the CLI's tables, the console's pages, the
emulator's live view): a duration, and a tier's alarms in one cell."""

from __future__ import annotations

from collections.abc import Mapping


def format_duration(seconds: float | None) -> str:
    """``3725`` -> ``1h 2m``; ``None`` -> ``–``."""
    if seconds is None:
        return "–"
    seconds = int(seconds)
    for unit, size, smaller, smaller_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if seconds >= size:
            rest = (seconds % size) // smaller_size
            return f"{seconds // size}{unit} {rest}{smaller}" if rest else f"{seconds // size}{unit}"
    return f"{seconds}s"


def alarm_summary(states: Mapping[str, str]) -> str:
    """One terminal cell (rich markup) for ``{kind: state}``: the kinds in ALARM, else how many are OK or
    without data."""
    if not states:
        return "–"
    firing = [kind for kind, state in states.items() if state == "ALARM"]
    if firing:
        return f"[bold red]ALARM: {', '.join(firing)}[/]"
    ok = sum(state == "OK" for state in states.values())
    no_data = len(states) - ok
    parts = ([f"[green]{ok} OK[/]"] if ok else []) + ([f"{no_data} no data"] if no_data else [])
    return ", ".join(parts)
