"""``python -m conformance write DIR``: write every vector file into DIR (the checked-in ones: conformance/vectors)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .categories import vectors


def render(content: object) -> str:
    """A vector file's text: indented, ASCII only (a lone surrogate or a control character is an escape
    any JSON reader decodes), one trailing newline."""
    return json.dumps(content, indent=2, ensure_ascii=True) + "\n"


def write(folder: Path) -> list[Path]:
    """Write every category's file into ``folder``; the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in vectors().items():
        path = folder / name
        path.write_text(render(content), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("write", help="write the vector files")
    command.add_argument("folder", type=Path, help="where to write them (the repository's: conformance/vectors)")
    arguments = parser.parse_args(argv)
    for path in write(arguments.folder):
        cases = len(json.loads(path.read_text(encoding="utf-8"))["cases"])
        print(f"{path}: {cases} cases")


if __name__ == "__main__":
    main()
