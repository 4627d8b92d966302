"""Simulated nodes: one Node per node of each pool described in ``dist/nodes/<pool>/``, with the
pool's labels, taints, capacity and allocatable, managed by kwok (which plays the kubelets)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from colocate.base import safe_yaml
from colocate.errors import InputError
from colocate.base.layout import nodepool_path
from colocate.model.names import HOSTNAME_LABEL
from colocate.model.pool_facts import API_VERSION, KIND, PoolFacts, from_documents, resource_list
from colocate.base.data_files import display

#: kwok manages the nodes that carry this label (kwok v0.5.2 --manage-nodes-with-label-selector). A
#: label, not an annotation: its watch is filtered by the API server, so removing the label reaches
#: kwok as the node's deletion and it stops the node's lease and pods (pkg/kwok/controllers/
#: node_controller.go watchResources, informer.Deleted -> onNodeUnmanaged): the node goes silent.
KWOK_LABEL = ("kwok.x-k8s.io/node", "fake")
#: What a real kubelet reports besides the pool's resources: its pod limit (KubeletConfiguration maxPods).
MAX_PODS = "110"


def read_pools(dist: Path) -> tuple[PoolFacts, ...]:
    """The pools described in ``dist/nodes/<pool>/nodepool.<pool>.yaml``, read as ``check`` reads
    them (pool_facts); bad input when there is none or one lacks what a Node needs."""
    files = sorted(dist.glob(nodepool_path("*")))
    if not files:
        raise InputError(display(dist), "nodes/", f"no node pool descriptions ({nodepool_path('<pool>')}); "
                         "`colocate synth` writes them")
    docs = []
    for file in files:
        doc = safe_yaml.load(file.read_text())
        if not isinstance(doc, dict) or doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
            raise InputError(display(file), "", f"not a {API_VERSION} {KIND}")
        if "capacity" not in (doc.get("spec") or {}):
            raise InputError(display(file), "spec.capacity", "missing: the simulation needs the nodes' capacity; "
                             "re-run `colocate synth` (synth writes it since release 2026.12)")
        docs.append((display(file), doc))
    return from_documents(docs)


def node_objects(pool: PoolFacts, count: int) -> list[dict[str, Any]]:
    """``count`` nodes of the pool (the pool's own number, or what a scenario makes of it)."""
    return [node_object(pool, f"{pool.name}-{i}") for i in range(count)]


def node_object(pool: PoolFacts, name: str) -> dict[str, Any]:
    key, value = KWOK_LABEL
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {**pool.labels, HOSTNAME_LABEL: name, key: value}},
        "spec": {"taints": [t.to_kube() for t in pool.taints]},
        "status": {"capacity": {**resource_list(pool.capacity), "pods": MAX_PODS},
                   "allocatable": {**resource_list(pool.allocatable), "pods": MAX_PODS}},
    }
