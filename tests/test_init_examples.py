"""What ``colocate init`` scaffolds works as it is: each example synthesizes and checks clean with the
installed CLI, the scaffold's main.py writes the same dist/ as ``colocate synth``, and the
pre-commit config and GitHub workflow name hooks and inputs colocate really has."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from colocate import ROOT
from colocate.synth import write as render
from tests.helpers import VENV_BIN, colocate, run, yaml_load
from tests.test_action import _actionlint


@pytest.fixture(scope="module", params=["reference", "minimal"])
def scaffolded(request, tmp_path_factory) -> tuple[str, Path]:
    """A new repository from each example, synthesized by the installed CLI."""
    repo = tmp_path_factory.mktemp(request.param) / "cluster"
    proc = colocate("init", "--example", request.param, str(repo))
    assert proc.returncode == 0, proc.stderr
    proc = colocate("synth", cwd=repo)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return request.param, repo


def test_each_example_synthesizes_and_checks_clean(scaffolded):
    example, repo = scaffolded
    proc = colocate("check", "dist/", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 errors, 0 warnings" in proc.stdout, proc.stdout
    # The example job is in the tree, admitted by its cluster's quota and pools (synth refuses otherwise).
    assert (repo / "dist" / "apps" / "training" / "tfjob.training.mnist-example.yaml").is_file()


def test_the_examples_are_different_clusters(scaffolded):
    example, repo = scaffolded
    pools = sorted(p.name for p in (repo / "dist" / "nodes").iterdir())
    config = yaml_load((repo / "colocate.yaml").read_text())
    assert pools == sorted(p["name"] for p in config["cluster"]["pools"])
    if example == "reference":
        assert (repo / "colocate.yaml").read_text() == (ROOT / "colocate.yaml").read_text()
    else:
        assert [s["name"] for s in config["cluster"]["onlineServices"]] == ["inference"]
        assert (repo / "dist" / "apps" / "online" / "deployment.online.inference.yaml").is_file()


def test_the_minimal_example_pins_the_builds_colocate_makes_as_the_reference_does():
    """Its simulation and training-operator releases are the ones this colocate's Go modules and
    vendored trees hold: a release bump that forgot the example would make its simulate refuse."""
    minimal = yaml_load((ROOT / "colocate" / "base" / "data" / "init" / "minimal" / "colocate.yaml").read_text())
    reference = yaml_load((ROOT / "colocate.yaml").read_text())
    for key in ("simulation", "trainingOperator", "kubernetesVersion"):
        assert minimal[key] == reference[key], key


@pytest.mark.parametrize("scaffolded", ["minimal"], indirect=True)  # one main.py for both examples
def test_main_py_writes_the_same_dist_as_colocate_synth(scaffolded, tmp_path):
    """cdk8s.yaml runs `python main.py`; started from elsewhere it still reads its own folder."""
    example, repo = scaffolded
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns("dist"))
    proc = run([sys.executable, str(copy / "main.py")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert render.read_tree(copy / "dist") == render.read_tree(repo / "dist")
    proc = run([sys.executable, "main.py", "--check"], cwd=copy)
    assert proc.returncode == 0 and "is up to date" in proc.stderr, proc.stderr


def test_the_pre_commit_config_uses_colocates_hooks(tmp_path):
    colocate("init", str(tmp_path))
    config = tmp_path / ".pre-commit-config.yaml"
    proc = run([str(VENV_BIN / "pre-commit"), "validate-config", str(config)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    used = [hook["id"] for repo in yaml_load(config.read_text())["repos"] for hook in repo["hooks"]]
    offered = [hook["id"] for hook in yaml_load((ROOT / ".pre-commit-hooks.yaml").read_text())]
    assert sorted(used) == sorted(offered)


def test_the_workflow_passes_only_inputs_the_action_declares(tmp_path):
    """actionlint checks a `uses: ./` step's inputs against action.yml (tests/test_action.py)."""
    repo = tmp_path / "cluster"
    colocate("init", str(repo))
    workflow = repo / ".github" / "workflows" / "colocate.yml"
    text = workflow.read_text()
    assert "uses: OWNER/colocate@RELEASE" in text
    workflow.write_text(text.replace("uses: OWNER/colocate@RELEASE", "uses: ./"))
    shutil.copy(ROOT / "action.yml", repo / "action.yml")
    (repo / ".git").mkdir()  # actionlint finds the project root by it
    code, out = _actionlint(repo)
    assert code == 0, out
    given = yaml_load(text)["jobs"]["colocate"]["steps"][-1]["with"]
    assert set(given) <= set(yaml_load((ROOT / "action.yml").read_text())["inputs"])


@pytest.mark.slow
@pytest.mark.parametrize("scaffolded", ["minimal"], indirect=True)
def test_the_cdk8s_cli_writes_the_same_dist_as_colocate_synth(scaffolded, tmp_path):
    """The scaffold's cdk8s.yaml under the real cdk8s CLI (npm): `python` is the one colocate is installed in."""
    example, repo = scaffolded
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns("dist"))
    # tests.helpers.run puts node_modules/.bin and this interpreter's folder (`python`) first on PATH.
    proc = run(["cdk8s", "synth", "--no-check-upgrade"], cwd=copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert render.read_tree(copy / "dist") == render.read_tree(repo / "dist")
    assert render.read_tree(copy / "build" / "cdk8s") == render.read_tree(repo / "dist")
