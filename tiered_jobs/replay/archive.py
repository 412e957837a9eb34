"""Where ``discard`` keeps the letters it deletes: written, and confirmed durable, before any delete.

An archive takes a list of whole letters (:meth:`Letter.to_record`, one JSON object each) and
returns only once they are stored; any failure raises, and the discard then deletes nothing of
that batch. Two archives exist:

- :class:`JsonLinesArchive`: a local JSON-lines file (the CLI's, ``--archive PATH``). Each batch
  is appended, flushed and ``fsync``-ed (the directory too when the file is new) before the
  discard deletes it. Read it back with :func:`read_archive` or ``jq``.
- :class:`S3Archive`: one JSON-lines object per batch in the stage's bucket (the replay
  function's, when the stack gives it ``TIERED_JOBS_DISCARD_ARCHIVE_BUCKET``). ``PutObject``
  returns only once S3 has stored the object durably.

A letter whose delete fails after it was archived stays in the DLQ: a later discard archives it
again, so an archive may hold a letter twice, never zero times.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from tiered_jobs.contract.names import Env, discard_archive_prefix


class Archive(Protocol):
    """Where discarded letters are stored, durably, before they are deleted."""

    #: Where the letters go, for the response and the operator (a path or an ``s3://`` URL).
    location: str

    def write(self, records: list[dict[str, Any]]) -> None:
        """Store ``records`` durably, or raise."""


def _lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n" for record in records)


class JsonLinesArchive:
    """Append-only JSON-lines file, one letter per line, ``fsync``-ed before :meth:`write` returns."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.location = str(self.path)

    def write(self, records: list[dict[str, Any]]) -> None:
        new = not self.path.exists()
        with open(self.path, "a+b") as file:
            if not new and file.tell() and not _ends_with_newline(file):
                file.write(b"\n")  # an earlier write cut short: never glue a letter onto its remains
            file.write(_lines(records).encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())
        if new:  # make the new file's directory entry durable too
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)


def _ends_with_newline(file: Any) -> bool:
    file.seek(-1, os.SEEK_END)
    last = file.read(1)
    file.seek(0, os.SEEK_END)
    return bool(last == b"\n")


def read_archive(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every letter of a JSON-lines archive, in the order archived (a line cut short by a crash is skipped)."""
    records = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


class S3Archive:
    """One object ``<prefix><UTC time>-<uuid>.jsonl`` per batch, in the stage's archive bucket."""

    def __init__(self, bucket: str, prefix: str, s3: Any, now: Any = None):
        self.bucket = bucket
        self.prefix = prefix
        self.s3 = s3
        self.location = f"s3://{bucket}/{prefix}"
        self._now = now or (lambda: datetime.now(timezone.utc))

    def write(self, records: list[dict[str, Any]]) -> None:
        key = f"{self.prefix}{self._now().strftime('%Y%m%dT%H%M%S.%fZ')}-{uuid.uuid4().hex[:8]}.jsonl"
        self.s3.put_object(
            Bucket=self.bucket, Key=key, Body=_lines(records).encode("utf-8"), ContentType="application/x-ndjson"
        )


def archive_from_env(tier: str, s3: Any, environ: Mapping[str, str] = os.environ) -> S3Archive | None:
    """The replay function's archive for ``tier``, or ``None`` when the stack gave it no bucket."""
    bucket = environ.get(Env.DISCARD_ARCHIVE_BUCKET)
    if not bucket:
        return None
    return S3Archive(bucket, discard_archive_prefix(environ.get(Env.STAGE, "unknown"), tier), s3)
