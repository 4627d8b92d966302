"""What a scheduler decision needs to know about a node pool, as the checker reads it: from the
``NodePool`` descriptions synth writes to ``dist/nodes/<pool>/nodepool.<pool>.yaml`` (or any file of
them given with ``--cluster``), never from the generator. Plain data, no cdk8s."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from colocate.model import quantity
from colocate.errors import InputError
from colocate.base.layout import nodepool_path
from colocate.model.names import GPU, KUBELET_NODE_LABELS
from colocate.model.pools import POOL_FIELDS, NodePoolProps, Resources, Taint
from colocate.model.scheduling import node_selected

API_VERSION, KIND = "colocate.io/v1alpha1", "NodePool"


@dataclass(frozen=True)
class PoolFacts:
    name: str
    nodes: int
    #: Per node, after the kubelet's reservations and hard-eviction threshold.
    allocatable: Resources
    #: Every label its nodes carry (the pool label included).
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    static_cpu: bool
    #: Per node, before any reservation (the kubelet's capacity); None in a description without it.
    capacity: Resources | None = None

    @property
    def total(self) -> Resources:
        return self.allocatable.times(self.nodes)

    def admits(self, spec: Mapping[str, Any]) -> bool:
        """The pod's nodeSelector and required node affinity accept these nodes and its
        tolerations cover their NoSchedule/NoExecute taints (what the scheduler's filters check)."""
        tolerations = spec.get("tolerations") or []
        return node_selected(spec, self.labels) and all(
            tolerated(tolerations, t) for t in self.taints if t.effect != "PreferNoSchedule")


def tolerated(tolerations: Iterable[Mapping[str, Any]], taint: Taint) -> bool:
    """A toleration matches the taint (k8s.io/api core/v1 toleration.go ToleratesTaint): empty key
    with Exists matches everything; else same key, Exists or Equal with the same value, and an
    empty effect or the same effect."""
    for t in tolerations:
        if t.get("effect") not in (None, "", taint.effect):
            continue
        operator = t.get("operator") or "Equal"
        if not t.get("key") and operator == "Exists":
            return True
        if t.get("key") == taint.key and (operator == "Exists" or (t.get("value") or "") == taint.value):
            return True
    return False


def resource_list(r: Resources) -> dict[str, str]:
    """A Kubernetes ResourceList (``{"cpu": "31500m", "memory": ..., "nvidia.com/gpu": "2"}``)."""
    out = {"cpu": quantity.format_cpu(r.cpu_milli), "memory": quantity.format_bytes(r.memory_bytes)}
    if r.gpus:
        out[GPU] = str(r.gpus)
    return out


#: The NodePool spec keys describe() computes from several fields (PoolField.described names
#: them); every other described key carries its one field's value as it is.
DERIVED: Mapping[str, Callable[[NodePoolProps], Any]] = {
    "capacity": lambda pool: resource_list(pool.capacity),
    "allocatable": lambda pool: resource_list(pool.allocatable),
    "labels": lambda pool: node_labels(pool.node_labels),
    "taints": lambda pool: [t.to_kube() for t in pool.taints],
}


def describe(pool: NodePoolProps) -> dict[str, Any]:
    """The ``NodePool`` document synth writes for a pool, by POOL_FIELDS."""
    spec = {key: make(pool) for key, make in DERIVED.items()}
    spec.update({key: f.of(pool) for f in POOL_FIELDS for key in f.described if key not in DERIVED})
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": pool.name}, "spec": spec}


def node_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """Every label a pool's nodes carry: the labels every kubelet sets, then the pool's own
    (sorted). Descriptions written before they listed the kubelet's labels get them too."""
    return dict(sorted({**KUBELET_NODE_LABELS, **labels}.items()))


def from_documents(docs: Sequence[tuple[str, Mapping[str, Any]]]) -> tuple[PoolFacts, ...]:
    """PoolFacts from (file, NodePool document) pairs; a malformed one is bad input naming the file."""
    out = []
    for file, doc in docs:
        spec = doc.get("spec") or {}
        name = (doc.get("metadata") or {}).get("name")
        try:
            out.append(PoolFacts(
                name=str(name), nodes=int(spec["nodes"]), allocatable=_resources(spec["allocatable"]),
                labels=node_labels(spec.get("labels") or {}),
                taints=tuple(Taint(t["key"], t.get("value", ""), t.get("effect", "NoSchedule")) for t in spec.get("taints") or []),
                static_cpu=spec.get("cpuManagerPolicy") == "static",
                capacity=_resources(spec["capacity"]) if "capacity" in spec else None))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(file, f"NodePool/{name}", f"not a NodePool description ({exc}); synth writes them to "
                             f"dist/{nodepool_path('<pool>')}") from None
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise InputError(", ".join(sorted({f for f, _ in docs})), "", f"a NodePool is described twice: {names}")
    return tuple(sorted(out, key=lambda p: p.name))


def _resources(listed: Mapping[str, Any]) -> Resources:
    return Resources(quantity.millicores(listed["cpu"]), quantity.to_bytes(listed["memory"]),
                     int(quantity.parse(listed.get(GPU, 0))))
