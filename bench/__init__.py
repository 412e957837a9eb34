"""Benchmarks the project measures itself: ``make bench`` (``python -m bench``).

API calls are counted with botocore's event hooks (deterministic); time is reported as ratios
against a baseline measured in the same run.
"""
