"""Pod templates: their containers, what one pod of a spec requests (what the scheduler reserves)
and how many pods of a workload run at once. ``colocate capacity`` and ``diff`` (colocate/review/), the capacity
checks (policies/checks/capacity.py) and the simulation's observer all count with it."""
from __future__ import annotations

from typing import Any, Iterator, Protocol

from colocate.model import quantity
from colocate.model.names import GPU, KUBEFLOW_REPLICA_SPECS, TFJOB_GROUP
from colocate.model.objects import ObjectView
from colocate.model.pools import Resources

ZERO = Resources(0, 0, 0)


class PodTemplate(Protocol):
    """A pod template inside an object (colocate.checker.manifests.PodSpec is one)."""

    doc: ObjectView
    #: Its key in a Kubeflow training job's replica specs (``tfReplicaSpecs``...); empty for other workloads.
    replica_key: str
    #: The TFJob replica type (``Chief``, ``Worker``, ``PS``...); empty for other workloads.
    role: str
    #: Its dotted field path in the object, and the pod spec there.
    path: str
    spec: dict[str, Any]


#: The container lists of a pod spec: init and regular containers, which run and request
#: resources; with the ephemeral ones, every container Pod Security and the API server's
#: validation visit, in their order.
RUNNING = ("initContainers", "containers")
ALL = (*RUNNING, "ephemeralContainers")


def containers(pod: PodTemplate, lists: tuple[str, ...] = RUNNING) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, container) for every container in ``lists``; a list or container of the wrong
    shape is skipped (the schema check reports it)."""
    for key in lists:
        items = pod.spec.get(key)
        for i, container in enumerate(items if isinstance(items, list) else []):
            if isinstance(container, dict):
                yield f"{pod.path}.{key}[{i}]", container


def _container(container: dict, which: str) -> Resources:
    # A field of the wrong shape counts as absent here: kubeconform reports it (SCHEMA), and a
    # rule that sums a namespace's pods must not stop on one malformed container.
    resources = _mapping(_mapping(container).get("resources"))
    values = dict(_mapping(resources.get("limits")))
    if which == "requests":
        values.update(_mapping(resources.get("requests")))
    return Resources(quantity.millicores(values.get("cpu", 0)), quantity.to_bytes(values.get("memory", 0)),
                     int(quantity.parse(values.get(GPU, 0))))


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def pod_resources(spec: dict, which: str = "requests") -> Resources:
    """What one pod of this spec requests (what the scheduler reserves), or its limits."""
    total = ZERO
    for container in _list(spec.get("containers")):
        total += _container(container, which)
    for init in _list(spec.get("initContainers")):
        r = _container(init, which)
        total = Resources(max(total.cpu_milli, r.cpu_milli), max(total.memory_bytes, r.memory_bytes), max(total.gpus, r.gpus))
    return total


def replicas(pod: PodTemplate, nodes: int) -> int:
    """How many pods of this spec run at once; ``nodes``: how many nodes a DaemonSet covers. A
    count the API server refuses is refused before counting (review/quantities.py, rule COL410);
    here it counts as the default."""
    doc = pod.doc
    spec = doc.obj.get("spec") or {}
    if doc.kind in KUBEFLOW_REPLICA_SPECS and pod.replica_key:
        replica = _mapping(_mapping(spec.get(KUBEFLOW_REPLICA_SPECS[doc.kind])).get(pod.replica_key))
        return _count(replica.get("replicas"), 1)
    if doc.kind == "DaemonSet":
        return nodes
    if doc.kind == "Job":
        return _count(spec.get("parallelism"), 1)
    if doc.kind == "CronJob":
        return 0
    return _count(spec.get("replicas"), 1) if doc.kind != "Pod" else 1


def _count(value, default: int) -> int:
    if isinstance(value, float) and value.is_integer():  # go-yaml and the schema take 3.0 for 3
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX else default


#: The API's replica counts are int32 (k8s.io/api v0.28.15; training-operator v1.7.0 ReplicaSpec
#: ``Replicas *int32``) and must not be negative (ValidateNonnegativeField).
INT32_MAX = 2**31 - 1
_COUNTS = {
    "Deployment": (("spec", "replicas"),), "StatefulSet": (("spec", "replicas"),),
    "ReplicaSet": (("spec", "replicas"),), "ReplicationController": (("spec", "replicas"),),
    "Job": (("spec", "parallelism"), ("spec", "completions")),
    "CronJob": (("spec", "jobTemplate", "spec", "parallelism"), ("spec", "jobTemplate", "spec", "completions")),
}


def replica_counts(doc: ObjectView) -> Iterator[tuple[str, Any]]:
    """(field path, value) of every replica count of the object (None where it is absent)."""
    for keys in _COUNTS.get(doc.kind, ()):
        value: Any = doc.obj
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        yield ".".join(keys), value
    field = KUBEFLOW_REPLICA_SPECS.get(doc.kind) if doc.group == TFJOB_GROUP else None
    replicas = (doc.obj.get("spec") or {}).get(field) if field and isinstance(doc.obj.get("spec"), dict) else None
    for key, replica in (replicas.items() if isinstance(replicas, dict) else ()):
        if isinstance(replica, dict):
            yield f"spec.{field}.{key}.replicas", replica.get("replicas")
