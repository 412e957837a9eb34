"""Any CDK app, synthesized as the CDK CLI synthesizes it, and the stacks of its cloud assembly.

:class:`CdkApp` is an app's folder and the command that runs it (``--app``, else ``cdk.json``'s
``"app"``). :meth:`CdkApp.synth` does what ``cdk synth`` does before it reads the assembly (the
pinned CLI's ``toolkit-lib``: ``prepare-source.ts``, ``exec.ts``): the command runs through the shell
with the app's folder as working directory and the caller's environment, plus

- ``CDK_OUTDIR``: where the app writes its cloud assembly;
- ``CDK_CONTEXT_JSON``: the context, merged as the CLI merges it (``~/.cdk.json``'s ``context`` <
  ``cdk.context.json`` < ``cdk.json``'s ``context`` -- the feature flags -- < what the caller adds,
  like ``-c``);
- ``CDK_DEFAULT_ACCOUNT`` / ``CDK_DEFAULT_REGION``: the account and region of the credentials the
  CLI would use (here: the embedded AWS's).

The app runs in its own process with its own interpreter, so jsii's Node.js runtime never lives in
the caller's process. Like the CLI, a failed command, an error annotation (``aws:cdk:error``) or a
context lookup the app could not do fails the synthesis with the app's own message.

:func:`stacks` lists the CloudFormation stacks of an assembly from its ``manifest.json`` (nested
assemblies of CDK stages included), with their template and file assets.

Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The app's own settings file: its command (``"app"``) and its context (feature flags, settings).
CDK_JSON = "cdk.json"
#: Context the CLI caches from lookups, beside ``cdk.json``.
CDK_CONTEXT_JSON = "cdk.context.json"
#: The user's defaults; their ``context`` is the CLI's lowest-priority context.
USER_DEFAULTS = "~/.cdk.json"

#: What the CLI tells the app (``@aws-cdk/cx-api``'s names).
OUTDIR_ENV = "CDK_OUTDIR"
CONTEXT_ENV = "CDK_CONTEXT_JSON"
DEFAULT_ACCOUNT_ENV = "CDK_DEFAULT_ACCOUNT"
DEFAULT_REGION_ENV = "CDK_DEFAULT_REGION"
#: jsii's banners about the Node.js version; the pinned CLI runs on Node 20 (as ``app.py`` says too).
QUIET_JSII = {
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
    "JSII_DEPRECATED": "quiet",
}

STACK_ARTIFACT = "aws:cloudformation:stack"
NESTED_ASSEMBLY_ARTIFACT = "cdk:cloud-assembly"
ASSET_MANIFEST_ARTIFACT = "cdk:asset-manifest"
ERROR_METADATA = "aws:cdk:error"

#: How much of the app's output a failure shows (its end: a validation report, then the traceback).
SHOWN_OUTPUT_CHARS = 10_000


class CdkAppError(RuntimeError):
    """The app cannot be run or synthesized; the message says why and what to do."""


@dataclass(frozen=True)
class CdkApp:
    """A CDK app: the folder it runs in (``cdk.json``'s, the working directory of ``cdk synth``)
    and its command line (``--app``)."""

    directory: Path
    command: str

    @classmethod
    def load(cls, directory: Path | str, command: str | None = None) -> CdkApp:
        """The app in ``directory``; without ``command``, the one its ``cdk.json`` names (``"app"``)."""
        folder = Path(directory).expanduser().resolve()
        if not folder.is_dir():
            raise CdkAppError(f"app folder {str(folder)!r} does not exist")
        if command is None:
            command = _read_json(folder / CDK_JSON).get("app")
            if not command:
                raise CdkAppError(
                    f'no app command: {folder / CDK_JSON} has no "app"; run from your CDK app\'s '
                    f'folder or pass --app "python app.py" (as for `cdk synth --app`)'
                )
        return cls(folder, str(command))

    def context(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The context ``cdk synth`` would pass: ``~/.cdk.json`` < ``cdk.context.json`` < ``cdk.json`` <
        ``extra`` (one key overrides another whole; nothing is merged deeper, as in the CLI)."""
        merged: dict[str, Any] = {}
        for layer in (
            _read_json(Path(USER_DEFAULTS).expanduser()).get("context", {}),
            _read_json(self.directory / CDK_CONTEXT_JSON),
            _read_json(self.directory / CDK_JSON).get("context", {}),
            extra or {},
        ):
            merged.update(layer)
        return merged

    def synth(
        self,
        outdir: Path,
        *,
        context: Mapping[str, Any] | None = None,
        account: str | None = None,
        region: str | None = None,
        environ: Mapping[str, str] | None = None,
        timeout_seconds: float = 600,
    ) -> Path:
        """Run the app into ``outdir`` (``context`` on top of its own) in ``environ`` (default: this
        process's environment); the assembly's directory."""
        outdir = Path(outdir).resolve()
        outdir.mkdir(parents=True, exist_ok=True)
        env = {
            **QUIET_JSII,
            **(os.environ if environ is None else environ),
            OUTDIR_ENV: str(outdir),
            CONTEXT_ENV: json.dumps(self.context(context)),
            "PYTHONIOENCODING": "utf-8",
        }
        env.update(
            {name: value for name, value in ((DEFAULT_ACCOUNT_ENV, account), (DEFAULT_REGION_ENV, region)) if value}
        )
        try:
            result = subprocess.run(
                self.command,
                shell=True,
                cwd=self.directory,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CdkAppError(
                f"`{self.command}` (in {self.directory}) did not finish within {timeout_seconds:.0f} s"
            ) from None
        if result.returncode != 0:
            output = (result.stderr.strip() or result.stdout.strip())[-SHOWN_OUTPUT_CHARS:]
            raise CdkAppError(f"`{self.command}` (in {self.directory}) exited with {result.returncode}:\n{output}")
        manifest = outdir / "manifest.json"
        if not manifest.is_file():
            raise CdkAppError(
                f"`{self.command}` (in {self.directory}) wrote no cloud assembly to {OUTDIR_ENV}: "
                "does it call app.synth() on a cdk App created without an outdir?"
            )
        _check_assembly(outdir)
        return outdir


@dataclass(frozen=True)
class StackArtifact:
    """One CloudFormation stack of an assembly: its names, template and file assets."""

    #: The CloudFormation stack name (``Stack(..., stack_name=...)``, else derived by CDK).
    stack_name: str
    #: How ``cdk`` shows it (``Stage/Stack`` inside a stage).
    display_name: str
    #: The folder of its manifest: template and asset paths are relative to it.
    directory: Path
    template: dict[str, Any]
    #: Its ``*.assets.json`` (``{"files": {...}, "dockerImages": {...}}``); empty without one.
    assets: dict[str, Any]
    #: ``aws://account/region`` (``unknown-account`` / ``unknown-region`` when environment-agnostic).
    environment: str

    @property
    def names(self) -> set[str]:
        """What ``--stack`` may call it."""
        return {self.stack_name, self.display_name}


def stacks(directory: Path) -> list[StackArtifact]:
    """The stacks of the assembly in ``directory``, in manifest order (nested assemblies included)."""
    manifest = _read_json(directory / "manifest.json")
    artifacts: Mapping[str, Any] = manifest.get("artifacts", {})
    found: list[StackArtifact] = []
    for artifact_id, artifact in artifacts.items():
        properties = artifact.get("properties", {})
        if artifact.get("type") == NESTED_ASSEMBLY_ARTIFACT:
            found += stacks(directory / properties["directoryName"])
        elif artifact.get("type") == STACK_ARTIFACT:
            asset_files = [
                artifacts[d]["properties"]["file"]
                for d in artifact.get("dependencies", [])
                if artifacts.get(d, {}).get("type") == ASSET_MANIFEST_ARTIFACT
            ]
            found.append(
                StackArtifact(
                    stack_name=properties.get("stackName", artifact_id),
                    display_name=artifact.get("displayName", artifact_id),
                    directory=directory,
                    template=_read_json(directory / properties["templateFile"]),
                    assets=_read_json(directory / asset_files[0]) if asset_files else {},
                    environment=artifact.get("environment", "aws://unknown-account/unknown-region"),
                )
            )
    return found


def _check_assembly(directory: Path) -> None:
    """Fail as ``cdk synth`` fails: on error annotations, and on context lookups left to the CLI."""
    manifest = _read_json(directory / "manifest.json")
    missing = sorted(entry["key"] for entry in manifest.get("missing", []))
    if missing:
        raise CdkAppError(
            f"the app needs context lookups only the CDK CLI does with AWS credentials "
            f"({', '.join(missing)}): run `cdk synth` once against your account so "
            f"{CDK_CONTEXT_JSON} holds them, then start local mode again"
        )
    errors: list[str] = []
    for artifact in manifest.get("artifacts", {}).values():
        entries = dict(artifact.get("metadata", {}))
        if "additionalMetadataFile" in artifact:
            entries.update(_read_json(directory / artifact["additionalMetadataFile"]))
        errors += [
            f"{path}: {entry.get('data')}"
            for path, listed in entries.items()
            for entry in listed
            if entry.get("type") == ERROR_METADATA
        ]
        if artifact.get("type") == NESTED_ASSEMBLY_ARTIFACT:
            _check_assembly(directory / artifact["properties"]["directoryName"])
    if errors:
        raise CdkAppError("the app's synthesis reported errors:\n" + "\n".join(errors))


def _read_json(path: Path) -> dict[str, Any]:
    """``path``'s JSON object; ``{}`` when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise CdkAppError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise CdkAppError(f"{path} holds no JSON object")
    return value
