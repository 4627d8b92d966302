"""Test helpers: run the CLI and tools as subprocesses, with the environment `make` gives."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from colocate import ROOT
from colocate.toolchain import environment

VENV_BIN = Path(sys.executable).parent


def run(args: list[str], cwd: Path = ROOT, check: bool = False) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=environment(), capture_output=True, text=True)
    if check and proc.returncode:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def colocate(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The installed console script, exactly as a user runs it."""
    return run([str(VENV_BIN / "colocate"), *args], cwd=cwd)


