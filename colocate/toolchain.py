"""The environment the Makefile gives the project's tools, for code that starts them."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from colocate import ROOT


def environment() -> dict[str, str]:
    """os.environ with the project's Node.js for jsii, and node_modules/.bin, bin/ (kubeconform)
    and this interpreter's folder (the console scripts) first on PATH."""
    out = dict(os.environ)
    out.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))
    out["PATH"] = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(ROOT / "bin"),
                                   str(Path(sys.executable).parent), out.get("PATH", "")])
    return out
