"""Consumer cold start vs the bare Powertools recipe, each in fresh interpreters (alternating runs)."""

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


def measure(runs: int = 15) -> dict[str, Any]:
    """``runs`` pairs of fresh interpreters, alternating which side goes first, after one pair
    that only warms the OS file cache. The ratio is the median of the per-pair ratios: a pair
    runs back to back, so the machine's drift cancels out."""
    from emulator.server import EmbeddedAws, client_environment

    with EmbeddedAws() as endpoint, client_environment(endpoint):
        tier = create_tier("coldstart", endpoint_url=endpoint.url)
        env = {**os.environ, **endpoint.client_env(), **env_for(tier), "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("AWS_SESSION_TOKEN", None)
        samples: dict[str, list[dict]] = {"ours": [], "bare": []}
        for variant in ("ours", "bare"):
            _child(variant, "warm-up", env)
        for run in range(runs):
            for variant in ("bare", "ours") if run % 2 else ("ours", "bare"):
                samples[variant].append(_child(variant, f"{run}", env))
    summary = {v: {k: statistics.median(s[k] for s in runs_) for k in runs_[0]} for v, runs_ in samples.items()}
    summary["ratio_total"] = statistics.median(
        o["total_ms"] / b["total_ms"] for o, b in zip(samples["ours"], samples["bare"], strict=True)
    )
    summary["extra_modules"] = summary["ours"]["modules"] - summary["bare"]["modules"]
    summary["runs"] = runs
    return summary


def _child(variant: str, run_id: str, env: dict[str, str]) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "bench.coldstart_child", variant, run_id],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"cold start child {variant} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stderr.strip().splitlines()[-1])
