"""This repository's app: one user of the library like any other team's.

``app.py`` (the CDK entry point, called by the root ``app.py``) reads ``cdk.json`` and builds one
stack per stage (``stack.py``) holding ``TieredJobs`` with the jobs of ``jobs/`` (each with its
payload schema in ``jobs/schemas/``); ``demo/`` is its story on the embedded AWS (``make demo``;
``demo/story.py`` lists its steps); ``example/events/replay/`` holds its tiers' replay events for
the AWS console.
"""
