"""The consumer's Lambda asset, zipped as CDK uploads it (Powertools comes from the layer).

The construct stages its code asset with :meth:`JobsSource.stage` (``tiered_jobs/cdk/function.py``),
and ``tests/cdk/test_infra_shared.py::test_lambda_asset_ships_the_job_folder_and_the_runtime_parts_only``
holds that the synthesized asset is exactly those files. So the bench stages the example's job folder
the same way instead of synthesizing the whole app: the same bytes, without a synthesis's seconds
of CPU.
"""

from __future__ import annotations

import io
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

#: ``infra/app.py``'s ``JOBS`` (read without importing the CDK app: that alone takes seconds).
EXAMPLE_JOBS = Path(__file__).resolve().parent.parent / "functions" / "jobs"
EXAMPLE_MODULE = "functions.jobs"


def stage(destination: Path, bytecode: bool = False) -> Path:
    """The example's function code as the construct stages it in ``destination``: source only, or with
    ``bytecode`` compiled by this interpreter (which plays the runtime's: ``tiered_jobs/cdk/bytecode.py``)."""
    from tiered_jobs.cdk import bytecode as compiler
    from tiered_jobs.cdk.packaging import JobsSource

    staged = JobsSource(EXAMPLE_JOBS, module=EXAMPLE_MODULE).stage(destination)
    if bytecode:
        runtime = f"python{sys.version_info.major}.{sys.version_info.minor}"
        interpreter = compiler.find_interpreter(runtime, {})
        assert interpreter is not None, runtime
        compiled = compiler.compile_tree(staged, interpreter)
        assert not compiled.failures, compiled.failures
    return staged


def measure() -> dict[str, Any]:
    sizes = {}
    for name, bytecode in (("consumer", False), ("consumer_with_bytecode", True)):
        with tempfile.TemporaryDirectory() as outdir:
            root = stage(Path(outdir) / "asset", bytecode=bytecode)
            buffer = io.BytesIO()
            files = sorted(p for p in root.rglob("*") if p.is_file())
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in files:
                    archive.write(path, path.relative_to(root).as_posix())
            sizes[name] = {
                "files": len(files),
                "zipped_bytes": buffer.tell(),
                "unzipped_bytes": sum(p.stat().st_size for p in files),
            }
    return {"assets": sizes}
