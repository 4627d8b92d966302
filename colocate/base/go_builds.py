"""The project's tools: the environment the Makefile gives them, for code that starts them, and
the ``go install`` of a pinned build into bin/ with its stamp, shared by the simulation's components
(colocate/simulate/toolchain.py) and the renderers (colocate/synth/renderers.py)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from colocate import ROOT
from colocate.errors import InputError


def environment() -> dict[str, str]:
    """os.environ with the project's Node.js for jsii, and node_modules/.bin, bin/ (kubeconform)
    and this interpreter's folder (the console scripts) first on PATH."""
    out = dict(os.environ)
    out.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))
    out["PATH"] = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(ROOT / "bin"),
                                   str(Path(sys.executable).parent), out.get("PATH", "")])
    return out


BIN = ROOT / "bin"
TOOLS = ROOT / "tools" / "sim"


@dataclass(frozen=True)
class Build:
    """One ``go install`` and the binaries it leaves in bin/."""

    name: str
    binaries: tuple[str, ...]
    #: Module whose version colocate.yaml pins, and that version.
    module: str
    version: str
    #: A module in tools/sim/ (built there) or None for ``go install <package>@<version>``.
    folder: str | None
    packages: tuple[str, ...]
    ldflags: str = ""
    #: How long a cold build took on the 2-core CI machine, for the progress line.
    cold: str = ""

    def stamp(self) -> str:
        digest = hashlib.sha256(f"{self.module} {self.version} {self.ldflags}\n".encode())
        if self.folder:
            for path in sorted((TOOLS / self.folder).rglob("*")):
                if path.is_file():
                    digest.update(path.relative_to(TOOLS).as_posix().encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()


def _stamp_file(build: Build) -> Path:
    return BIN / f".sim-{build.name}.stamp"


def up_to_date(build: Build) -> bool:
    stamp = _stamp_file(build)
    return (stamp.is_file() and stamp.read_text().strip() == build.stamp()
            and all((BIN / b).is_file() for b in build.binaries))


def go_install(build: Build, log, label: str = "simulate tools") -> None:
    go = shutil.which("go")
    if go is None:
        raise InputError("go", "", "not found: the simulation builds Kubernetes, etcd, kwok and the "
                         "training-operator from source; install Go >= 1.25 (https://go.dev/dl)")
    targets = build.packages if build.folder else tuple(f"{p}@{build.version}" for p in build.packages)
    log(f"{label}: building {', '.join(build.binaries)} {build.version} with go install "
        f"({build.cold} cold on 2 cores, seconds when the Go build cache is warm)")
    started = time.monotonic()
    env = dict(os.environ, GOBIN=str(BIN))
    cwd = TOOLS / build.folder if build.folder else ROOT
    argv = [go, "install", *(["-ldflags", build.ldflags] if build.ldflags else []), *targets]
    result = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise InputError(" ".join(argv), "", f"go install failed (exit {result.returncode}):\n{result.stdout[-4000:]}")
    _stamp_file(build).write_text(build.stamp() + "\n")
    log(f"{label}: built {', '.join(build.binaries)} in {time.monotonic() - started:.0f} s")


def run_main(ensure, label: str) -> int:
    """A toolchain's ``python -m`` entry point: build what is missing with a progress line per
    build; exit 2 with the reason when a build cannot run or fails."""
    try:
        ensure(log=lambda line: print(line, flush=True))
    except InputError as exc:
        print(f"{label}: ERROR: {exc}", file=sys.stderr)
        return 2
    return 0
