"""Simulated nodes: one Node per node of each pool described in ``dist/nodes/<pool>/``, with the
pool's labels, taints, capacity and allocatable, managed by kwok (which plays the kubelets)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from colocate.errors import InputError
from colocate.model.names import HOSTNAME_LABEL
from colocate.model.pool_facts import API_VERSION, KIND, node_labels
from colocate.resources import display

#: kwok manages the nodes that carry this annotation (kwok v0.5.2 --manage-nodes-with-annotation-selector).
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
#: What a real kubelet reports besides the pool's resources: its pod limit (KubeletConfiguration maxPods).
MAX_PODS = "110"


@dataclass(frozen=True)
class SimPool:
    name: str
    nodes: int
    capacity: Mapping[str, str]
    allocatable: Mapping[str, str]
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]


def read_pools(dist: Path) -> list[SimPool]:
    """The pools described in ``dist/nodes/*/nodepool.*.yaml``; bad input when there is none or
    one lacks what a Node needs."""
    files = sorted((dist / "nodes").glob("*/nodepool.*.yaml"))
    if not files:
        raise InputError(display(dist), "nodes/", "no node pool descriptions (nodes/<pool>/nodepool.<pool>.yaml); "
                         "`colocate synth` writes them")
    pools = []
    for file in files:
        doc = yaml.safe_load(file.read_text()) or {}
        if doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
            raise InputError(display(file), "", f"not a {API_VERSION} {KIND}")
        spec = doc.get("spec") or {}
        if "capacity" not in spec:
            raise InputError(display(file), "spec.capacity", "missing: the simulation needs the nodes' capacity; "
                             "re-run `colocate synth` (synth writes it since release 2026.12)")
        pools.append(SimPool(name=doc["metadata"]["name"], nodes=int(spec["nodes"]),
                             capacity=spec["capacity"], allocatable=spec["allocatable"],
                             labels=node_labels(spec.get("labels") or {}), taints=tuple(spec.get("taints") or ())))
    return pools


def node_objects(pool: SimPool, count: int) -> list[dict[str, Any]]:
    """``count`` nodes of the pool (the pool's own number, or what a scenario makes of it)."""
    return [node_object(pool, f"{pool.name}-{i}") for i in range(count)]


def node_object(pool: SimPool, name: str) -> dict[str, Any]:
    key, value = KWOK_ANNOTATION
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {key: value},
                     "labels": {**pool.labels, HOSTNAME_LABEL: name}},
        "spec": {"taints": [dict(t) for t in pool.taints]},
        "status": {"capacity": {**pool.capacity, "pods": MAX_PODS},
                   "allocatable": {**pool.allocatable, "pods": MAX_PODS}},
    }
