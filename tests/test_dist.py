"""dist/ is the product: fresh, deterministic, atomic, and clean under kubeconform and the rules."""
from __future__ import annotations

import filecmp
import json
import shutil

import pytest
import yaml

from colocate import ROOT, app, config as config_mod
from colocate.checker import kubeconform
from colocate.synth import write as render
from tests.helpers import colocate, repo_copy, run, yaml_load

DIST = ROOT / "dist"


def test_committed_dist_is_fresh(rendered):
    stale = render.compare_tree(rendered, DIST)
    assert not stale, f"dist/ is stale ({stale}): run `make synth` and commit dist/"


def test_synth_is_deterministic(rendered):
    assert app.render_files(app.build()) == rendered


def test_every_object_has_standard_labels_and_the_index_has_the_release(rendered):
    index = yaml_load(rendered["index.yaml"])
    manifests = [p for p in rendered if p.endswith(".yaml")]  # the rest is containerd's TOML
    assert index["release"] and index["objectCount"] == len(manifests) - 1
    upstream = tuple(f"{folder}/" for folder, entry in index["folders"].items() if "rendered" in entry)
    assert upstream, "no rendered chart folder in the index"
    for path, text in rendered.items():
        if path.startswith("apps/") and not path.startswith(upstream):  # a chart's objects keep the chart's labels
            labels = yaml_load(text)["metadata"]["labels"]
            assert labels["app.kubernetes.io/part-of"] == "colocate", path
            assert "app.kubernetes.io/instance" not in labels, f"{path}: Argo CD owns the instance label"


def test_one_folder_per_argo_application(rendered):
    # Applications of our own folders; Helm charts and upstream repositories have none.
    sources = [yaml_load(t)["spec"]["source"] for p, t in rendered.items() if p.startswith("apps/argocd/")]
    apps = {s["path"] for s in sources if s["repoURL"] == config_mod.load().gitops.repo_url}
    folders = {f"dist/{p.rsplit('/', 1)[0]}" for p in rendered if p.startswith("apps/") and not p.startswith("apps/argocd/")}
    assert apps == folders
    root = yaml_load(rendered["bootstrap/application.argocd.colocate-root.yaml"])
    assert root["spec"]["source"]["path"] == "dist/apps/argocd"
    assert "finalizers" not in root["metadata"], "deleting the root must not cascade to the cluster"


def test_kubeconform_validates_all_of_dist_with_nothing_skipped():
    index = yaml_load((DIST / "index.yaml").read_text())
    result = kubeconform.run([DIST], index["kubernetesVersion"])
    assert (result.invalid, result.errors, result.skipped) == (0, 0, 0), result.resources
    assert result.valid == index["objectCount"] + 1  # every object, plus the index itself


def test_colocate_check_dist_exits_0():
    proc = colocate("check", "dist/")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 errors" in proc.stdout


def test_a_tree_named_other_than_dist_is_written_and_judged_as_dist_is(tmp_path):
    """The Applications' paths say dist/apps/...; `synth --outdir` (or a copy) may name the tree
    otherwise, and the rules find each folder's Application through the tree's index instead.
    synth judges what it writes with check's rules and refuses on an error, so exit 0 is their verdict."""
    out = tmp_path / "release"
    proc = colocate("synth", "--outdir", str(out))
    assert proc.returncode == 0, proc.stderr
    assert render.read_tree(out) == render.read_tree(DIST)


def test_check_names_an_offline_deployment_without_priority(tmp_path):
    copy = tmp_path / "dist"
    shutil.copytree(DIST, copy)
    (copy / "apps" / "training-extra.yaml").write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "adhoc-trainer", "namespace": "training"},
        "spec": {"selector": {"matchLabels": {"app": "adhoc"}}, "template": {
            "metadata": {"labels": {"app": "adhoc"}},
            "spec": {"containers": [{"name": "tensorflow", "image": "harbor.example.com/ml/tf:2.11.0",
                                     "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}]}}},
    }))
    proc = colocate("check", str(copy))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(text.strip() for text in proc.stdout.splitlines() if "COL004" in text)
    assert line.startswith("ERROR COL004 ") and "training-extra.yaml:1 Deployment/training/adhoc-trainer" in line
    assert "spec.template.spec.priorityClassName" in line and "offline-batch" in line
    data = json.loads(colocate("check", str(copy), "--format", "json").stdout)
    assert [f["name"] for f in data["findings"]] == ["adhoc-trainer"]


def test_check_broken_yaml_is_an_error_naming_file_and_line(tmp_path):
    copy = tmp_path / "dist"
    shutil.copytree(DIST, copy)
    broken = copy / "apps" / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: [\n")
    # Found in a folder: one INPUT error for the file, the rest checked.
    proc = colocate("check", str(copy))
    assert proc.returncode == 1, proc.stderr
    assert f"ERROR INPUT {broken}:5: not valid YAML" in proc.stdout, proc.stdout
    # Named: bad input, exit 2.
    proc = colocate("check", str(broken))
    assert proc.returncode == 2
    assert f"{broken}:5: not valid YAML" in proc.stderr


def test_check_unknown_path_exits_2():
    proc = colocate("check", "no/such/folder")
    assert proc.returncode == 2 and "no/such/folder: no such file or folder" in proc.stderr


def test_synth_with_a_broken_config_leaves_dist_untouched(tmp_path):
    out = tmp_path / "dist"
    shutil.copytree(DIST, out)
    bad = tmp_path / "colocate.yaml"
    bad.write_text((ROOT / "colocate.yaml").read_text().replace("cidrs: [10.20.0.0/24]", "cidrs: [10.20.0.0/99]"))
    proc = colocate("--config", str(bad), "synth", "--outdir", str(out))
    assert proc.returncode == 2
    assert f"{bad}:$.registry.cidrs[0]" in proc.stderr
    assert not filecmp.dircmp(DIST, out).diff_files and render.read_tree(out) == render.read_tree(DIST)


def test_synth_that_raises_in_a_construct_leaves_dist_untouched(tmp_path):
    from colocate import config as config_mod
    from colocate.errors import PropError

    out = tmp_path / "dist"
    shutil.copytree(DIST, out)
    c = config_mod.load().cluster
    pools = tuple(p if p.name != "online" else type(p)(**{**p.__dict__, "nodes": 0}) for p in c.pools)
    with pytest.raises(PropError, match="NodePool 'online': prop 'nodes'"):
        app.synth(out, cluster=type(c)(**{**c.__dict__, "pools": pools}))
    assert render.read_tree(out) == render.read_tree(DIST)
    assert not list(tmp_path.glob("dist.tmp-*")), "staging folder left behind"


@pytest.mark.slow
def test_cdk8s_cli_synth_writes_the_same_bytes(tmp_path, rendered):
    """The real cdk8s CLI (npm, cdk8s.yaml) in a copy of the repository."""
    copy = repo_copy(tmp_path / "repo", with_dist=False)
    proc = run(["npx", "--no", "cdk8s", "synth", "--no-check-upgrade"], cwd=copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert render.read_tree(copy / "dist") == rendered
    assert render.read_tree(copy / "build" / "cdk8s") == rendered
