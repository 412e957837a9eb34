"""This repository's app's infrastructure: one user of the library like any other team's.

``app.py`` (the CDK app, called by the root ``app.py`` that ``cdk.json`` runs) reads ``cdk.json`` and
builds one stack per stage (``stack.py``) holding ``TieredJobs`` with the app's job code, the
``functions/jobs`` package (each job with its payload schema in ``functions/jobs/schemas/``).
"""
