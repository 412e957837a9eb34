"""Every job type the docs publish is one the consumer has registered (an unregistered one publishes,
then dead-letters)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Job types the docs publish on purpose to show the error (`no route for job type ...`).
DELIBERATE_ERRORS = {"billing.invoice"}
_PUBLISHED = [
    re.compile(r"tiered-jobs(?: --\S+(?: \S+)?)* publish ([a-z0-9_.]+)"),
    re.compile(r"""\b(?:publish|publish_on_commit|Job|jobs\.add|jobs_of\(session\)\.add|buffer\.add)\(\s*["']([a-z0-9_.]+)["']"""),
]


def _code_blocks(text: str) -> str:
    return "\n".join(re.findall(r"```[a-z]*\n(.*?)```", text, re.S))


@pytest.mark.parametrize("doc", ["README.md", "docs/cli.md", "docs/publishing.md"])
def test_docs_publish_only_registered_job_types(doc):
    import functions.jobs  # noqa: F401 - importing the package registers every example job
    from tiered_jobs.runtime.registry import registry

    code = _code_blocks((ROOT / doc).read_text(encoding="utf-8"))
    published = {match for pattern in _PUBLISHED for match in pattern.findall(code)}
    assert published, f"{doc}: no publish example found (did the patterns drift?)"
    assert sorted(published - set(registry.types()) - DELIBERATE_ERRORS) == []
