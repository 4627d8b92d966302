"""The pre-commit hooks, run by the real pre-commit framework in a git repository."""
from __future__ import annotations

import re

from pathlib import Path

from colocate import ROOT
from tests.helpers import VENV_BIN, git, git_repo, run

DEPLOYMENT = "dist/apps/online/deployment.online.recsys-inference.yaml"


def _pre_commit(repo: Path, home: Path, *files: str):
    proc = run(["env", f"PRE_COMMIT_HOME={home}", str(VENV_BIN / "pre-commit"), "run", "--files", *files], cwd=repo)
    return proc.returncode, proc.stdout + proc.stderr


def test_config_is_valid():
    proc = run([str(VENV_BIN / "pre-commit"), "validate-config", str(ROOT / ".pre-commit-config.yaml")])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hooks_pass_on_a_clean_tree_and_fail_on_a_hand_edited_manifest(tmp_path):
    repo = git_repo(tmp_path / "repo")
    home = tmp_path / "pre-commit-home"

    code, out = _pre_commit(repo, home, DEPLOYMENT)
    assert code == 0, out
    assert out.count("Passed") == 2, out

    path = repo / DEPLOYMENT
    # CPU limit above the request: no longer Guaranteed (COL002).
    path.write_text(path.read_text().replace("limits:\n              cpu: '4'", "limits:\n              cpu: '6'"))
    git(repo, "add", DEPLOYMENT)
    code, out = _pre_commit(repo, home, DEPLOYMENT)
    assert code == 1, out
    assert f"modified {repo / DEPLOYMENT}" in out, out
    assert "run `colocate synth" in out
    assert re.search(rf"ERROR COL002 {re.escape(DEPLOYMENT)}:\d+ Deployment/online/recsys-inference", out), out
