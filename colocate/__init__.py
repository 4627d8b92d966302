"""colocate: co-located online inference and offline TensorFlow training, as cdk8s code.

The user's layout keeps ``constructs/``, ``charts/`` and ``policies/`` at the repository root.
They are namespace folders (no ``__init__.py``), so with the root on ``sys.path``
(``python main.py``, ``python -m pytest``) they can never shadow the ``constructs`` package
that cdk8s imports. Appending the root to this package's ``__path__`` makes them
``colocate.constructs``, ``colocate.charts`` and ``colocate.policies``; a wheel maps them
there instead (pyproject.toml), and then the extra entry finds nothing new.
"""
from __future__ import annotations

import os
from pathlib import Path

__version__ = "0.1.0"

ROOT = Path(__file__).resolve().parent.parent
__path__.append(str(ROOT))  # noqa: F821 - the package's own __path__

# jsii runs on Node.js; Node 20 is end-of-life and jsii prints a banner on every run. The
# bootstrap installs Node 22 from npm into node_modules/; use it unless the caller chose one.
_LOCAL_NODE = ROOT / "node_modules" / ".bin" / "node"
if "JSII_NODE" not in os.environ and _LOCAL_NODE.exists():
    os.environ["JSII_NODE"] = str(_LOCAL_NODE)
