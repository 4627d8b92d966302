"""Test helpers: run the CLI and tools as subprocesses, with the environment `make` gives."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from colocate import ROOT

VENV_BIN = Path(sys.executable).parent


def env() -> dict[str, str]:
    """The environment the Makefile gives: project Node for jsii, project bin/ on PATH."""
    out = dict(os.environ)
    out.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))
    out["PATH"] = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(ROOT / "bin"), str(VENV_BIN),
                                   out.get("PATH", "")])
    return out


def run(args: list[str], cwd: Path = ROOT, check: bool = False) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env(), capture_output=True, text=True)
    if check and proc.returncode:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def colocate(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The installed console script, exactly as a user runs it."""
    return run([str(VENV_BIN / "colocate"), *args], cwd=cwd)


