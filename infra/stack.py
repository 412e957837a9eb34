"""This repository's stack: ``TieredJobs`` with the example jobs of ``functions/jobs``, one stack per stage."""

from __future__ import annotations

from aws_cdk import Environment, Stack
from constructs import Construct

from tiered_jobs.cdk import JobsCode, TieredJobs
from tiered_jobs.cdk.settings import AppSettings
from tiered_jobs.contract.names import stack_name

#: The construct's id. ``Default`` is left out of logical ids, so every resource keeps the id it had
#: when the stack built the parts itself (a deployed stage updates in place, nothing is replaced).
CONSTRUCT_ID = "Default"


class TieredJobsStack(Stack):
    def __init__(
        self, scope: Construct, *, settings: AppSettings, jobs: JobsCode, env: Environment | None = None
    ) -> None:
        stage = settings.stage
        super().__init__(
            scope,
            stack_name(stage),
            env=env,
            stack_name=stack_name(stage),
            description=f"Tiered Jobs ({stage}): reliable background jobs on SQS and Lambda, one tier per priority",
        )
        self.jobs = TieredJobs(self, CONSTRUCT_ID, jobs=jobs, settings=settings)
