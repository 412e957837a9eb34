"""Does a command written in a page, an alarm or a workflow exist? Checked against the tools themselves,
never against a copied list: ``tiered-jobs`` by its own parser (the typer app's command objects), the
CDK CLI by the option registry the pinned CLI ships (``node_modules/aws-cdk``), so a renamed command,
a dropped option or a missing argument fails the check.
"""

from __future__ import annotations

import json
import shlex
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: The pinned CDK CLI's description of its commands and options (what ``cdk --help`` is built from).
CDK_REGISTRY = ROOT / "node_modules" / "aws-cdk" / "lib" / "cli" / "cli-type-registry.json"


def tiered_jobs_problems(command: str) -> list[str]:
    """Why ``command`` (``tiered-jobs ...``) would not parse (``[]``: it would): the global options, each
    group and command by name, and the command's own arguments and options, as the CLI parses them."""
    import typer

    from tiered_jobs.cli import app

    words = shlex.split(command)
    if not words or (words[0] != "tiered-jobs" and not words[0].endswith("/tiered-jobs")):
        return [f"{command!r} is not a tiered-jobs command"]
    current: Any = typer.main.get_command(app)
    try:
        context = current.make_context("tiered-jobs", words[1:])
        rest = _unparsed(context)
        while hasattr(current, "list_commands"):  # a group: its next word names a command
            if not rest:
                return [f"{command!r} names a group, not a command"]
            name, rest = rest[0], rest[1:]
            current = current.get_command(context, name)
            if current is None:
                return [f"{command!r}: no command {name!r}"]
            context = current.make_context(name, list(rest), parent=context)
            rest = _unparsed(context)
    except Exception as exc:  # a usage error of the CLI's parser is the answer; anything else is raised
        if not hasattr(exc, "format_message"):
            raise
        return [f"{command!r}: {exc.format_message()}"]
    return [f"{command!r}: unexpected {rest}"] if rest else []


def _unparsed(context: Any) -> list[str]:
    """What a group's parse left for its subcommands: the subcommand's name (kept apart) and its arguments."""
    return [*(getattr(context, "_protected_args", None) or []), *context.args]


@cache
def _cdk_registry() -> dict[str, Any]:
    registry: dict[str, Any] = json.loads(CDK_REGISTRY.read_text(encoding="utf-8"))
    return registry


def cdk_problems(command: str) -> list[str]:
    """Why ``command`` (``npx cdk SUBCOMMAND ...``) names a subcommand or option the pinned CDK CLI does not have,
    or a value outside an option's choices (``[]``: none)."""
    words = shlex.split(command)
    if words[:1] == ["npx"]:
        words = words[1:]
    if words[:1] != ["cdk"] or len(words) < 2:
        return [f"{command!r} is not a cdk command"]
    registry = _cdk_registry()
    sub = registry["commands"].get(words[1])
    if sub is None:
        return [f"{command!r}: the CDK CLI has no command {words[1]!r}"]
    options = {**registry["globalOptions"], **sub.get("options", {})}
    names = {f"--{name}": spec for name, spec in options.items()}
    for spec_name, spec in list(names.items()):
        for alias in _aliases(spec):
            names[f"-{alias}" if len(alias) == 1 else f"--{alias}"] = spec
        if spec.get("type") == "boolean":
            names[f"--no-{spec_name[2:]}"] = spec
    problems = []
    words_left = words[2:]
    while words_left:
        word, words_left = words_left[0], words_left[1:]
        if not word.startswith("-"):
            continue  # a stack name or an option's value
        flag, _, inline = word.partition("=")
        spec = names.get(flag)
        if spec is None:
            problems.append(f"{command!r}: cdk {words[1]} has no option {flag!r}")
            continue
        if spec.get("type") != "boolean" and not inline and words_left:
            inline, words_left = words_left[0], words_left[1:]
        if spec.get("choices") and inline and inline not in spec["choices"]:
            problems.append(f"{command!r}: {flag} {inline!r} is not one of {spec['choices']}")
    return problems


def _aliases(spec: dict[str, Any]) -> list[str]:
    alias = spec.get("alias", [])
    return [alias] if isinstance(alias, str) else list(alias)
