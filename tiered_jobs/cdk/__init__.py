"""Tiered Jobs as a CDK construct library: ``pip install 'tiered-jobs[cdk]'``.

::

    from tiered_jobs.cdk import JobsCode, TieredJobs, add_nag_checks

    jobs = TieredJobs(stack, "Jobs", jobs=JobsCode("src/jobs"), routes={"invoices.*": "transactional"})
    jobs.grant_publish(my_service_role)

Services that only publish install ``tiered-jobs`` alone and never import this package (it needs
``aws-cdk-lib``). See docs/library.md.
"""

from __future__ import annotations

try:
    import aws_cdk  # noqa: F401
    import constructs  # noqa: F401
except ModuleNotFoundError as missing:  # pragma: no cover - depends on the installation
    raise ModuleNotFoundError(
        f"tiered_jobs.cdk needs the CDK ({missing.name} is not installed): pip install 'tiered-jobs[cdk]'",
        name=missing.name,
    ) from missing

from .construct import JobsCode, TieredJobs
from .nag import add_nag_checks
from .settings import AppSettings, SettingsError, TierSettings, install_excepthook

# A settings mistake nothing catches prints one line at synthesis, not a traceback (settings/report.py).
install_excepthook()

__all__ = ["AppSettings", "JobsCode", "SettingsError", "TierSettings", "TieredJobs", "add_nag_checks"]
