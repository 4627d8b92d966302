"""colocate: co-located online inference and offline TensorFlow training, as cdk8s code.

The user's layout keeps ``constructs/``, ``charts/`` and ``policies/`` at the repository root.
They are namespace folders (no ``__init__.py``), so with the root on ``sys.path``
(``python main.py``, ``python -m pytest``) they can never shadow the ``constructs`` package
that cdk8s imports. pyproject.toml maps exactly these three to ``colocate.constructs``,
``colocate.charts`` and ``colocate.policies``: a wheel installs them there, and the editable
install's finder maps them to the folders. Data files are read through importlib.resources
(colocate.base.data_files), so an installed colocate finds its rules and schemas.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys
from pathlib import Path

__version__ = "0.1.0"

#: The checkout this package was imported from. In an installed wheel this is site-packages'
#: parent and holds no colocate.yaml; code that needs the checkout asks colocate.base.data_files.
ROOT = Path(__file__).resolve().parent.parent

#: The user's folders that become subpackages; nothing else of the root does.
_LAYOUT = ("constructs", "charts", "policies")


class _LayoutFinder:
    """Finds ``colocate.constructs``, ``colocate.charts`` and ``colocate.policies`` in the checkout.

    setuptools' editable finder cannot map a namespace folder under a regular package, and
    appending the whole root to ``__path__`` would make every top-level folder and script a
    subpackage (``colocate.tests``, ``colocate.main``). A wheel has the folders inside the
    package, and this finder is not installed.
    """

    @staticmethod
    def find_spec(fullname: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        parent, _, name = fullname.partition(".")
        if parent != __name__ or name not in _LAYOUT or not (ROOT / name).is_dir():
            return None
        # The path finder makes a namespace spec for a folder without __init__.py, with the
        # namespace path importlib.resources reads data through.
        return importlib.machinery.PathFinder.find_spec(fullname, [str(ROOT)])


if not (Path(__file__).parent / "constructs").is_dir():
    sys.meta_path.append(_LayoutFinder)

# jsii runs on Node.js; Node 20 is end-of-life and jsii prints a banner on every run. The
# bootstrap installs Node 22 from npm into node_modules/; use it unless the caller chose one.
_LOCAL_NODE = ROOT / "node_modules" / ".bin" / "node"
if "JSII_NODE" not in os.environ and _LOCAL_NODE.exists():
    os.environ["JSII_NODE"] = str(_LOCAL_NODE)
