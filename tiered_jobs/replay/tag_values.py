"""Tag values Lambda accepts: what a pause or the circuit breaker records on a mapping, made to fit.

Lambda's ``TagValue`` (botocore's model, ``lambda`` ``2015-03-31``) is at most 256 characters of
letters, numbers, white space and ``_ . : / = + - @`` (``[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*``). Lambda
checks it, botocore does not: a value outside it is refused by ``TagResource`` on AWS only (an
operator named ``arn:... (cli)`` was, so no pause was ever recorded there). Every value we write
goes through :func:`tag_value`; ``tests/replay/test_pause.py`` checks them against the
model's own pattern.
"""

from __future__ import annotations

import unicodedata

__all__ = ["MAX_TAG_VALUE", "REPLACEMENT", "tag_value"]

#: Lambda's limit on a tag value's length.
MAX_TAG_VALUE = 256
#: The punctuation the pattern allows besides letters (``L``), separators (``Z``) and numbers (``N``).
ALLOWED_PUNCTUATION = frozenset("_.:/=+-@")
#: What stands for a character the pattern refuses (a role session name's ``,``, a parenthesis).
REPLACEMENT = "_"


def _allowed(char: str) -> bool:
    # The Unicode general categories \p{L}, \p{Z} and \p{N} name: the first letter of each category.
    return char in ALLOWED_PUNCTUATION or unicodedata.category(char)[0] in "LZN"


def tag_value(text: str) -> str:
    """``text`` as Lambda takes it: each refused character replaced by :data:`REPLACEMENT`, cut to 256."""
    return "".join(char if _allowed(char) else REPLACEMENT for char in text)[:MAX_TAG_VALUE]
