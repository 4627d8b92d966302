"""``colocate simulate --base REV``: a base that cannot be had is bad input, said before anything
starts (the run itself: tests/simulate/test_change.py)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from colocate import ROOT
from tests.helpers import colocate

GIT = ["git", "-c", "user.email=test@example.com", "-c", "user.name=test", "-c", "commit.gpgsign=false"]


@pytest.fixture
def dist(tmp_path):
    shutil.copytree(ROOT / "dist", tmp_path / "repo" / "dist")
    (tmp_path / "repo" / "README").write_text("no dist/ in the first commit\n")
    subprocess.run([*GIT, "init", "-q", str(tmp_path / "repo")], check=True)
    subprocess.run([*GIT, "-C", str(tmp_path / "repo"), "add", "README"], check=True)
    subprocess.run([*GIT, "-C", str(tmp_path / "repo"), "commit", "-q", "-m", "first"], check=True)
    return tmp_path / "repo" / "dist"


@pytest.mark.parametrize(("revision", "words"), [
    ("no-such-branch", "unknown git revision 'no-such-branch'"),
    ("--output=/tmp/x", "unknown git revision '--output=/tmp/x'"),  # never an option of git
    ("HEAD", "--base:HEAD: holds no dist/"),
])
def test_a_base_that_cannot_be_had_is_bad_input(dist, revision, words):
    proc = colocate("simulate", str(dist), f"--base={revision}")
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    assert "simulate tools" not in proc.stderr and "control plane" not in proc.stderr, proc.stderr


def test_a_dist_outside_git_is_bad_input(tmp_path):
    shutil.copytree(ROOT / "dist", tmp_path / "dist")
    proc = colocate("simulate", str(tmp_path / "dist"), "--base", "HEAD")
    assert proc.returncode == 2 and "needs" in proc.stderr and "inside a git repository" in proc.stderr, proc.stderr
