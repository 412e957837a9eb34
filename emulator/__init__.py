"""The emulator: this repository's real stack deployed into moto's server on 127.0.0.1, with the
event source mappings, alarms, schedules and Lambda runtime run in-process.

A development tool of this repository (it synthesizes ``infra/`` and runs ``functions/``), not part
of the installed package: ``python -m emulator up`` / ``make up``, ``python -m emulator demo`` / ``make demo``.
"""
