"""Consumer cold start vs the bare Powertools recipe, each in fresh interpreters (alternating runs);
and with a job folder that brings a typical set of packages (``requirements.txt``) against the same recipe."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.tier import create_tier, env_for

ROOT = Path(__file__).resolve().parent.parent
#: A typical team's job folder: an HTTP client and a payment API (the imports of TYPICAL_IMPORTS). Its models'
#: pydantic is not listed: the Powertools layer ships it, and a job folder may not bring its own copy
#: (tiered_jobs/cdk/dependencies.py refuses the line).
TYPICAL_REQUIREMENTS = "httpx==0.28.1\nstripe==12.4.0\n"


def measure(
    runs: int = 15, variants: tuple[str, str] = ("ours", "bare"), layer: str = "", bytecode: bool = True
) -> dict[str, Any]:
    """``runs`` pairs of fresh interpreters, alternating which side goes first, after one pair
    that only warms the OS file cache. The ratio is the median of the per-pair ratios (with their
    min and max): a pair runs back to back, so the machine's drift cancels out.

    ``bytecode``: the asset as the construct stages it when the runtime's interpreter is at hand at
    synthesis (``tiered_jobs/cdk/bytecode.py``), compiled by the interpreter the children run, which
    plays the runtime here; without it, source only, as when synthesis has no such interpreter."""
    import tempfile

    from bench.asset import stage
    from emulator.server import EmbeddedAws, client_environment

    with tempfile.TemporaryDirectory() as outdir, EmbeddedAws() as endpoint, client_environment(endpoint):
        # Our code as Lambda gets it: the staged asset, never this checkout's folders (whose bytecode is
        # fresh or stale depending on what ran last); Lambda's code directory is read-only, so nothing
        # compiled at a cold start is kept (PYTHONDONTWRITEBYTECODE below).
        code = stage(Path(outdir) / "asset", bytecode=bytecode)
        tier = create_tier("coldstart", endpoint_url=endpoint.url)
        env = {
            **os.environ,
            **endpoint.client_env(),
            **env_for(tier),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join([str(code), str(ROOT)]),  # the asset first, then bench's own modules
        }
        env.pop("AWS_SESSION_TOKEN", None)
        samples: dict[str, list[dict]] = {variant: [] for variant in variants}
        for variant in variants:
            _child(variant, "warm-up", env, layer, code)
        for run in range(runs):
            for variant in variants[::-1] if run % 2 else variants:
                samples[variant].append(_child(variant, f"{run}", env, layer, code))
    summary: dict[str, Any] = {
        v: {k: statistics.median(s[k] for s in runs_) for k in runs_[0]} for v, runs_ in samples.items()
    }
    ours, bare = variants
    ratios = [o["total_ms"] / b["total_ms"] for o, b in zip(samples[ours], samples[bare], strict=True)]
    summary["ratio_total"] = statistics.median(ratios)
    # The spread of the pairs' ratios: on a loaded machine one pair can read far off the median.
    summary["ratio_min"], summary["ratio_max"] = min(ratios), max(ratios)
    # The same on each process's own CPU time, which the machine's other work does not inflate.
    cpu = [o["cpu_ms"] / b["cpu_ms"] for o, b in zip(samples[ours], samples[bare], strict=True)]
    summary["ratio_cpu"] = statistics.median(cpu)
    summary["ratio_cpu_min"], summary["ratio_cpu_max"] = min(cpu), max(cpu)
    summary["extra_modules"] = summary[ours]["modules"] - summary[bare]["modules"]
    summary["runs"] = runs
    summary["bytecode"] = bytecode
    return summary


def measure_with_packages(runs: int = 15) -> dict[str, Any]:
    """The consumer whose job folder imports ``TYPICAL_REQUIREMENTS`` (installed for this interpreter, as
    local mode does, from the same cache) against the bare recipe; with the layer's size for Lambda."""
    import tempfile

    from tiered_jobs.cdk import dependencies

    with tempfile.TemporaryDirectory() as folder:
        requirements = Path(folder) / dependencies.REQUIREMENTS_FILE
        requirements.write_text(TYPICAL_REQUIREMENTS)
        host = dependencies.install(requirements, dependencies.Target.host())
        lambda_layer = dependencies.install(requirements, dependencies.Target.lambda_runtime("python3.13", "arm64"))
    summary = measure(runs, ("packages", "bare"), str(host.python_dir))
    summary["requirements"] = TYPICAL_REQUIREMENTS.split()
    summary["layer_unzipped_mb_arm64"] = round(lambda_layer.size / 1024 / 1024, 1)
    return summary


def _child(variant: str, run_id: str, env: dict[str, str], layer: str, code: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "bench.coldstart_child", variant, run_id, *([layer] if variant == "packages" else [])],
        cwd=code,  # as Lambda's /var/task: the function's code is found first
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"cold start child {variant} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stderr.strip().splitlines()[-1])
