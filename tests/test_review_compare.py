"""colocate.review on synthesized objects: the comparison, the dangers, the Markdown limits."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from colocate import ROOT, app, config as config_mod
from colocate.checker import manifests
from colocate.synth import write as render
from colocate.review import usage as capacity, compare, danger, formats, tree
from colocate.review.diff import Review, compare_trees, configured_tiers
from tests.helpers import yaml_load

DIST = ROOT / "dist"
GITHUB_COMMENT_LIMIT = 65_536


def _obj(rel: str) -> dict:
    return yaml_load((DIST / rel).read_text())


def _entry(rel: str, obj: dict | None = None) -> tree.Entry:
    obj = obj if obj is not None else _obj(rel)
    meta = obj["metadata"]
    key = tree.Key(obj["apiVersion"].rpartition("/")[0], obj["kind"], meta.get("namespace", ""), meta["name"])
    return tree.Entry(key, rel, "app", obj)


DEPLOYMENT = "apps/online/deployment.online.recsys-inference.yaml"
PVC = "apps/training/persistentvolumeclaim.training.recsys-train-checkpoints.yaml"


def test_equal_quantities_and_key_order_are_no_change():
    old = _obj(DEPLOYMENT)
    new = copy.deepcopy(old)
    resources = new["spec"]["template"]["spec"]["containers"][0]["resources"]
    resources["limits"] = {"nvidia.com/gpu": 1, "memory": "8192Mi", "cpu": "4000m"}
    new["spec"] = dict(reversed(list(new["spec"].items())))
    assert compare.diff(old, new) == []


def test_quantity_spelling_outside_resources_is_a_change():
    old = _obj(DEPLOYMENT)
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["size"] = "1000m"
    old["metadata"]["labels"]["size"] = "1"
    assert compare.diff(old, new) == [compare.FieldChange("metadata.labels.size", "1", "1000m")]


def test_named_items_are_matched_by_name_not_index():
    old = _obj(DEPLOYMENT)
    new = copy.deepcopy(old)
    containers = new["spec"]["template"]["spec"]["containers"]
    sidecar = {"name": "sidecar", "image": "harbor.example.com/x:1"}
    containers.insert(0, sidecar)
    containers[1]["env"] = [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]
    old["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    changes = compare.diff(old, new)
    base = "spec.template.spec.containers"
    assert changes == [compare.FieldChange(f"{base}[name=recsys-inference].env[name=B]", None, {"name": "B", "value": "2"}),
                       compare.FieldChange(f"{base}[name=sidecar]", None, sidecar)]


def test_dangers_of_immutable_fields_priority_taints_and_pools():
    old = _entry(DEPLOYMENT)
    obj = copy.deepcopy(old.obj)
    obj["spec"]["selector"]["matchLabels"]["extra"] = "x"
    pod = obj["spec"]["template"]["spec"]
    pod["tolerations"] = []
    # online or mixed -> mixed only
    pod["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "colocate.io/pool", "operator": "In", "values": ["mixed"]}]}]}}}
    new = _entry(DEPLOYMENT, obj)
    ranks = {d.rank: d.reason for d in danger.changed(old, new, compare.diff(old.obj, new.obj))}
    assert set(ranks) == {danger.RECREATE, danger.TAINT, danger.POOL_MOVE}
    assert ranks[danger.RECREATE].startswith("spec.selector is immutable")
    assert ranks[danger.POOL_MOVE] == "pods move between pools: mixed, online -> mixed"

    pc = _entry("apps/platform/priorityclass.offline-batch.yaml")
    raised = _entry(pc.file, {**pc.obj, "value": 2_000_000})
    reasons = danger.changed(pc, raised, compare.diff(pc.obj, raised.obj))
    assert [d.rank for d in reasons] == [danger.RECREATE, danger.PRIORITY]


def test_an_edited_tfjob_says_the_operator_keeps_its_pods_and_how_to_apply_it():
    """training-operator v1.7.0 creates a replica's pod from the template once and never updates it
    (pkg/controller.v1/common/pod.go ReconcilePods): an edited job file changes nothing running."""
    old = _entry("apps/training/tfjob.training.tf-mnist-dist.yaml")
    for change in ("image", "replicas"):
        obj = copy.deepcopy(old.obj)
        worker = obj["spec"]["tfReplicaSpecs"]["Worker"]
        if change == "image":
            worker["template"]["spec"]["containers"][0]["image"] = "harbor.example.com/ml/tf-mnist:2.12.0"
        else:
            worker["replicas"] = 5
        new = _entry(old.file, obj)
        (reason,) = danger.changed(old, new, compare.diff(old.obj, new.obj))
        assert reason.rank == danger.RECREATE, change
        assert "never updates a TFJob's pods" in reason.reason
        assert "kubectl -n training delete tfjob tf-mnist-dist" in reason.reason and "tf-mnist-dist-checkpoints" in reason.reason
    # runPolicy is read at every reconcile: a new backoffLimit or deadline applies as it is.
    obj = copy.deepcopy(old.obj)
    obj["spec"]["runPolicy"]["backoffLimit"] = 7
    assert danger.changed(old, _entry(old.file, obj), compare.diff(old.obj, obj)) == []


def test_a_claim_may_grow_but_not_shrink():
    old = _entry(PVC)
    size = old.obj["spec"]["resources"]["requests"]["storage"]
    for new_size, dangerous in (("100Gi", False), ("1Gi", True), (size.replace("Gi", "") + "Gi", False)):
        obj = copy.deepcopy(old.obj)
        obj["spec"]["resources"]["requests"]["storage"] = new_size
        new = _entry(PVC, obj)
        assert bool(danger.changed(old, new, compare.diff(old.obj, new.obj))) == dangerous, new_size


def test_namespace_deletion_says_argo_keeps_it():
    (reason,) = danger.removed(_entry("apps/platform/namespace.training.yaml"))
    assert reason.rank == danger.DATA_LOSS and "Prune=false" in reason.reason


def test_removing_a_tier_priority_class_is_dangerous_whatever_its_label():
    tiers = configured_tiers()
    for name in ("online-high", "offline-batch", "prepull-idle"):
        entry = _entry(f"apps/platform/priorityclass.{name}.yaml")
        del entry.obj["metadata"]["labels"]["colocate.io/tier"]
        (reason,) = danger.removed(entry, tiers)
        assert reason.rank == danger.PRIORITY and "Priority admission plugin" in reason.reason, name
    pc = _entry("apps/platform/priorityclass.online-high.yaml")
    other = _entry(pc.file, {**pc.obj, "metadata": {"name": "team-x"}})
    assert danger.removed(other, tiers) == []


def _jobs(folder: Path, image: str, size: str, config: config_mod.Config) -> Path:
    folder.mkdir()
    for i in range(100):
        (folder / f"bulk-{i:03}.yaml").write_text(yaml.safe_dump({
            "name": f"bulk-{i:03}", "image": f"{config.registry_host}/ml/{image}", "checkpointSize": size,
            "roles": {"Worker": {"replicas": 2, "cpu": 1, "cpuLimit": 2, "memory": "2Gi", "memoryLimit": "4Gi"}}}))
    return folder


def test_markdown_of_200_changed_objects_fits_a_comment_and_names_every_application(tmp_path):
    # Head: every job's image and (smaller) claim size change, and so do the registry mirror and
    # the revision Argo CD follows, which touches every Application.
    head_config = tmp_path / "colocate.yaml"
    head_config.write_text((ROOT / "colocate.yaml").read_text().replace("host: harbor.example.com", "host: mirror.example.org")
                           .replace("targetRevision: main", "targetRevision: v2026.12.1"))
    trees = {}
    for side, image, size, config in (("base", "bulk:1.0.0", "20Gi", config_mod.load()),
                                      ("head", "bulk-with-a-much-longer-name:2.0.0", "10Gi", config_mod.load(head_config))):
        files = app.render_files(app.build(config, jobs_dir=_jobs(tmp_path / f"jobs-{side}", image, size, config)))
        render.write_tree(files, tmp_path / side)
        trees[side] = tree.load(side, tmp_path / side)
    changes = compare_trees(trees["base"], trees["head"])
    assert sum(c.status == "changed" for c in changes) >= 200

    md = formats.to_markdown(Review("base", "head", tuple(changes)))

    assert len(md) < GITHUB_COMMENT_LIMIT
    # Every Application whose folder differs, from the manifests themselves and dist/index.yaml
    # (the review compares objects; the nodes' containerd TOML is not one).
    differing = render.compare_tree(render.read_tree(tmp_path / "head"), tmp_path / "base")
    folders = yaml_load((tmp_path / "head" / "index.yaml").read_text())["folders"]
    touched = {folders[p.rpartition("/")[0]].get("argocdApplication", f"dist/{p.rpartition('/')[0]}")
               for p in differing.modified if p != "index.yaml" and p.endswith(".yaml")}
    table = md.split("#### ")[0]
    assert len(touched) > 3 and touched == set(re.findall(r"^\| ([\w/-]+) \| \d", table, flags=re.M))
    assert "PersistentVolumeClaim training/bulk-000-checkpoints" in md  # shrinking claims are dangerous
    assert md.count("<details>") == md.count("</details>")

    # Past the limit, details stop at an object boundary; the summary stays whole.
    small = formats.to_markdown(Review("base", "head", tuple(changes)), limit=15_000)
    assert len(small) < 15_000 and small.split("#### ")[0] == table
    shown = re.findall(r"^- \*\*changed\*\* `[^`]+` \(`", small, flags=re.M)
    assert f"_{len(changes) - len(shown)} more objects not shown" in small
    assert small.count("<details>") == small.count("</details>")


def test_node_files_say_they_need_a_rejoin_and_taints_are_flagged():
    rel = "nodes/mixed/joinconfiguration.yaml"
    obj = yaml_load((DIST / rel).read_text())
    old = tree.Entry(tree.Key("kubeadm.k8s.io", obj["kind"], "", rel), rel, "dist/nodes/mixed", obj)
    tainted = copy.deepcopy(obj)
    tainted["nodeRegistration"]["taints"] = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    new = tree.Entry(old.key, rel, old.app, tainted)
    reasons = danger.changed(old, new, compare.diff(old.obj, new.obj))
    assert [d.rank for d in reasons] == [danger.TAINT, danger.NODES]
    assert "nodeRegistration.taints" in reasons[0].reason and "re-join" in reasons[1].reason



@pytest.mark.parametrize(("api_version", "kind"), [("kubeadm.k8s.io/v1beta3", "ClusterConfiguration"),
                                                   ("kubeproxy.config.k8s.io/v1alpha1", "KubeProxyConfiguration")])
def test_control_plane_config_files_say_where_the_live_copy_is(api_version, kind):
    rel = "control-plane/kubeadm.yaml"
    obj = {"apiVersion": api_version, "kind": kind, "clusterName": "a"}
    old = tree.Entry(tree.Key(api_version.split("/")[0], kind, "", rel), rel, "control-plane", obj)
    new = tree.Entry(old.key, rel, old.app, {**obj, "clusterName": "b"})
    (reason,) = danger.changed(old, new, compare.diff(old.obj, new.obj))
    assert reason.rank == danger.NODES and "kubeadm-config" in reason.reason and "re-join" not in reason.reason

def test_a_pod_larger_than_any_node_of_its_pool_is_unfit():
    pools = capacity.reference_pools()
    docs = capacity.api_objects(DIST)
    assert capacity.unfit(docs, pools) == []
    job = next(d for d in docs if d.kind == "TFJob" and d.name == "recsys-train")
    big = copy.deepcopy(job.obj)
    worker = big["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]
    worker["requests"]["nvidia.com/gpu"] = worker["limits"]["nvidia.com/gpu"] = 3  # mixed nodes have 2
    docs = [d if d is not job else manifests.Doc(d.file, d.line, big) for d in docs]
    (u,) = capacity.unfit(docs, pools)
    assert (u.object, u.role, u.pool, u.request.gpus, u.node.gpus) == ("TFJob/training/recsys-train", "Worker", "mixed", 3, 2)
    text = formats.to_text(Review("a", "b", (), unfit=(u,)))
    assert "DANGEROUS\n  ! TFJob/training/recsys-train Worker pods request" in text and "they never schedule" in text
