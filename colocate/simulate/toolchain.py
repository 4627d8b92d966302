"""Builds the real components ``colocate simulate`` runs into bin/, from the Go module proxy at the
versions colocate.yaml pins. Cold it takes minutes (a progress line per build); a stamp per build
holds the version and a hash of its Go module, so a second run does nothing.

``python -m colocate.simulate.toolchain`` is what ``make test`` runs before the tests."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from colocate import config
from colocate.base import vendored
from colocate.errors import InputError
# Build, go_install and the stamps are shared with the renderers (colocate/synth/renderers.py).
from colocate.base.go_builds import BIN, TOOLS, Build, go_install, run_main, up_to_date  # noqa: F401 (re-exported)


def builds(cfg: config.Config) -> list[Build]:
    sim = cfg.simulation
    if sim is None:
        raise InputError(cfg.file, "$.simulation", "missing: `colocate simulate` needs the versions of the "
                         "components it builds (kubernetes, etcd, kwok, argocd); see docs/simulate.md")
    k8s_version = sim.kubernetes.removeprefix("v")
    major, minor, _ = k8s_version.split(".")
    # kubectl version and the API server's /version read these; without them they say v0.0.0.
    version_flags = " ".join([
        f"-X k8s.io/component-base/version.gitVersion={sim.kubernetes}",
        f"-X k8s.io/component-base/version.gitMajor={major}",
        f"-X k8s.io/component-base/version.gitMinor={minor}",
        f"-X k8s.io/client-go/pkg/version.gitVersion={sim.kubernetes}",
    ])
    return [
        Build("kubernetes", ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
              "k8s.io/kubernetes", sim.kubernetes, "kubernetes", ("./cmd/...",), f"-s -w {version_flags}",
              cold="about 8 min"),
        # etcdctl and etcdutl save and restore a kept base's snapshot (colocate/simulate/kept.py).
        Build("etcd", ("etcd", "etcdctl", "etcdutl"), "go.etcd.io/etcd/server/v3", sim.etcd, "etcd",
              (".", "./etcdctl", "./etcdutl"), "-s -w", cold="about 50 s"),
        Build("training-operator", ("training-operator.v1",), "github.com/kubeflow/training-operator",
              cfg.training_operator_version, None,
              ("github.com/kubeflow/training-operator/cmd/training-operator.v1",), "-s -w", cold="about 80 s"),
        Build("kwok", ("kwok",), "sigs.k8s.io/kwok", sim.kwok, None, ("sigs.k8s.io/kwok/cmd/kwok",), "-s -w",
              cold="about 70 s"),
        Build("argocd", ("argocd",), "github.com/argoproj/argo-cd/v2", sim.argocd, "argocd", (".",), "-s -w",
              cold="about 6 min"),
        # The API server's own admission CEL code, to measure what each generated policy costs
        # (colocate/simulate/celcost.py, docs/admission.md); k8s.io/apiserver v0.X is Kubernetes v1.X.
        Build("celcost", ("celcost",), "k8s.io/apiserver", f"v0.{minor}.{k8s_version.split('.')[2]}", "celcost",
              (".",), "-s -w", cold="about 1 min"),
        *([_kueue(cfg)] if cfg.kueue else []),
    ]


#: Kueue's version variables (kubernetes-sigs/kueue Makefile ``version_pkg``): its log and
#: ``kueue_build_info`` report them.
KUEUE_VERSION_PKG = "sigs.k8s.io/kueue/pkg/version"


def _kueue(cfg: config.Config) -> Build:
    """Kueue's manager (upstream's Makefile builds it as bin/manager from cmd/kueue), at colocate.yaml
    ``kueue.version``: the release whose config/ tree vendor/kueue holds, whose commit
    vendor/sources.yaml records (the module zip carries no commit)."""
    version = cfg.kueue.version
    tree = vendored.load().get("kueue")
    if tree is None or tree.tag != version:
        raise InputError(cfg.file, "$.kueue.version", f"{version}, but vendor/sources.yaml has kueue at "
                         f"{tree.tag if tree else 'no tag'}: vendor the same release (scripts/vendor_refresh.py)")
    flags = f"-s -w -X {KUEUE_VERSION_PKG}.GitVersion={version} -X {KUEUE_VERSION_PKG}.GitCommit={tree.commit}"
    return Build("kueue", ("kueue",), "sigs.k8s.io/kueue", version, None, ("sigs.k8s.io/kueue/cmd/kueue",), flags,
                 cold="about 6 min")

#: Names the Argo CD binary answers to (tools/sim/argocd/main.go picks the command by its name).
ARGOCD_COMMANDS = ("argocd-application-controller", "argocd-repo-server")


def _required_version(build: Build) -> str | None:
    text = (TOOLS / build.folder / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(build.module)}\s+(v\S+)", text, re.M)
    return found[1] if found else None


def ensure(cfg: config.Config | None = None, log=print) -> dict[str, Path]:
    """Build what is missing or stale; return every binary's path by name."""
    cfg = cfg or config.load()
    out: dict[str, Path] = {}
    for build in builds(cfg):
        if build.folder:
            required = _required_version(build)
            if required != build.version:
                raise InputError(f"tools/sim/{build.folder}/go.mod", build.module,
                                 f"requires {required}, but colocate.yaml pins {build.version}: change both together "
                                 f"(go get {build.module}@{build.version} && go mod tidy in tools/sim/{build.folder})")
        if up_to_date(build):
            log(f"simulate tools: {', '.join(build.binaries)} {build.version} up to date")
        else:
            go_install(build, log)
        out.update({b: BIN / b for b in build.binaries})
    for name in ARGOCD_COMMANDS:
        link = BIN / name
        if not link.is_symlink():
            link.unlink(missing_ok=True)
            link.symlink_to("argocd")
        out[name] = link
    out["redis-server"] = _redis(log)
    return out


def _redis(log) -> Path:
    """Debian's redis-server, which Argo CD's controller and repo server cache in; installed with
    apt-get when missing, as scripts/bootstrap installs promtool."""
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    if not shutil.which("apt-get"):
        raise InputError("redis-server", "", "not found: Argo CD in the simulation needs it; install Redis "
                         "(apt-get install redis-server, brew install redis) and put redis-server on PATH")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    log("simulate tools: apt-get install redis-server (Argo CD's cache)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for step in (["update", "-q"], ["install", "-y", "-q", "--no-install-recommends", "redis-server"]):
        result = subprocess.run([*sudo, "apt-get", "-o", "DPkg::Lock::Timeout=600", *step], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode != 0:
            raise InputError("apt-get " + " ".join(step), "", f"failed (exit {result.returncode}):\n{result.stdout[-2000:]}")
    found = shutil.which("redis-server")
    if not found:
        raise InputError("redis-server", "", "still not on PATH after apt-get install redis-server")
    return Path(found)


def main() -> int:
    return run_main(ensure, "simulate tools")


if __name__ == "__main__":
    sys.exit(main())
