"""What a publish raises: a job refused before sending, or jobs SQS did not accept."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiered_jobs.contract.errors import USAGE, TieredJobsError

if TYPE_CHECKING:
    from .models import PublishResult


class InvalidJobError(TieredJobsError, ValueError):
    """One or more jobs refused before anything was sent: fix the call, retrying won't help.

    ``problems`` holds one readable sentence per problem, each naming its job.
    """

    code = USAGE

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("nothing was published: " + "; ".join(self.problems))


class PublishError(TieredJobsError):
    """Some jobs were not accepted by SQS. ``results`` has every job's outcome, in input order.

    The others *were* published; publishing the failed ones again (same keys) is safe.
    """

    explained_by_cause = True  # the client error behind a failed publish says more

    def __init__(self, results: list[PublishResult]):
        self.results = list(results)
        failed = self.failed
        super().__init__(
            f"{len(failed)} of {len(self.results)} job(s) not published: "
            + "; ".join(result.describe() for result in failed)
        )

    @property
    def failed(self) -> list[PublishResult]:
        return [result for result in self.results if not result.ok]
