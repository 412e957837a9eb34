"""Lambda's rule for tags, read from botocore's own service model: what ``TagResource`` refuses on AWS.

botocore validates a tag's length but not its pattern, and moto checks neither, so a value Lambda
refuses passes every local test. :func:`refusal` applies the model's ``TagKey`` / ``TagValue``
pattern (Java's ``\\p{L}``... classes, which the ``regex`` module reads as written) and limits.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import botocore.session
import regex


@cache
def _shapes() -> dict[str, tuple[Any, int, int]]:
    model = botocore.session.get_session().get_service_model("lambda")
    found = {}
    for name in ("TagKey", "TagValue"):
        metadata = model.shape_for(name).metadata
        found[name] = (regex.compile(metadata["pattern"]), metadata.get("min", 0), metadata["max"])
    return found


def refusal(key: str, value: str) -> str | None:
    """Why Lambda refuses the tag ``key=value`` (a ``ValidationException``'s reason), or ``None``."""
    for shape, text in (("TagKey", key), ("TagValue", value)):
        pattern, least, most = _shapes()[shape]
        if not least <= len(text) <= most:
            return f"{shape} {text!r} has {len(text)} characters, not {least} to {most}"
        if pattern.fullmatch(text) is None:
            return f"{shape} {text!r} does not match {pattern.pattern}"
    return None


def check_tags(tags: dict[str, str]) -> None:
    """Raise as Lambda's ``TagResource`` would for the first tag it refuses."""
    for key, value in tags.items():
        reason = refusal(key, value)
        if reason is not None:
            raise ValueError(f"ValidationException: 1 validation error detected: {reason}")
