"""The emulator: a CDK app's stack that uses TieredJobs -- this repository's by default, or any other
(``up --app``) -- deployed into moto's server on 127.0.0.1, with the event source mappings, alarms,
schedules and Lambda runtime run in-process.

A development tool of this repository, not part of the installed package: ``python -m emulator up`` /
``make up``; ``python <clone>/emulator up`` from another app's folder. This repository's own story
(``make demo``) is its app's, ``demo/``, which runs on it; the emulator never imports an app.
"""
