"""The Lambda context handlers get, as the emulator's runtime builds it."""

from __future__ import annotations

import time

from emulator.worker import LambdaContext

REGION = "us-east-1"


def lambda_context(remaining_ms: int = 30_000, function_name: str = "tiered-jobs-bench-consumer") -> LambdaContext:
    """The Lambda context the local runtime passes to handlers, ``remaining_ms`` from now."""
    return LambdaContext(
        function_name=function_name,
        memory_mb=256,
        invoked_function_arn=f"arn:aws:lambda:{REGION}:123456789012:function:{function_name}",
        request_id="bench",
        deadline_ms=int(time.time() * 1000) + remaining_ms,
        log_group_name=f"/aws/lambda/{function_name}",
        log_stream_name="bench",
    )
