"""This repository's app's Lambda code: the job package ``jobs/`` (with its payload schemas in
``jobs/schemas/``), which ``infra/app.py`` hands to ``TieredJobs``, and ``events/replay/``, the events
its tiers' replay function is invoked with from the AWS console or the AWS CLI.

Only ``jobs/`` ships (the construct's asset is the job folder plus the runtime parts); this file
ships empty in its place, as the parent package of ``functions.jobs``.
"""
