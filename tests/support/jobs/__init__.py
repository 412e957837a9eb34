"""The library's own test jobs: a job package as an app would write one, against ``tiered_jobs.runtime``
only, with its payload schemas in ``schemas/``. The suite registers it as the consumer does
(``load_job_modules(["tests.support.jobs"])`` in ``tests/conftest.py``), beside the example app's jobs,
so the library's tests do not depend on the example app.

- ``testjobs.ok`` records its payload (:data:`ok.RECORDED`) and succeeds;
- ``testjobs.transient`` raises a transient error on its first ``fail_times`` attempts, then succeeds;
- ``testjobs.permanent`` raises a :class:`PermanentError`, every time;
- ``testjobs.slow`` works ``steps`` steps of ``step_ms``, calling ``ctx.check_time()`` before each;
- ``testjobs.effect`` adds ``amount`` to a counter in a DynamoDB table, exactly once per key (the effect
  idempotency and crash tests count).
"""

from tests.support.jobs import effect, failing, ok, slow  # noqa: F401
