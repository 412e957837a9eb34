"""The fenced code blocks of README.md and docs/*.md, and the docs-test directives written next to them.

Every block with a language is code: the docs test (``tests/docs/test_docs_examples.py``) runs it
as written against local mode, or the page says why not. Directives are HTML comments (invisible on
the rendered page) on the lines right above the fence, one per line:

``<!-- docs-test: skip: REASON -->``
    not run; the reason is required and the test prints every skip.
``<!-- docs-test: given STATE -->``
    set up a named state first (:data:`tests.docs.local_mode.STATES`): letters in a DLQ, a settled
    queue, an IAM role the reader already has, the objects a Python fragment assumes...
``<!-- docs-test: replace OLD => NEW -->``
    run the block with ``OLD`` replaced by ``NEW``, in its commands and in the output it shows: what
    only a real deployment has (the stage ``prod``, a letter's message id). ``NEW`` may use the shell
    variables a state exports (``$LETTER_ID``).
``<!-- docs-test: background: TEXT -->``
    commands containing ``TEXT`` run until stopped (a server, ``--follow``): they must still be
    running after a moment, and are then stopped.
``<!-- docs-test: session -->``
    the block starts local mode: the test's own session was started by its first command (on a free
    port) and must have printed every other line of it.
``<!-- docs-test: app-file PATH -->``
    the block is file ``PATH`` of the example app of docs/library.md, which
    ``tests/library/test_outside_app.py`` writes from the page, installs with the built wheel in a
    fresh virtualenv, synthesizes with the pinned CDK CLI (cdk-nag on) and runs on local mode: the
    block runs there, as a whole app, not here as a fragment.

Blocks without a language, ``text``, ``mermaid`` and ``ts`` are text (file trees, diagrams, output
samples; TypeScript is compiled by the TypeScript publisher's own tests).
The others run so: ``bash``/``sh`` as one script (``set -eo pipefail``); ``console`` one ``$ ``
prompt at a time, its shown output checked (:func:`output_problems`); ``python`` in a subprocess, as
pasted into ``python -``; ``json`` parsed, and checked by the contract or the settings model when it
is an envelope, a payload schema, a replay event or a ``cdk.json`` snippet; ``yaml`` (a CI workflow)
parsed, each step's ``tiered-jobs``, ``npx cdk`` and ``make`` command checked against the tools themselves
(:mod:`tests.support.commands`, the Makefile's targets).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

SHELL = frozenset({"bash", "sh"})
CONSOLE = "console"
PYTHON = "python"
JSON = "json"
#: A CI workflow: parsed, its steps' commands checked against the tools (never run: it deploys).
YAML = "yaml"
#: Not code: file trees, diagrams, output samples; and TypeScript, whose calls the TypeScript publisher's
#: own ``npm test`` compiles (publishers/typescript/example/publish.ts), not this test.
TEXT = frozenset({"", "text", "mermaid", "ts"})
LANGUAGES = SHELL | TEXT | {CONSOLE, PYTHON, JSON, YAML}

DIRECTIVES = ("skip", "given", "replace", "background", "session", "app-file")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<language>[\w+-]*)\s*$")


def pages() -> list[Path]:
    """The README and every page under docs/ (new pages are picked up by the glob)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def name_of(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@dataclass(frozen=True)
class Directive:
    kind: str
    argument: str
    line: int


@dataclass(frozen=True)
class Block:
    page: str
    #: 1-based line of the opening fence.
    line: int
    language: str
    text: str
    directives: tuple[Directive, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_code(self) -> bool:
        return self.language not in TEXT

    def arguments(self, kind: str) -> list[str]:
        return [d.argument for d in self.directives if d.kind == kind]

    @property
    def skip_reason(self) -> str | None:
        reasons = self.arguments("skip")
        return reasons[0] if reasons else None

    @property
    def givens(self) -> list[str]:
        return self.arguments("given")

    @property
    def backgrounds(self) -> list[str]:
        return self.arguments("background")

    @property
    def replacements(self) -> list[tuple[str, str]]:
        pairs = [argument.split("=>", 1) for argument in self.arguments("replace")]
        return [(old.strip(), new.strip()) for old, new in pairs]

    @property
    def app_file(self) -> str | None:
        """The example app's file this block is (``app-file``), run by the library test."""
        paths = self.arguments("app-file")
        return paths[0] if paths else None

    @property
    def is_session(self) -> bool:
        return any(d.kind == "session" for d in self.directives)

    @property
    def runnable(self) -> str:
        """The text to run: the block with its ``replace`` directives applied."""
        text = self.text
        for old, new in self.replacements:
            text = text.replace(old, new)
        return text


def directive_problems(directive: Directive) -> list[str]:
    """What is wrong with one directive (empty: it is well-formed)."""
    kind, argument = directive.kind, directive.argument
    if kind not in DIRECTIVES:
        return [f"unknown docs-test directive {kind!r}; known: {', '.join(DIRECTIVES)}"]
    if kind == "skip" and not argument:
        return ["'skip' needs a reason: <!-- docs-test: skip: why this cannot run here -->"]
    if kind == "replace" and (argument.count("=>") != 1 or not argument.split("=>")[0].strip()):
        return ["'replace' takes OLD => NEW"]
    if kind in ("given", "background", "app-file") and not argument:
        return [f"{kind!r} needs an argument"]
    if kind == "session" and argument:
        return ["'session' takes no argument"]
    return []


def _directive(text: str, line: int) -> Directive:
    kind, argument = re.fullmatch(r"([\w-]*):?\s*(.*)", text, re.S).groups()  # always matches
    return Directive(kind, argument.strip(), line)


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order, with the directives right above each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, indent = match.group("fence"), match.group("indent")
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        directives: list[Directive] = []
        above = index - 1
        while above >= 0 and (directive := _DIRECTIVE.match(lines[above])):
            directives.insert(0, _directive(directive.group(1), above + 1))
            above -= 1
        body = "\n".join(
            line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[index + 1 : end]
        )
        found.append(Block(name_of(page), index + 1, match.group("language"), body + "\n", tuple(directives)))
        index = end + 1
    return found


def app_files(page: Path) -> dict[str, str]:
    """``{path: text}`` of the blocks of ``page`` that are files of its example app (``app-file``)."""
    return {block.app_file: block.text for block in blocks(page) if block.app_file is not None}


def stray_directives(page: Path) -> list[int]:
    """Lines of docs-test comments that belong to no block (not right above a fence)."""
    attached = {d.line for block in blocks(page) for d in block.directives}
    lines = page.read_text(encoding="utf-8").splitlines()
    return [number for number, line in enumerate(lines, 1) if _DIRECTIVE.match(line) and number not in attached]


# -- console blocks: `$ ` prompts and the output they show -----------------------------------------


@dataclass(frozen=True)
class Prompt:
    #: Line in the page.
    line: int
    command: str
    shown: tuple[str, ...]

    @property
    def expects_failure(self) -> bool:
        """The page shows an error (``error: ...``): the command must exit non-zero."""
        return any(line.startswith("error:") for line in self.shown)


def prompts(block: Block, text: str | None = None) -> list[Prompt]:
    """The ``$ `` commands of a console block, each with the lines it shows (until the next prompt)."""
    found: list[Prompt] = []
    command: list[str] | None = None
    shown: list[str] = []
    start = 0

    def close() -> None:
        if command is not None:
            found.append(Prompt(start, "\n".join(command), tuple(shown)))

    for offset, line in enumerate((text if text is not None else block.runnable).splitlines()):
        if line.startswith("$ "):
            close()
            command, shown, start = [line[2:]], [], block.line + 1 + offset
        elif command is not None and command[-1].endswith("\\") and not shown:
            command.append(line)
        elif command is not None:
            shown.append(line)
    close()
    return found


_TABLE_CHARS = frozenset("┏┓┗┛┃━┳┻╋┡┩╇│─└┘┌┐├┤┬┴┼")
_TOKENS = re.compile(
    r"(?P<uuid>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})|(?P<gap>…|\.\.\.)|(?P<digits>\d+)|(?P<space>\s+)"
)


def line_pattern(shown: str) -> re.Pattern[str]:
    """A shown output line as a pattern: numbers, UUIDs and ``…``/``...`` stand for any value (they
    change from run to run); runs of white space (a terminal's wrapping) are one space."""
    parts: list[str] = []
    position = 0
    for token in _TOKENS.finditer(shown.strip()):
        parts.append(re.escape(shown.strip()[position : token.start()]))
        kind = token.lastgroup
        parts.append(
            {"uuid": r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}", "gap": ".*?", "digits": r"\d+", "space": " "}[
                kind or "space"
            ]
        )
        position = token.end()
    parts.append(re.escape(shown.strip()[position:]))
    return re.compile("".join(parts))


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("┃").split("┃")]


def output_problems(shown: tuple[str, ...], actual: str) -> list[str]:
    """What of the shown output does not appear in ``actual``: each text line (in order, values
    free), and a table's column names (its header row, exactly). Borders and rows are not compared:
    they hold the state of the moment."""
    problems: list[str] = []
    flat = " ".join(actual.split())
    position = 0
    headers = [line for line in shown if "┃" in line]
    if headers:
        actual_headers = [_cells(line) for line in actual.splitlines() if "┃" in line]
        if _cells(headers[0]) not in actual_headers:
            problems.append(f"table columns {_cells(headers[0])} not in the output (its headers: {actual_headers})")
    for line in shown:
        if not line.strip() or line.strip() in ("...", "…") or _TABLE_CHARS & set(line):
            continue
        match = line_pattern(line).search(flat, position)
        if match is None:
            problems.append(f"shown line not in the output: {line.strip()!r}")
        else:
            position = match.end()
    return problems


# -- job types the examples publish ---------------------------------------------------------------

#: Job types the docs publish on purpose to show the error (``no route for job type ...``).
DELIBERATE_ERRORS = frozenset({"billing.invoice"})
_PUBLISHED = (
    re.compile(r"tiered-jobs(?: --\S+(?: \S+)?)* publish ([a-z0-9_.]+)"),
    re.compile(r"""\b(?:publish|publish_on_commit|Job|\.add)\(\s*["']([a-z0-9_.]+)["']"""),
)


def published_job_types(code: str) -> set[str]:
    """The job types ``code`` publishes (the CLI's ``publish``, ``publish(...)``, ``Job(...)``, ``.add(...)``)."""
    return {match for pattern in _PUBLISHED for match in pattern.findall(code)}


# -- json blocks ------------------------------------------------------------------------------------


def parse_json(text: str) -> Any:
    """A JSON block's value: a whole document, or a fragment of one (an object's members, as
    ``cdk.json`` snippets are shown, or an array's elements)."""
    try:
        return json.loads(text)
    except ValueError as whole:
        for wrapped in ("{" + text + "}", "[" + text + "]"):
            try:
                return json.loads(wrapped)
            except ValueError:
                continue
        raise whole from None


#: ``"...": "..."`` in a snippet stands for the entries already there.
ELIDED = "..."


def merged(base: Any, snippet: Any) -> Any:
    """``snippet`` applied to ``base`` as a reader edits ``cdk.json``: objects merge key by key,
    ``"...": "..."`` entries stand for what is already there, anything else replaces."""
    if isinstance(base, dict) and isinstance(snippet, dict):
        result = dict(base)
        for key, value in snippet.items():
            if key != ELIDED:
                result[key] = merged(base.get(key), value)
        return result
    return snippet
