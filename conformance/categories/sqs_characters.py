"""The characters SQS accepts in a message, each edge of its ranges."""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract.sqs_limits import (
    first_disallowed_character,
)

from ..case import Case, case


def sqs_characters() -> list[Case]:
    edges = [
        (0x0, "NUL"),
        (0x8, "backspace, below tab"),
        (0x9, "tab"),
        (0xA, "line feed"),
        (0xB, "vertical tab"),
        (0xC, "form feed"),
        (0xD, "carriage return"),
        (0xE, "shift out"),
        (0x1F, "unit separator"),
        (0x20, "space, the first of the main range"),
        (0x7F, "DEL is accepted"),
        (0xD7FF, "last before surrogates"),
        (0xD800, "a lone high surrogate"),
        (0xDFFF, "a lone low surrogate"),
        (0xE000, "first after surrogates"),
        (0xFFFD, "the replacement character, last of the BMP range"),
        (0xFFFE, "a noncharacter"),
        (0xFFFF, "a noncharacter"),
        (0x10000, "first outside the BMP"),
        (0x10FFFF, "the last code point"),
    ]
    found = []
    for code_point, text in edges:
        value = f"a{chr(code_point)}b"
        found.append(
            case(
                f"U+{code_point:04X}",
                text,
                {"text": value, "code_points": [ord(c) for c in value]},
                _first_refused(value),
            )
        )
    later = "ok\U0001f600\ufffe"
    found.append(
        case(
            "index-in-code-points",
            "the index counts code points (an emoji is one)",
            {"text": later, "code_points": [ord(c) for c in later]},
            _first_refused(later),
        )
    )
    return found


def _first_refused(text: str) -> dict[str, Any]:
    found = first_disallowed_character(text)
    return {"first_refused": None if found is None else {"index": found[0], "code_point": found[1]}}
