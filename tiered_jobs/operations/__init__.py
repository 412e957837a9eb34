"""What an operator does to a stage: the domain the ``tiered-jobs`` CLI and the web console are two faces of.

``replays`` drives the replay domain (here or through the deployed function) and reads letters,
``status`` reads every tier's health (one ``TierStatus`` row each, which every face renders and
``display`` formats alike), ``lookup`` finds what happened to one job, ``rates`` reads the rate
limits, ``teardown`` finds and deletes what a destroyed stage left, and ``errors`` turns a failure
into the one line an operator reads. The stage and its clients: ``tiered_jobs.stage``.
"""
