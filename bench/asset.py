"""The consumer's Lambda asset, zipped as CDK uploads it (Powertools comes from the layer)."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any


def measure() -> dict[str, Any]:
    from example.app import build_app, load_cdk_context

    with tempfile.TemporaryDirectory() as outdir:
        assembly = build_app(load_cdk_context(), outdir=outdir).synth()
        (stack,) = assembly.stacks
        template = json.loads(Path(stack.template_full_path).read_text())
        # The asset's S3 key is its hash; the staged directory is ``asset.<hash>``.
        paths = {
            "asset." + res["Properties"]["Code"]["S3Key"].removesuffix(".zip")
            for res in template["Resources"].values()
            if res["Type"] == "AWS::Lambda::Function"
        }
        sizes = {}
        for rel in sorted(paths):
            root = Path(outdir) / rel
            buffer = io.BytesIO()
            files = sorted(p for p in root.rglob("*") if p.is_file())
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in files:
                    archive.write(path, path.relative_to(root).as_posix())
            sizes[rel] = {
                "files": len(files),
                "zipped_bytes": buffer.tell(),
                "unzipped_bytes": sum(p.stat().st_size for p in files),
            }
    return {"assets": sizes, "max_zipped_bytes": max(s["zipped_bytes"] for s in sizes.values())}
