"""The user's layout must never shadow the `constructs` package cdk8s imports, and every
entry point must work from the repository root."""
from __future__ import annotations

import sys

from colocate import ROOT
from tests.helpers import colocate, run


def test_top_level_folders_are_not_regular_packages():
    for folder in ("constructs", "charts", "policies"):
        assert (ROOT / folder).is_dir()
        assert not (ROOT / folder / "__init__.py").exists(), (
            f"{folder}/__init__.py makes {folder}/ a regular package that shadows PyPI packages "
            "whenever the repository root is on sys.path; keep it a namespace folder")


def test_import_cdk8s_from_the_repository_root():
    proc = run([sys.executable, "-c", "import cdk8s, constructs, colocate.constructs.node_pool; "
                "print(constructs.__file__)"], cwd=ROOT, check=True)
    assert "site-packages" in proc.stdout


def test_python_m_pytest_from_the_repository_root_collects():
    proc = run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                "tests/test_quantity.py"], cwd=ROOT, check=True)
    assert "test_quantity.py::" in proc.stdout


def test_cli_runs_from_the_repository_root():
    proc = colocate("rules")
    assert proc.returncode == 0, proc.stderr
    assert "COL004" in proc.stdout


def test_jsii_runs_on_a_supported_node_without_banner():
    proc = run([sys.executable, "-c", "import cdk8s"], cwd=ROOT, check=True)
    assert "end-of-life" not in proc.stderr, proc.stderr
