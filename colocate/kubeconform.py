"""Run the real kubeconform on manifests, offline, with strict schemas and nothing skipped.

Schemas come from two places:
- Kubernetes' own kinds from the PyPI package kubernetes-validate, through a local copy that
  kubeconform can load offline (crdschema.prepare_core_schemas says why).
- Every other kind we emit from ``policies/schemas/<group>/<kind>_<version>.json``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from colocate import ROOT
from colocate.errors import ColocateError
from colocate.schemagen import crd as crdschema
from colocate.resources import cache_dir, data_path

CACHE = cache_dir() / "kubeconform"
INSTALL_HINT = "run `make bootstrap` (builds the pinned kubeconform into bin/ with go install; scripts/bootstrap names the version)"


class ToolMissing(ColocateError):
    """A required external tool is not installed, or does not run (exit 2)."""


@dataclass
class Result:
    """kubeconform's summary and every resource it did not find valid."""

    valid: int
    invalid: int
    errors: int
    skipped: int
    resources: list[dict] = field(default_factory=list)


def binary() -> str:
    """kubeconform: $KUBECONFORM, the project's bin/, then PATH."""
    candidates = [os.environ.get("KUBECONFORM"), str(ROOT / "bin" / "kubeconform"), shutil.which("kubeconform")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ToolMissing(f"kubeconform not found: {INSTALL_HINT}")


def schema_locations(kubernetes_version: str) -> list[str]:
    """Our schemas first, then a kubeconform-ready copy of kubernetes-validate's (cached)."""
    try:
        core = crdschema.prepare_core_schemas(CACHE / "kubernetes-validate", kubernetes_version)
    except FileNotFoundError as exc:
        raise ToolMissing(str(exc)) from None
    ours = data_path("colocate.policies", "schemas") / crdschema.CRD_SCHEMA_LOCATION.removeprefix("policies/schemas/")
    return [str(ours), crdschema.CORE_SCHEMA_LOCATION.format(root=core)]


def start(paths: list[Path], kubernetes_version: str) -> subprocess.Popen:
    """Start validating files and folders; the caller parses YAML and runs rules meanwhile and
    collects the verdict with :func:`wait`."""
    command = [binary(), "-strict", "-summary", "-output", "json", "-kubernetes-version", kubernetes_version]
    for location in schema_locations(kubernetes_version):
        command += ["-schema-location", location]
    # "--" ends the options: a file named "-skip=Deployment,x.yaml" is a file, not an option
    # (kubeconform parses its flags with Go's flag package, which stops at "--").
    command += ["--", *(str(p) for p in paths)]
    try:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        raise ToolMissing(f"{command[0]}: kubeconform did not start: {exc.strerror}; {INSTALL_HINT}") from None


def wait(proc: subprocess.Popen) -> Result:
    """kubeconform's verdict; every schema miss counts as an error, never a skip."""
    stdout, stderr = proc.communicate()
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        said = " ".join((stderr.strip() or stdout.strip()).splitlines()[:3]) or "no output"
        raise ToolMissing(f"{proc.args[0]}: kubeconform failed (exit {proc.returncode}): {said}; {INSTALL_HINT}") from None
    summary = report.get("summary") if isinstance(report, dict) else None
    if not isinstance(summary, dict):
        raise ToolMissing(f"{proc.args[0]}: kubeconform printed no summary; {INSTALL_HINT}")
    return Result(summary["valid"], summary["invalid"], summary["errors"], summary["skipped"],
                  report.get("resources") or [])


def unjudged(result: Result, expected: int) -> None:
    """Refuse a verdict that does not cover every object: kubeconform must have judged each one
    (valid, invalid or error) and skipped none. ``expected`` counts the objects as kubeconform
    splits them (:func:`colocate.manifests.kubeconform_resources`)."""
    judged = result.valid + result.invalid + result.errors
    if result.skipped or judged != expected:
        raise ColocateError(f"kubeconform judged {judged} of the {expected} objects ({result.skipped} skipped): "
                            "nothing may go unvalidated, so the check stops; a file name or an option that "
                            "kubeconform read as one of its own can cause this")


def run(paths: list[Path], kubernetes_version: str) -> Result:
    """Validate files and folders and wait for the verdict."""
    return wait(start(paths, kubernetes_version))
