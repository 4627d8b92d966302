"""Nothing of the reference cluster is hard-wired: a user starts from `colocate init --example
minimal`, commits, edits colocate.yaml's cluster: section (another pool, the training namespace
renamed; in the second variant every pool, namespace, tier and the registry renamed as well),
commits again, and synth, check, capacity and diff work on that cluster with the installed CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import colocate, git, yaml_load, yaml_load_all

#: The training namespace the minimal example names (cluster.namespaces.training).
OLD_TRAINING = "training"
NEW_TRAINING = "ml-batch"
NEW_POOL = "batch"

#: Text replacements a user makes in the minimal colocate.yaml, per variant. A CPU-only batch pool
#: is inserted before the monitoring pool; "renamed" also gives it GPUs and renames the rest.
_BATCH_POOL = (f"    - name: {NEW_POOL}\n      nodes: 3\n      cpu: \"64\"\n      memory: 256Gi\n"
               "      labels: {role: batch}\n")
EDITS = {
    "pool-and-namespace": [
        ("    training: training\n", f"    training: {NEW_TRAINING}\n"),
        ("    - name: monitoring\n", _BATCH_POOL + "    - name: monitoring\n"),
    ],
    "renamed": [
        ("    training: training\n", f"    training: {NEW_TRAINING}\n"),
        ("    - name: monitoring\n", _BATCH_POOL.replace("memory: 256Gi\n", "memory: 256Gi\n      gpus: 8\n")
         + "    - name: obs\n"),
        ("    online: online\n", "    online: serving\n"),
        ("    monitoring: monitoring\n", "    monitoring: observe\n"),
        ("    - name: online\n", "    - name: front\n"),
        ("    - name: mixed\n", "    - name: shared\n"),
        ("poolRoles: {online: online, mixed: mixed, monitoring: monitoring}",
         "poolRoles: {online: front, mixed: shared, monitoring: obs}"),
        ("onlineServicePools: [online, mixed]", "onlineServicePools: [front, shared]"),
        ("- name: online-high\n", "- name: serve-first\n"),
        ("- name: offline-batch\n", "- name: train-idle\n"),
        ("host: harbor.example.com", "host: registry.corp.internal"),
    ],
}


def _edit(path: Path, edits: list[tuple[str, str]]) -> None:
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, f"{old!r} is not once in the minimal example's {path.name}"
        text = text.replace(old, new)
    path.write_text(text)


def _ok(proc) -> str:
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module", params=sorted(EDITS))
def cluster(request, tmp_path_factory) -> tuple[str, Path]:
    """The user's repository: the minimal example committed, then the edited cluster committed."""
    variant, repo = request.param, tmp_path_factory.mktemp(request.param)
    git(repo, "init", "-q")
    _ok(colocate("init", "--example", "minimal", cwd=repo))
    _ok(colocate("synth", cwd=repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "minimal example")
    _edit(repo / "colocate.yaml", EDITS[variant])
    if variant == "renamed":  # the job's image moves with the mirror
        _edit(repo / "jobs" / "mnist-example.yaml", [("harbor.example.com/", "registry.corp.internal/")])
    _ok(colocate("synth", cwd=repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "another pool, training namespace renamed")
    return variant, repo


def _objects(dist: Path) -> list[dict]:
    return [d for p in sorted(dist.rglob("*.yaml")) for d in yaml_load_all(p.read_text()) if isinstance(d, dict)]


def test_dist_has_nothing_left_in_the_old_training_namespace(cluster):
    _variant, repo = cluster
    objects = _objects(repo / "dist")
    namespaces = {d.get("metadata", {}).get("namespace") for d in objects}
    assert OLD_TRAINING not in namespaces
    assert NEW_TRAINING in namespaces
    names = {d["metadata"]["name"] for d in objects if d.get("kind") == "Namespace"}
    assert NEW_TRAINING in names and OLD_TRAINING not in names, names
    tfjobs = [d for d in objects if d.get("kind") == "TFJob"]
    assert [d["metadata"]["namespace"] for d in tfjobs] == [NEW_TRAINING]


def test_the_new_pool_has_its_node_pool_description(cluster):
    _variant, repo = cluster
    config = yaml_load((repo / "colocate.yaml").read_text())
    assert sorted(p.name for p in (repo / "dist" / "nodes").iterdir()) == \
        sorted(p["name"] for p in config["cluster"]["pools"])
    pool = yaml_load((repo / "dist" / "nodes" / NEW_POOL / f"nodepool.{NEW_POOL}.yaml").read_text())
    assert pool["kind"] == "NodePool" and pool["metadata"]["name"] == NEW_POOL, pool


@pytest.mark.parametrize("cluster", ["renamed"], indirect=True)
def test_the_renamed_cluster_keeps_no_reference_name(cluster):
    """Every name the user changed is gone from dist/: none was built in."""
    _variant, repo = cluster
    text = "\n".join(p.read_text() for p in sorted((repo / "dist").rglob("*.yaml")))
    for gone in ("harbor.example.com", "online-high", "offline-batch"):
        assert gone not in text, gone
    objects = _objects(repo / "dist")
    namespaces = {d.get("metadata", {}).get("namespace") for d in objects}
    assert not namespaces & {"online", "monitoring"}, namespaces & {"online", "monitoring"}
    assert {"serving", "observe"} <= namespaces


def test_check_finds_no_error(cluster):
    _variant, repo = cluster
    out = _ok(colocate("check", "dist/", cwd=repo))
    assert "0 errors, 0 warnings" in out, out


def test_capacity_shows_the_new_pool(cluster):
    _variant, repo = cluster
    out = _ok(colocate("capacity", "dist/", cwd=repo))
    rows = [line.split() for line in out.splitlines()]
    assert {row[1] for row in rows if row and row[0] == NEW_POOL} == {"cpu", "memory", "nvidia.com/gpu"}, out
    assert any(row and row[0].startswith(f"{NEW_TRAINING}/") for row in rows), out  # its quota, renamed
    assert not any(row and row[0].startswith(f"{OLD_TRAINING}/") for row in rows), out


def test_diff_against_the_commit_is_empty(cluster):
    _variant, repo = cluster
    out = _ok(colocate("diff", "HEAD", cwd=repo))
    assert "0 objects differ" in out and "no change to any object" in out, out


def test_diff_against_the_minimal_example_reports_the_change(cluster):
    """Each revision's dist/ is checked against its own colocate.yaml: both check clean, so the
    change introduces and resolves no finding (against the new names the old tree broke rules)."""
    _variant, repo = cluster
    for revisions in (["HEAD~1"], ["HEAD~1", "HEAD"]):
        out = _ok(colocate("diff", *revisions, cwd=repo))
        lines = [line.split() for line in out.splitlines()]
        assert ["added", "NodePool", NEW_POOL] in [line[:3] for line in lines], out
        assert ["added", "Namespace", NEW_TRAINING] in [line[:3] for line in lines], out
        assert ["removed", "Namespace", OLD_TRAINING] in [line[:3] for line in lines], out
        assert f"removed TFJob {OLD_TRAINING}/mnist-example" in out, out  # dangerous: the job stops
        assert "policy: 0 findings introduced, 0 resolved" in out.splitlines()[0], out


def test_a_base_colocate_yaml_the_package_cannot_read_falls_back_with_a_warning(tmp_path):
    """An older revision's colocate.yaml that no longer loads does not stop the diff: its dist/ is
    checked against the working tree's file, and the warning names the revision and the key."""
    git(tmp_path, "init", "-q")
    _ok(colocate("init", "--example", "minimal", cwd=tmp_path))
    _ok(colocate("synth", cwd=tmp_path))
    good = (tmp_path / "colocate.yaml").read_text()
    (tmp_path / "colocate.yaml").write_text(good.replace("  pools:\n", "  pools: 5\n  old:\n", 1))
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "a colocate.yaml of another version")
    (tmp_path / "colocate.yaml").write_text(good)
    proc = colocate("diff", "HEAD", cwd=tmp_path)
    out = _ok(proc)
    assert "policy: 0 findings introduced, 0 resolved" in out.splitlines()[0], out
    head = git(tmp_path, "rev-parse", "HEAD")[:12]
    assert f"colocate: warning: colocate.yaml at {head}:" in proc.stderr, proc.stderr
    assert "$.cluster.pools" in proc.stderr and "working tree's colocate.yaml" in proc.stderr, proc.stderr


@pytest.mark.parametrize("cluster", ["renamed"], indirect=True)
def test_celcosts_large_objects_use_the_measured_clusters_names(cluster):
    """The admission cost measurement (tests/simulate/test_admission.py) builds its large objects in
    the names of the cluster it measures: valid ones pass its rules, broken ones break them."""
    from colocate.simulate import celcost

    _variant, repo = cluster
    config = yaml_load((repo / "colocate.yaml").read_text())
    tiers = {t["role"]: t["name"] for t in config["cluster"]["tiers"]}
    _policies, objects, _namespaces = celcost.reference_cases(repo / "dist", repo / "colocate.yaml")
    large = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): json.dumps(o) for o in objects
             if (o.get("metadata") or {}).get("name") in ("large", "large-broken")}  # a fixture may have none
    online = config["cluster"]["namespaces"]["online"]
    assert sorted(large) == sorted((kind, ns, name) for name in ("large", "large-broken") for kind, ns in (
        ("TFJob", NEW_TRAINING), ("Deployment", NEW_TRAINING), ("Deployment", online)))
    host = config["registry"]["host"]
    for (kind, ns, name), text in large.items():
        broken = name == "large-broken"
        assert (f'"{host}/' in text) != broken and ('"ghcr.io/' in text) == broken, (kind, ns, name)
        expected = tiers["online"] if broken or ns == online else tiers["offline"]
        assert f'"priorityClassName": "{expected}"' in text, (kind, ns, name)
