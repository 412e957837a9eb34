"""Reaching a stage, for services that publish and operators alike: where its queues, tables and
functions are (``discovery``), its one-time schedules (``scheduling``), and an operator's handle
on it with its AWS clients (``target``). boto3 only: nothing of the CLI, the console or CDK."""
