"""The consumer's Lambda asset, zipped as CDK uploads it (Powertools comes from the layer).

The construct stages its code asset with :meth:`JobsSource.stage` (``tiered_jobs/cdk/function.py``),
and ``tests/infra/test_infra_shared.py::test_lambda_asset_ships_the_job_folder_and_the_runtime_parts_only``
holds that the synthesized asset is exactly those files. So the bench stages the example's job folder
the same way instead of synthesizing the whole app: the same bytes, without a synthesis's seconds
of CPU.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path
from typing import Any

#: ``example/app.py``'s ``JOBS`` (read without importing the CDK app: that alone takes seconds).
EXAMPLE_JOBS = Path(__file__).resolve().parent.parent / "example" / "jobs"
EXAMPLE_MODULE = "example.jobs"


def stage(destination: Path) -> Path:
    """The example's function code as the construct stages it (source only, no bytecode) in ``destination``."""
    from tiered_jobs.cdk.packaging import JobsSource

    return JobsSource(EXAMPLE_JOBS, module=EXAMPLE_MODULE).stage(destination)


def measure() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as outdir:
        root = stage(Path(outdir) / "asset")
        buffer = io.BytesIO()
        files = sorted(p for p in root.rglob("*") if p.is_file())
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                archive.write(path, path.relative_to(root).as_posix())
        sizes = {
            "consumer": {
                "files": len(files),
                "zipped_bytes": buffer.tell(),
                "unzipped_bytes": sum(p.stat().st_size for p in files),
            }
        }
    return {"assets": sizes, "max_zipped_bytes": max(s["zipped_bytes"] for s in sizes.values())}
