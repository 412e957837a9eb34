"""The job handlers: one module per domain, each registering its job types.

To add a job: write a module here with ``@job("domain.action")`` handlers, import it below,
and add a route for its type in ``cdk.json`` (``routes``) if no existing pattern covers it.
"""

from example.jobs import analytics, demo, notifications, payments  # noqa: F401
