"""Edges of what colocate reads and says: numbers only YAML 1.1 reads as such in job files, a
local file named like a shipped scenario, diff naming its temporary folder, and the kubeadm
phases the docs tell an operator to run."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from colocate import ROOT
from colocate.simulate import scenario
from tests.helpers import colocate, git

CONFIG = str(ROOT / "colocate.yaml")


def _synth(tmp_path: Path, job: str) -> subprocess.CompletedProcess:
    folder = tmp_path / "jobs"
    folder.mkdir(exist_ok=True)
    (folder / "x.yaml").write_text(job)
    return colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "out", cwd=tmp_path)


@pytest.mark.parametrize("text, kind, read", [("010", "octal", "8"), ("0x10", "hexadecimal", "16"),
                                              ("1:00", "base 60", "60"), ("1_0", "a number with '_'", "10"),
                                              ("0b10", "binary", "2")])
def test_a_number_only_yaml_1_1_reads_as_such_is_refused_in_a_job_file(tmp_path, text, kind, read):
    """`replicas: 010` asked for 8 Workers, silently."""
    proc = _synth(tmp_path, "name: x\nimage: harbor.example.com/ml/x:1\nroles:\n"
                            f"  Worker:\n    replicas: {text}\n    cpu: 1\n    memory: 1Gi\n")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"x.yaml:5: {text} is {kind} in YAML 1.1 and reads as {read}: write the decimal number" in proc.stderr, \
        proc.stderr
    assert not (tmp_path / "out").exists()


def test_decimal_numbers_quoted_strings_and_quantities_are_read_as_written(tmp_path):
    proc = _synth(tmp_path, "name: x\nimage: harbor.example.com/ml/x:1\nroles:\n"
                            "  Worker: {replicas: 10, cpu: 0.5, memory: 1Gi}\nbackoffLimit: 0\n")
    assert proc.returncode == 0, proc.stderr
    tfjob = next((tmp_path / "out").rglob("tfjob.*x.yaml")).read_text()
    assert re.search(r"replicas: 10\b", tfjob) and "cpu: 500m" in tfjob, tfjob


def test_a_local_file_or_folder_named_like_a_shipped_scenario_does_not_replace_it(tmp_path, monkeypatch, capsys):
    """`--scenario peak` read ./peak, and a folder ./night broke the default `colocate simulate`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "night").mkdir()
    (tmp_path / "peak").write_text("name: mine\ndescription: a local file\n")
    for name in ("night", "peak"):
        chosen = scenario.load(name)
        assert chosen == scenario.load(str(scenario.SHIPPED / f"{name}.yaml")), name
        assert f"--scenario {name}: the shipped scenario, not ./{name}" in capsys.readouterr().err
    assert scenario.load("./peak").name == "mine"
    assert capsys.readouterr().err == ""


def test_diff_of_the_repository_root_names_files_as_in_the_repository(tmp_path):
    """`diff --dist .` said `HEAD~1: colocate-diff-4zleyvut/.pre-commit-config.yaml:3`."""
    (tmp_path / "broken.yaml").write_text("a: [unclosed\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "broken.yaml").write_text("a: 1\n")
    git(tmp_path, "commit", "-qam", "fix")
    proc = colocate("diff", "HEAD~1", "--dist", ".", "--no-policy", "--no-capacity", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "colocate-diff-" not in proc.stderr and "HEAD~1: broken.yaml" in proc.stderr, proc.stderr


#: `kubeadm upgrade node`'s phases in Kubernetes v1.28 (cmd/kubeadm/app/cmd/upgrade/node.go at
#: v1.28.15 appends NewPreflightPhase, NewControlPlane and NewKubeletConfigPhase; their Names in
#: cmd/kubeadm/app/cmd/phases/upgrade/node/). The control-plane phase also rewrites a local
#: etcd's static pod (its --etcd-upgrade is true by default).
UPGRADE_NODE_PHASES = {"preflight", "control-plane", "kubelet-config"}


def test_the_docs_name_only_kubeadm_upgrade_node_phases_that_exist_in_1_28():
    """`kubeadm upgrade node phase etcd` does not exist in 1.28."""
    named = {}
    for doc in (ROOT / "docs").rglob("*.md"):
        for phase in re.findall(r"kubeadm upgrade node phase ([\w-]+)", doc.read_text()):
            named.setdefault(phase, []).append(doc.name)
    assert named and set(named) <= UPGRADE_NODE_PHASES, named
