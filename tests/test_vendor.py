"""The upstream trees under vendor/ are what vendor/sources.yaml records (checksum, tag, version),
and the versions agree with the pins the synth uses (colocate.yaml, the constructs' CHART_VERSION).
scripts/vendor_refresh.py re-vendors a tree and rewrites its record; docs/third-party.md explains it."""
from __future__ import annotations

import fnmatch
import subprocess

import pytest

from colocate import ROOT, config
from colocate.base import vendored
from colocate.charts import training_operator
from colocate.constructs import dcgm_exporter, device_plugin, kube_prometheus_stack
from colocate.model import names
from tests.helpers import yaml_load

TREES = vendored.load()
DOC = (ROOT / "docs" / "third-party.md").read_text()


def _chart(tree: vendored.Tree) -> dict:
    return yaml_load((tree.root / "Chart.yaml").read_text())


def _values(tree: vendored.Tree) -> dict:
    return yaml_load((tree.root / "values.yaml").read_text())


def test_the_record_names_every_tree_the_issue_asks_for():
    assert set(TREES) == {"kube-prometheus-stack", "kube-state-metrics", "prometheus-node-exporter",
                          "prometheus-windows-exporter", "grafana", "dcgm-exporter", "nvidia-device-plugin",
                          "training-operator", "kueue"}


@pytest.mark.parametrize("name", sorted(TREES))
def test_tree_is_unchanged_from_its_record(name):
    tree = TREES[name]
    got = vendored.digest_of(tree, TREES)
    assert got == (tree.sha256, tree.files, tree.bytes), (
        f"{tree.path} differs from vendor/sources.yaml (sha256, files, bytes): recorded "
        f"{(tree.sha256, tree.files, tree.bytes)}, found {got}. Vendored trees are upstream bytes; re-vendor with "
        f"scripts/vendor_refresh.py {name} --git-dir <clone of {tree.repository}> (docs/third-party.md)")


@pytest.mark.parametrize("name", sorted(TREES))
def test_every_vendored_file_is_committed(name):
    # kube-prometheus-stack's own .gitignore ignores charts/*: the dependency charts are added with
    # `git add -f`, and a refresh that brings a new file must do the same.
    tree = TREES[name]
    inner = vendored.nested(tree.path, [t.path for t in TREES.values()])
    tracked = subprocess.run(["git", "ls-files", "--", tree.path, *(f":!{p}" for p in inner)], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    assert len(tracked) == tree.files, f"{tree.path}: {tree.files} files recorded, {len(tracked)} tracked by git (git add -f)"


@pytest.mark.parametrize("name", sorted(TREES))
def test_tree_carries_its_licence_and_is_in_the_third_party_doc(name):
    tree = TREES[name]
    assert tree.licence == "Apache-2.0"
    assert (tree.root / "LICENSE").read_text().lstrip().startswith("Apache License"), tree.path
    assert len(tree.commit) == 40 and all(c in "0123456789abcdef" for c in tree.commit)
    row = next((line for line in DOC.splitlines() if line.startswith(f"| `{tree.path}/`")), None)
    assert row, f"docs/third-party.md has no row for `{tree.path}/`"
    for field in (tree.repository, f"`{tree.upstream_path}`", tree.tag, tree.commit, tree.sha256):
        assert field in row, f"docs/third-party.md's row for {tree.path} lacks {field}"


@pytest.mark.parametrize("name", sorted(n for n in TREES if (TREES[n].root / "Chart.yaml").is_file()))
def test_chart_version_matches_the_record_and_the_tag(name):
    tree = TREES[name]
    chart = _chart(tree)
    assert str(chart["version"]) == tree.version
    assert tree.tag.endswith(tree.version), f"{name}: tag {tree.tag} is not the release of chart {tree.version}"
    assert chart["name"] == tree.root.name == name


def test_versions_match_the_pins_the_synth_uses():
    assert TREES["kube-prometheus-stack"].version == kube_prometheus_stack.CHART_VERSION
    assert _chart(TREES["kube-prometheus-stack"])["name"] == names.KPS_CHART
    assert TREES["dcgm-exporter"].version == dcgm_exporter.CHART_VERSION
    assert TREES["nvidia-device-plugin"].version == device_plugin.CHART_VERSION
    assert TREES["training-operator"].tag == TREES["training-operator"].version == config.load().training_operator_version


def test_images_we_name_are_the_vendored_charts_defaults():
    dcgm = _values(TREES["dcgm-exporter"])["image"]
    assert dcgm_exporter.IMAGE == f"{dcgm['repository']}:{dcgm['tag']}"
    plugin = TREES["nvidia-device-plugin"]
    assert device_plugin.IMAGE == f"{_values(plugin)['image']['repository']}:v{_chart(plugin)['appVersion']}"
    kps = _values(TREES["kube-prometheus-stack"])
    assert kube_prometheus_stack.ALERTMANAGER_VERSION == kps["alertmanager"]["alertmanagerSpec"]["image"]["tag"]
    overlay = yaml_load((TREES["training-operator"].root / training_operator.OVERLAY.removeprefix("manifests/")
                              / "kustomization.yaml").read_text())
    image = next(i for i in overlay["images"] if i["name"] == training_operator.OPERATOR_IMAGE)
    assert training_operator.OPERATOR_TAGS[TREES["training-operator"].tag] == image["newTag"]


def test_tfjob_crd_we_vendored_earlier_is_the_trees_copy():
    assert (ROOT / "policies/crds/kubeflow.org_tfjobs.yaml").read_bytes() == \
        (TREES["training-operator"].root / "base/crds/kubeflow.org_tfjobs.yaml").read_bytes()


def test_dependency_charts_are_the_ones_the_parent_asks_for():
    """Each remote dependency of a vendored chart is vendored under its charts/ (or packaged there
    upstream) at a version inside the parent's range, as ``helm dependency build`` lays it out."""
    for name, tree in TREES.items():
        if not (tree.root / "Chart.yaml").is_file():
            continue
        for dep in _chart(tree).get("dependencies") or []:
            folder = tree.root / "charts" / dep["name"]
            if not dep.get("repository"):
                assert (tree.root / "charts" / dep["name"] / "Chart.yaml").is_file(), f"{name}: local {dep['name']}"
                continue
            packaged = list((tree.root / "charts").glob(f"{dep['name']}*-{dep['version']}.tgz"))
            if packaged:
                continue
            child = next((t for t in TREES.values() if t.root == folder), None)
            assert child is not None, f"{name} depends on {dep['name']} {dep['version']}: vendor it under {folder}"
            assert child.parent == name and child.resolves == dep["version"]
            assert fnmatch.fnmatchcase(child.version, dep["version"]), f"{child.name} {child.version} not in {dep['version']}"


def test_the_vendored_kueue_is_the_configured_one():
    """synth renders vendor/kueue and simulate builds colocate.yaml's kueue.version: one release."""
    from colocate import config

    assert TREES["kueue"].tag == TREES["kueue"].version == config.load().kueue.version
