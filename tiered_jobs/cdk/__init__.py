"""Tiered Jobs as a CDK construct library: ``pip install 'tiered-jobs[cdk]'``.

::

    from tiered_jobs.cdk import JobsCode, TieredJobs, add_nag_checks

    jobs = TieredJobs(stack, "Jobs", jobs=JobsCode("src/jobs"), routes={"invoices.*": "transactional"})
    jobs.grant_publish(my_service_role)

Services that only publish install ``tiered-jobs`` alone and never import this package (it needs
``aws-cdk-lib``). See docs/library.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .settings import AppSettings, SettingsError, TierSettings, install_excepthook

if TYPE_CHECKING:
    from .construct import JobsCode, TieredJobs
    from .nag import add_nag_checks

# A settings mistake nothing catches prints one line at synthesis, not a traceback (settings/report.py).
install_excepthook()

__all__ = ["AppSettings", "JobsCode", "SettingsError", "TierSettings", "TieredJobs", "add_nag_checks"]

#: The names that need the CDK itself, and their modules. They load on first use (PEP 562), so the
#: parts that do not (the settings, asset staging, the packages layer's installer: all standard
#: library) import in milliseconds -- local mode's processes and the tests use them without
#: starting jsii's Node.js runtime, seconds of CPU each time.
_CDK_NAMES = {"JobsCode": ".construct", "TieredJobs": ".construct", "add_nag_checks": ".nag"}


def __getattr__(name: str) -> Any:
    if name not in _CDK_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import aws_cdk  # noqa: F401
        import constructs  # noqa: F401
    except ModuleNotFoundError as missing:  # pragma: no cover - depends on the installation
        raise ModuleNotFoundError(
            f"tiered_jobs.cdk needs the CDK ({missing.name} is not installed): pip install 'tiered-jobs[cdk]'",
            name=missing.name,
        ) from missing
    from importlib import import_module

    value = getattr(import_module(_CDK_NAMES[name], __name__), name)
    globals()[name] = value
    return value
