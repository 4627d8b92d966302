"""`colocate capacity` on the reference dist/: its sums against the requests in dist/."""
from __future__ import annotations

import json
import shutil
from collections import defaultdict
from decimal import Decimal

import pytest
import yaml

from colocate import ROOT, config as config_mod
from colocate.model import quantity
from colocate.review import usage as capacity
from pathlib import Path
from tests.helpers import colocate, git, yaml_load

DIST = ROOT / "dist"


def _requests(spec: dict) -> tuple[Decimal, Decimal, Decimal]:
    """One pod: containers summed, the largest init container when larger (requests, else limits)."""
    def one(c):
        res = c.get("resources") or {}
        req = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return tuple(quantity.parse(req.get(k, 0)) for k in ("cpu", "memory", "nvidia.com/gpu"))
    total = [sum(one(c)[i] for c in spec["containers"]) for i in range(3)]
    for c in spec.get("initContainers") or []:
        total = [max(total[i], one(c)[i]) for i in range(3)]
    return tuple(total)


#: The label generated pods select their pool by (written out: the test reads what synth wrote).
POOL_KEY = "node-restriction.kubernetes.io/colocate-pool"


def _pool(spec: dict) -> str:
    if POOL_KEY in (spec.get("nodeSelector") or {}):
        return spec["nodeSelector"][POOL_KEY]
    affinity = spec["affinity"]["nodeAffinity"]
    (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (expr,) = [e for e in term["matchExpressions"] if e["key"] == POOL_KEY]
    if len(expr["values"]) > 1:
        # Several pools: the request counts where the pod goes first, its one preferred pool.
        (preferred,) = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
        (expr,) = preferred["preference"]["matchExpressions"]
    (pool,) = expr["values"]
    return pool


def test_capacity_sums_match_the_requests_in_dist(tmp_path):
    """Our folders, summed here by hand, against `colocate capacity` on a copy of dist/ without the
    rendered charts (whose DaemonSets span pools: test_a_daemonset_counts_on_every_pool_it_admits)."""
    index = yaml_load((DIST / "index.yaml").read_text())
    rendered = {folder.split("/", 1)[1] for folder, entry in index["folders"].items() if "rendered" in entry}
    assert rendered
    ours = tmp_path / "dist"
    shutil.copytree(DIST, ours, ignore=lambda folder, names: [n for n in names if Path(folder) == DIST / "apps"
                                                              and n in rendered])
    nodes = {p.name: p.nodes for p in config_mod.load().cluster.pools}
    want: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0)] * 3)
    per_namespace: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0)] * 3)
    claims: dict[str, int] = defaultdict(int)
    for path in sorted(ours.glob("apps/*/*.yaml")):
        obj = yaml_load(path.read_text())
        pods = []  # (spec, count)
        if obj["kind"] == "TFJob":
            pods = [(r["template"]["spec"], r.get("replicas", 1)) for r in obj["spec"]["tfReplicaSpecs"].values()]
        elif obj["kind"] in ("Deployment", "StatefulSet"):
            pods = [(obj["spec"]["template"]["spec"], obj["spec"].get("replicas", 1))]
        elif obj["kind"] == "DaemonSet":
            spec = obj["spec"]["template"]["spec"]
            pods = [(spec, nodes[_pool(spec)])]
        elif obj["kind"] == "PersistentVolumeClaim":
            claims[obj["metadata"]["namespace"]] += 1
        for spec, count in pods:
            for i, value in enumerate(_requests(spec)):
                want[_pool(spec)][i] += count * value
                per_namespace[obj["metadata"]["namespace"]][i] += count * value
    assert want, "no workloads found in dist/"

    proc = colocate("capacity", str(ours), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    got = {(r["pool"], r["resource"]): r["total"] for r in json.loads(proc.stdout)["rows"]}
    for pool, (cpu, memory, gpus) in want.items():
        assert got[(pool, "cpu")] == cpu * 1000 and got[(pool, "memory")] == memory
        assert got[(pool, "nvidia.com/gpu")] == gpus
    assert {p for p, _ in got} == set(nodes), "a row per pool, even an empty one"

    used = {(q["namespace"], q["resource"]): q["used"] for q in json.loads(proc.stdout)["quotas"]}
    assert {ns for ns, _ in used} == {"online", "training"}
    for ns in ("online", "training"):
        cpu, memory, gpus = per_namespace[ns]
        assert used[(ns, "requests.cpu")] == cpu * 1000 and used[(ns, "requests.memory")] == memory
        assert used[(ns, "requests.nvidia.com/gpu")] == gpus
    assert used[("training", "persistentvolumeclaims")] == claims["training"] == 3


def test_a_daemonset_counts_on_every_pool_it_admits():
    """node-exporter tolerates every taint and selects no pool: one pod on every node of every pool;
    the DCGM exporter only on the pools with GPUs (its required affinity)."""
    pools = capacity.reference_pools()
    docs = capacity.api_objects(DIST)
    exporter = [d for d in docs if d.kind == "DaemonSet" and d.name == "kube-prometheus-stack-prometheus-node-exporter"]
    dcgm = [d for d in docs if d.kind == "DaemonSet" and d.name == "dcgm-exporter"]
    assert exporter and dcgm
    one = capacity.usage(exporter, pools)
    assert set(one.requests) == {p.name for p in pools}
    for pool in pools:
        assert one.requests[pool.name]["platform"].cpu_milli == 102 * pool.nodes, pool.name
    gpu = capacity.usage(dcgm, pools)
    assert set(gpu.requests) == {p.name for p in pools if p.allocatable.gpus}


def test_capacity_text_is_a_table_per_pool_and_resource():
    proc = colocate("capacity")
    assert proc.returncode == 0, proc.stderr
    pools, quotas, queues = proc.stdout.split("\n\n")
    lines = pools.splitlines()
    # platform: the resubmitter's pods (system-cluster-critical, on the monitoring pool)
    assert lines[0].split() == ["pool", "resource", "background", "offline", "online", "platform", "requested",
                                "allocatable", "used"]
    assert len(lines) == 1 + 3 * len(config_mod.load().cluster.pools)
    mixed_gpu = next(row.split() for row in lines if row.startswith("mixed") and "nvidia.com/gpu" in row)
    # 4 recsys-train Workers + the tf-mnist-dist Chief and 3 Workers (all-reduce: one GPU each) of the 6x2 GPUs
    assert mixed_gpu[-3:] == ["8", "12", "67%"]
    assert quotas.splitlines()[0].split() == ["quota", "resource", "used", "hard", "share"]
    assert "training/training-quota  persistentvolumeclaims   3      100" in quotas
    # The reference's three jobs all start the first night: nothing waits in the queue; the night
    # (22:00 to the 07:50 pause) gives the 12 GPUs of the quota 12 x 9 h 50 min = 118 GPU-hours.
    assert queues.splitlines()[1].split() == ["training", "3", "3", "0", "8", "12", "0", "118", "-"], queues


def test_capacity_of_a_missing_folder_is_exit_2():
    proc = colocate("capacity", "no-such-dist")
    assert proc.returncode == 2 and "no-such-dist: no such folder" in proc.stderr


def _deployment(cpu) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "online"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "x",
                                                           "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}}}


CPU_FIELD = "spec.template.spec.containers[0].resources.requests.cpu"


@pytest.mark.parametrize("text, says", [
    ("cpu: .nan", "nan is not a Kubernetes quantity"),
    ("cpu: .inf", "inf is not a Kubernetes quantity"),
    ("cpu: -.inf", "-inf is not a Kubernetes quantity"),
    ("cpu: [1]", "[1] is not a Kubernetes quantity"),
    ("cpu: {a: 1}", "{'a': 1} is not a Kubernetes quantity"),
    ("cpu: true", "True is not a Kubernetes quantity"),
    ('cpu: "\u0661\u0660"', "'\u0661\u0660' is not a Kubernetes quantity"),
    ('cpu: "NaN"', "'NaN' is not a Kubernetes quantity"),
    ('cpu: "-1"', "'-1' is negative"),
    ('cpu: "1e400"', "'1e400' is more than Kubernetes counts"),
    ('cpu: "1e999999"', "'1e999999' is more than Kubernetes counts"),
])
def test_an_unparseable_quantity_is_exit_2_naming_the_file_and_field(tmp_path, text, says):
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(_deployment("CPU")).replace("cpu: CPU", text))
    for fmt in ("text", "json"):
        proc = colocate("capacity", str(tmp_path), "--format", fmt)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert f"{tmp_path / 'web.yaml'}:{CPU_FIELD}: Deployment/online/web: {says}" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("text, says", [
    # hostile-3 R3-M3: each was counted as one replica, without a word.
    ("replicas: 1000000000000000000000000000000", "1e+30 is not a replica count from 0 to 2147483647"),
    ("replicas: 2147483648", "2147483648 is not a replica count from 0 to 2147483647"),
    ("replicas: -5", "-5 is not a replica count from 0 to 2147483647"),
    ('replicas: "three"', "'three' is not a replica count from 0 to 2147483647"),
    ("replicas: 1.5", "1.5 is not a replica count from 0 to 2147483647"),
    ("replicas: true", "True is not a replica count from 0 to 2147483647"),
])
def test_a_replica_count_the_api_server_refuses_is_exit_2_naming_the_field(tmp_path, text, says):
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(_deployment("1")).replace("replicas: 2", text))
    proc = colocate("capacity", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert f"{tmp_path / 'web.yaml'}:spec.replicas: Deployment/online/web: {says}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr


def test_replica_counts_the_api_server_takes_are_counted(tmp_path):
    """No count is the default of one; a whole number written as 3.0 is three (go-yaml and the
    schema take an integral float for an integer)."""
    for text, pods in (("replicas: null", 1), ("replicas: 3.0", 3), ("replicas: 0", 0)):
        (tmp_path / "web.yaml").write_text(yaml.safe_dump(_deployment("1")).replace("replicas: 2", text))
        proc = colocate("capacity", str(tmp_path), "--format", "json")
        assert proc.returncode in (0, 1), proc.stderr
        cpu = sum(r["total"] for r in json.loads(proc.stdout)["rows"] if r["resource"] == "cpu")
        assert cpu == 1000 * pods, (text, proc.stdout)


def test_an_unparseable_quota_hard_limit_is_exit_2_naming_the_field(tmp_path):
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "online"},
             "spec": {"hard": {"requests.memory": ".nan", "count/widgets": "5"}}}
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all([_deployment("1"), quota]))
    proc = colocate("capacity", str(tmp_path))
    assert proc.returncode == 2 and "all.yaml:spec.hard.requests.memory: ResourceQuota/online/q: '.nan'" in proc.stderr, \
        proc.stderr


def test_diff_names_the_revision_of_an_unparseable_quantity(tmp_path):
    repo = tmp_path / "repo"
    (repo / "dist").mkdir(parents=True)
    (repo / "dist" / "web.yaml").write_text(yaml.safe_dump(_deployment("1")))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "dist" / "web.yaml").write_text(yaml.safe_dump(_deployment([1])))
    git(repo, "commit", "-qam", "a list")
    proc = colocate("diff", "HEAD~1", "HEAD", "--no-policy", cwd=repo)
    assert proc.returncode == 2 and f"HEAD: dist/web.yaml:{CPU_FIELD}: Deployment/online/web: [1] is not" in proc.stderr, \
        proc.stderr


def test_a_relabelled_priority_class_moves_no_load_between_tiers(tmp_path):
    """colocate.yaml says which tier a PriorityClass serves: offline-batch relabelled online in dist/
    still counts the training as offline (hostile-3's relabel commit moved 47 CPU to online)."""
    dist = tmp_path / "dist"
    shutil.copytree(DIST, dist)
    path = dist / "apps/platform/priorityclass.offline-batch.yaml"
    doc = yaml_load(path.read_text())
    doc["metadata"]["labels"]["colocate.io/tier"] = "online"
    path.write_text(yaml.safe_dump(doc))
    pools = capacity.reference_pools()
    docs = capacity.api_objects(dist)
    by_label = capacity.usage(docs, pools).requests["mixed"]
    assert by_label["online"].cpu_milli > 0  # the label alone would move it
    configured = capacity.usage(docs, pools, capacity.reference_tiers()).requests["mixed"]
    assert "online" not in configured and configured["offline"].cpu_milli == by_label["online"].cpu_milli
    proc = colocate("capacity", str(dist), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (cpu,) = [r for r in json.loads(proc.stdout)["rows"] if (r["pool"], r["resource"]) == ("mixed", "cpu")]
    assert "online" not in cpu["byTier"] and cpu["byTier"]["offline"] == configured["offline"].cpu_milli, cpu
