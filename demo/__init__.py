"""This repository's app's story on the embedded AWS (``make demo``, ``python -m demo``): the app of
``infra/`` with the jobs of ``functions/jobs``, told step by step (``story.py`` lists the steps)."""
