"""One cold start in a fresh interpreter: import a handler, process one batch, report figures.

Run by ``bench.coldstart`` as ``python -m bench.coldstart_child ours|bare|packages <run id> [<layer>]``
with the function's environment and ``AWS_ENDPOINT_URL`` pointing at a moto server. ``packages`` is
ours with a job folder that imports a typical set of its own packages (``TYPICAL_IMPORTS``) from
``<layer>``, the folder a job folder's ``requirements.txt`` was installed into. The event is built
with the standard library only, before the clock starts, so neither side pays for the other.
"""

import json
import sys
import time
import uuid

BATCH = 10
#: What a job module of a typical team imports (bench.coldstart.TYPICAL_REQUIREMENTS installs them).
TYPICAL_IMPORTS = ("httpx", "stripe")


def main() -> None:
    variant, run_id = sys.argv[1], sys.argv[2]
    queue_arn = "arn:aws:sqs:us-east-1:123456789012:bench"
    records = [
        {
            "messageId": str(uuid.uuid4()),
            "receiptHandle": "rh",
            "md5OfBody": "",
            "eventSource": "aws:sqs",
            "eventSourceARN": queue_arn,
            "awsRegion": "us-east-1",
            "messageAttributes": {},
            "attributes": {
                "ApproximateReceiveCount": "1",
                "SentTimestamp": "0",
                "ApproximateFirstReceiveTimestamp": "0",
            },
            "body": json.dumps(
                {
                    "type": "analytics.record_event",
                    "idempotency_key": f"{variant}-{run_id}-{i}",
                    "payload": {"event": "page_view"},
                    "version": 1,
                }
            ),
        }
        for i in range(BATCH)
    ]

    class Context:
        function_name = "bench"
        function_version = "$LATEST"
        memory_limit_in_mb = 256
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
        aws_request_id = "cold"

        @staticmethod
        def get_remaining_time_in_millis() -> int:
            return 30_000

    before = set(sys.modules)
    started, cpu_started = time.perf_counter(), time.process_time()
    if variant == "packages":
        import importlib

        sys.path[1:1] = [sys.argv[3]]  # after the code, as Lambda puts /opt/python
        for name in TYPICAL_IMPORTS:  # what the job folder's modules import at the top
            importlib.import_module(name)
        from tiered_jobs.handlers.consumer import handler
    elif variant == "ours":
        from tiered_jobs.handlers.consumer import handler
    else:
        from bench.bare_recipe import handler
    imported, cpu_imported = time.perf_counter(), time.process_time()
    response = handler({"Records": records}, Context())
    done, cpu_done = time.perf_counter(), time.process_time()
    assert response == {"batchItemFailures": []}, response
    print(
        json.dumps(
            {
                "modules": len(set(sys.modules) - before),
                "import_ms": (imported - started) * 1000,
                "first_batch_ms": (done - imported) * 1000,
                "total_ms": (done - started) * 1000,
                # This process's own CPU: what a loaded machine's other work and moto's replies do not add to.
                "cpu_ms": (cpu_done - cpu_started) * 1000,
                "import_cpu_ms": (cpu_imported - cpu_started) * 1000,
            }
        ),
        file=sys.__stderr__,
    )


if __name__ == "__main__":
    main()
