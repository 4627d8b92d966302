"""`colocate capacity` and `colocate check` count a namespace's quota with one model
(colocate/model/resource_quota.py, kueue_admission.py): on any tree, the quotas capacity shows
over their hard limit are the ones rule COL051 reports."""
from __future__ import annotations

import shutil

import yaml
from hypothesis import HealthCheck, example, given, settings, strategies as st

from colocate import checker
from colocate.review import queue, quota, usage
from tests.helpers import ROOT

_NAMESPACES = ("online", "training")
_KEYS = ("cpu", "requests.cpu", "limits.memory", "requests.nvidia.com/gpu", "pods", "persistentvolumeclaims",
         "requests.storage", "count/deployments.apps")


def _container(cpu: int, gpus: int) -> dict:
    resources = {"cpu": f"{cpu}00m", "memory": f"{cpu}Gi", **({"nvidia.com/gpu": gpus} if gpus else {})}
    return {"name": "app", "image": "harbor.example.com/app:1.0.0", "resources": {"requests": resources, "limits": resources}}


def _deployment(i: int, ns: str, replicas: int, cpu: int, gpus: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"web-{i}", "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": f"web-{i}"}},
                     "template": {"metadata": {"labels": {"app": f"web-{i}"}},
                                  "spec": {"containers": [_container(cpu, gpus)]}}}}


def _daemonset(ns: str, cpu: int) -> dict:
    # Tolerates every taint: one pod per node of every pool (the pools' own placement decides).
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"tolerations": [{"operator": "Exists"}], "containers": [_container(cpu, 0)]}}}}


def _tfjob(i: int, workers: int, gpus: int, queued: bool) -> dict:
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": f"train-{i}", "namespace": "training",
                         **({"labels": {"kueue.x-k8s.io/queue-name": "training"}} if queued else {})},
            "spec": {"tfReplicaSpecs": {
                "PS": {"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [_container(3, 0)]}}},
                "Worker": {"replicas": workers, "restartPolicy": "OnFailure",
                           "template": {"spec": {"containers": [_container(2, gpus)]}}}}}}


def _claim(i: int, gib: int) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": f"claim-{i}", "namespace": "training"},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": f"{gib}Gi"}}}}


def _queues(cpu: str, gpus: int) -> list[dict]:
    return [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "training"},
             "spec": {"namespaceSelector": {}, "resourceGroups": [{
                 "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                 "flavors": [{"name": "mixed", "resources": [{"name": "cpu", "nominalQuota": cpu},
                                                             {"name": "memory", "nominalQuota": "800Gi"},
                                                             {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}]}]}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "training", "namespace": "training"},
             "spec": {"clusterQueue": "training"}}]


def _hard(key: str, n: int) -> str:
    return f"{n}Gi" if key in ("limits.memory", "requests.storage") else str(n)


@st.composite
def _trees(draw) -> list[dict]:
    docs: list[dict] = []
    for i in range(draw(st.integers(0, 3))):
        docs.append(_deployment(i, draw(st.sampled_from(_NAMESPACES)), draw(st.integers(0, 4)),
                                draw(st.integers(1, 20)), draw(st.integers(0, 1))))
    if draw(st.booleans()):
        docs.append(_daemonset(draw(st.sampled_from(_NAMESPACES)), draw(st.integers(1, 5))))
    for i in range(draw(st.integers(0, 4))):
        docs.append(_tfjob(i, draw(st.integers(1, 4)), draw(st.integers(0, 2)), draw(st.booleans())))
    docs += [_claim(i, draw(st.integers(1, 50))) for i in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        docs += _queues(draw(st.sampled_from(["500m", "1", "2", "200"])), draw(st.integers(0, 8)))
    for ns in _NAMESPACES:
        keys = draw(st.lists(st.sampled_from(_KEYS), unique=True, max_size=4))
        if keys:
            docs.append({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": f"{ns}-quota", "namespace": ns},
                         "spec": {"hard": {k: _hard(k, draw(st.integers(0, 12))) for k in keys}}})
    return docs


#: Two queued jobs of 700m each (a PS and two Workers) and a queue of one CPU: Kueue admits one,
#: and the namespace's pods then ask 700m of the quota's one CPU (a job's ask sums its replica types).
_TWO_JOBS_ONE_CPU = [_tfjob(0, 2, 0, True), _tfjob(1, 2, 0, True), *_queues("1", 0),
                     {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "training-quota", "namespace": "training"},
                      "spec": {"hard": {"requests.cpu": "1"}}}]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=_trees())
@example(tree=_TWO_JOBS_ONE_CPU)
def test_capacity_and_check_report_the_same_quotas_over_their_limits(tmp_path_factory, tree):
    folder = tmp_path_factory.mktemp("tree")
    shutil.copytree(ROOT / "dist" / "nodes", folder / "nodes")  # both judge against the tree's own pools
    (folder / "all.yaml").write_text(yaml.safe_dump_all(tree, sort_keys=False))

    found = checker.check([folder]).findings
    by_check = {(f.namespace, f.name, f.field.removeprefix("spec.hard[").removesuffix("]"))
                for f in found if f.rule == "COL051"}
    docs = usage.api_objects(folder)
    pools = usage.described_pools(folder)
    assert pools, "the copied dist/nodes/ describes the pools"
    running = queue.admitted_only(docs, queue.queues(docs))
    by_capacity = {(u.namespace, u.quota, u.resource) for u in quota.uses(running, pools) if u.over}
    assert by_check == by_capacity
