"""The job handlers: one module per job-type prefix, each registering its job types.

Job type ``payments.update_balance`` lives in ``payments.py``: a tier's consumer imports a module on
the first record of its prefix, so a module that fails to import stops its own jobs and no other
tier's (docs/consumer.md, "One module per prefix"). Nothing is imported here on purpose.

To add a job: write a module named after its prefix with ``@job("domain.action")`` handlers, and
add a route for its type in ``cdk.json`` (``routes``) if no existing pattern covers it.
"""
