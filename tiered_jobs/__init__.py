"""Tiered Jobs: reliable background jobs on SQS and Lambda.

This package holds what other services import (the publisher), the operator CLI, the local
mode, and :mod:`tiered_jobs.contract` -- the small, dependency-free module shared with the
Lambda runtime in ``functions/``. It is shipped inside the Lambda asset too, so importing this
package must stay free of side effects and heavy imports.
"""

__version__ = "0.1.0"
