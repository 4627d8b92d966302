"""The checker package's face exports public names only, and its modules share public names:
what one module of colocate/checker/ uses of another is that module's public interface."""
from __future__ import annotations

import ast

from colocate import checker
from tests.helpers import ROOT

CHECKER = ROOT / "colocate" / "checker"


def test_the_face_exports_public_names_only():
    assert [name for name in checker.__all__ if name.startswith("_")] == []
    assert all(hasattr(checker, name) for name in checker.__all__)


def test_no_module_of_the_checker_imports_a_private_name_of_another():
    found = []
    for path in sorted(CHECKER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("colocate"):
                found += [f"{path.relative_to(ROOT)}: {node.module}.{alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.endswith("__")]
    assert found == []
