"""The conformance vectors: the publishing contract as JSON cases that a publisher in any language runs.

``python -m conformance write conformance/vectors`` writes them from ``tiered_jobs.contract`` (the rules
are the contract's, computed, never typed by hand); ``tests/contract/test_conformance.py`` fails when
the checked-in files are stale and runs every case against the Python publisher. docs/publishing.md
("Any other language") says how a port reads them.
"""
