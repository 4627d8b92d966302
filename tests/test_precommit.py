"""The pre-commit hooks, run by the real pre-commit framework in a git repository."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

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


# --- .pre-commit-hooks.yaml: colocate's hooks in a repository that `colocate init` made ---------------


def test_the_hooks_manifest_is_valid():
    proc = run([str(VENV_BIN / "pre-commit"), "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _try_repo(repo: Path, home: Path) -> tuple[int, str]:
    """`pre-commit try-repo` of this checkout (its HEAD plus uncommitted changes to tracked files),
    as a consumer's repository would use it: pre-commit pip-installs colocate into a Python 3.11
    environment of its own. No checkout tool on PATH: kubeconform comes from the user's tool folder."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "PRE_COMMIT_HOME": str(home / "pre-commit"), "JSII_NODE": str(ROOT / "node_modules" / ".bin" / "node")}
    proc = subprocess.run([str(VENV_BIN / "pre-commit"), "try-repo", str(ROOT), "--all-files"], cwd=repo,
                          env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.slow
def test_consumer_hooks_fail_on_a_stale_dist_and_pass_on_a_fresh_one(tmp_path):
    home = tmp_path / "home"
    tools = home / ".cache" / "colocate" / "tools"
    tools.mkdir(parents=True)
    os.chmod(tools.parent, 0o700)
    shutil.copy2(ROOT / "bin" / "kubeconform", tools / "kubeconform")
    repo = tmp_path / "cluster"
    repo.mkdir()
    git(repo, "init", "-q")
    colocate_init = run([str(VENV_BIN / "colocate"), "init"], cwd=repo, check=True)
    assert (repo / "colocate.yaml").is_file(), colocate_init.stderr
    run([str(VENV_BIN / "colocate"), "synth"], cwd=repo, check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "cluster")

    # A job request merged without re-synthesizing: dist/ is stale (jobs/ holds init's example).
    shutil.copy(ROOT / "jobs" / "tf-mnist-dist.yaml", repo / "jobs" / "tf-mnist-dist.yaml")
    git(repo, "add", "-A")
    code, out = _try_repo(repo, home)
    assert code == 1, out
    assert re.search(r"colocate synth --check \(dist/ is fresh\)\.+Failed", out), out
    assert "added    " in out and "tfjob.training.tf-mnist-dist.yaml" in out and "is stale" in out, out
    assert re.search(r"colocate check \(dist/\)\.+Passed", out), out

    run([str(VENV_BIN / "colocate"), "synth"], cwd=repo, check=True)
    git(repo, "add", "-A")
    code, out = _try_repo(repo, home)
    assert code == 0, out
    assert re.search(r"colocate synth --check \(dist/ is fresh\)\.+Passed", out), out
    assert re.search(r"colocate check \(dist/\)\.+Passed", out), out
