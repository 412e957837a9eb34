"""The contract between the stack, the Lambda runtime and publishers (standard library only)."""

from .envelope import ENVELOPE_VERSION, Envelope, EnvelopeError
from .names import (
    DEFAULT_TIERS,
    Alarms,
    DeadLetter,
    Env,
    Handlers,
    Metrics,
    Outputs,
    Replay,
    Ssm,
    stack_name,
)
from .routing import Routes, UnknownRouteError

__all__ = [
    "Alarms",
    "DEFAULT_TIERS",
    "ENVELOPE_VERSION",
    "DeadLetter",
    "Env",
    "Envelope",
    "EnvelopeError",
    "Handlers",
    "Metrics",
    "Outputs",
    "Replay",
    "Routes",
    "Ssm",
    "UnknownRouteError",
    "stack_name",
]
