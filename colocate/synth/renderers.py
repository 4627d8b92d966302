"""Builds Helm and kustomize into bin/, from the Go module proxy, at the versions Argo CD v2.10.15's
repo server bundles, so vendored charts and overlays can be rendered offline with the renderers
Argo CD itself would run: ``python -m colocate.synth.renderers`` (or ``make render-tools``);
``make test`` runs it first, ``make synth`` does not.

The versions are argo-cd's ``hack/tool-versions.sh`` at tag v2.10.15 (commit
14963d7facc63320d16ba2440f8deb476c0d1cf0): ``helm3_version=3.14.4`` and ``kustomize5_version=5.2.1``;
its Dockerfile installs exactly those (``hack/install.sh helm-linux`` and ``kustomize``) into the
image the repo server runs from. A stamp per build (version, module, ldflags) makes a second run a
no-op, as for the simulation's components (colocate/base/go_builds.py does both)."""
from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

from colocate.base import go_builds
from colocate.base.go_builds import BIN, Build, go_install, run_main, up_to_date

#: The Argo CD release whose bundled renderers these are (colocate.yaml simulation.argocd).
ARGOCD_VERSION = "v2.10.15"
HELM_VERSION = "v3.14.4"
KUSTOMIZE_VERSION = "v5.2.1"

BUILDS = (
    # The -X flags of helm's own Makefile at v3.14.4: `helm version` and .Capabilities.HelmVersion
    # read internal/version (a plain `go install` says "v3.14"), and the default Kubernetes version
    # (.Capabilities.KubeVersion without --kube-version) is its client-go's, v0.29.0 -> 1.29 (the
    # Makefile's K8S_MODULES_*; a plain build says 1.20).
    Build("helm", ("helm",), "helm.sh/helm/v3", HELM_VERSION, None, ("helm.sh/helm/v3/cmd/helm",),
          " ".join(["-s -w", f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",
                    *(f"-X helm.sh/helm/v3/pkg/{pkg}.k8sVersion{part}={value}"
                      for pkg in ("lint/rules", "chartutil") for part, value in (("Major", 1), ("Minor", 29)))]),
          cold="about 4.5 min", go="1.21", release="https://github.com/helm/helm/releases/tag/v3.14.4"),
    Build("kustomize", ("kustomize",), "sigs.k8s.io/kustomize/kustomize/v5", KUSTOMIZE_VERSION, None,
          # Its release build's -X (`kustomize version` says "(devel)" without it; Argo CD's repo
          # server reads that version to choose build flags).
          ("sigs.k8s.io/kustomize/kustomize/v5",),
          f"-s -w -X sigs.k8s.io/kustomize/api/provenance.version={KUSTOMIZE_VERSION}", cold="about 30 s",
          go="1.20", release="https://github.com/kubernetes-sigs/kustomize/releases/tag/kustomize%2Fv5.2.1"),
)
#: The variable that names each renderer's binary, as $KUBECONFORM names kubeconform's.
ENV = {"helm": "HELM", "kustomize": "KUSTOMIZE"}
#: The command that prints each renderer's version, and what it prints at the pinned one.
_VERSION_ARGV = {"helm": ("version", "--template", "{{.Version}}"), "kustomize": ("version",)}

#: What a caller tells the user when a renderer is missing.
HOW_TO_BUILD = ("build them with `.venv/bin/python -m colocate.synth.renderers` (or `make render-tools`): "
                f"helm {HELM_VERSION} and kustomize {KUSTOMIZE_VERSION} from the Go module proxy into bin/, "
                "needs Go >= 1.21")


@functools.cache
def _not_pinned(name: str, path: str) -> str | None:
    """Why the binary at ``path`` is not the pinned renderer (its version decides dist/'s bytes), or None."""
    build = next(b for b in BUILDS if b.name == name)
    try:
        said = subprocess.run([path, *_VERSION_ARGV[name]], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`{name} version` did not run ({exc})"
    return None if said == build.version else f"it says version {said or 'nothing'}, not {build.version}"


def binary(name: str) -> Path:
    """helm or kustomize at the pinned version: ${ENV}, then PATH (either only when it says the
    pinned version), then the tool folder (with its stamp), else built there with Go."""
    build = next(b for b in BUILDS if b.name == name)
    return go_builds.resolve(build, ENV[name], pinned=lambda path: _not_pinned(name, path))


def ensure(log=print) -> dict[str, object]:
    """Build what is missing or stale; return each binary's path by name."""
    out = {}
    for build in BUILDS:
        if up_to_date(build):
            log(f"render tools: {build.name} {build.version} up to date")
        else:
            go_install(build, log, label="render tools")
        out.update({b: BIN / b for b in build.binaries})
    return out


def main() -> int:
    return run_main(ensure, "render tools")


if __name__ == "__main__":
    sys.exit(main())
