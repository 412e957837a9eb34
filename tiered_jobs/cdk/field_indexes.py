"""The field indexes of the functions' log groups: the run line's fields ``tiered-jobs search`` filters
on with ``=`` / ``in`` (docs/consumer.md, "Logs"; docs/cli.md, ``search``).

A CloudWatch Logs field index lets a Logs Insights query that filters an indexed field with ``=`` or
``IN`` skip the log events known not to match, so it scans (and bills) less. A policy holds at most
20 fields (``PutIndexPolicy``), only on a Standard-class log group (every group of the stack is).
Tags are ``tags.<name>`` fields, one per name a publisher chose: no fixed policy can name them all,
so a tag filter alone is not served by an index (an exact type, tenant or outcome beside it is).
Indexes only make a query scan less; matches of names are case-sensitive, as the fields are logged.
"""

from __future__ import annotations

#: The indexed fields of a run line: a job's type, key and tenant, its outcome, its trace and its batch.
RUN_LINE_FIELDS = ("job_type", "idempotency_key", "tenant", "outcome", "trace_id", "batch_id")
#: ``PutIndexPolicy``'s limit.
MAX_FIELDS = 20
