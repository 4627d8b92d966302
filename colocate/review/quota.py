"""ResourceQuota use: what the pods in dist/ ask of each quota's hard limits.

The ResourceQuota admission plugin refuses a pod that would take its namespace past a hard
limit, so a TFJob that goes over starts only the replicas that fit and waits for the rest.
Counted: ``requests.cpu``/``cpu``, ``requests.memory``/``memory``, ``requests.nvidia.com/gpu``,
``limits.cpu``, ``limits.memory``, ``pods`` and ``persistentvolumeclaims``, from the same
pods and replicas as capacity.py; other keys are left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from colocate.checker import manifests
from colocate.model import quantity
from colocate.checker.manifests import Doc
from colocate.model.names import GPU
from colocate.model.pool_facts import PoolFacts
from colocate.model.pools import Resources
from colocate.model.pods import pod_resources, replicas
from colocate.review.usage import daemonset_pools

#: unit -> (parse a quota value, print an amount).
_UNITS: dict[str, tuple[Callable[[object], int], Callable[[int], str]]] = {
    "cpu": (quantity.millicores, quantity.format_cpu),
    "memory": (quantity.to_bytes, quantity.format_bytes_readable),
    "count": (lambda v: int(quantity.parse(v)), str),
}
_CPU, _MEMORY = (lambda r: r.cpu_milli), (lambda r: r.memory_bytes)
#: Quota key -> (requests or limits, which resource, unit).
_RESOURCE_KEYS: dict[str, tuple[str, Callable[[Resources], int], str]] = {
    "requests.cpu": ("requests", _CPU, "cpu"), "cpu": ("requests", _CPU, "cpu"),
    "requests.memory": ("requests", _MEMORY, "memory"), "memory": ("requests", _MEMORY, "memory"),
    f"requests.{GPU}": ("requests", lambda r: r.gpus, "count"),
    "limits.cpu": ("limits", _CPU, "cpu"), "limits.memory": ("limits", _MEMORY, "memory"),
}
_COUNT_KEYS = ("pods", "persistentvolumeclaims")


@dataclass(frozen=True)
class QuotaUse:
    namespace: str
    quota: str
    resource: str
    used: int
    hard: int

    @property
    def over(self) -> bool:
        return self.used > self.hard


def unit(resource: str) -> str:
    """How a counted quota key is counted: cpu (millicores), memory (bytes) or count."""
    return _RESOURCE_KEYS[resource][2] if resource in _RESOURCE_KEYS else "count"


def printer(resource: str) -> Callable[[int], str]:
    return _UNITS[unit(resource)][1]


def hard_limits(doc: Doc) -> dict[str, object]:
    """A ResourceQuota's ``spec.hard`` by key; of another shape, none (the schema check reports it)."""
    spec = doc.obj.get("spec")
    hard = spec.get("hard") if isinstance(spec, dict) else None
    return {k: v for k, v in hard.items() if isinstance(k, str)} if isinstance(hard, dict) else {}


def counted(resource: str) -> bool:
    """A quota key this module counts."""
    return resource in _RESOURCE_KEYS or resource in _COUNT_KEYS


def hard(resource: str, value: object) -> int:
    """A counted key's hard limit in its unit (millicores, bytes, count); ValueError when it is
    not a quantity."""
    return _UNITS[unit(resource)][0](value)


def uses(docs: list[Doc], pools: Sequence[PoolFacts]) -> list[QuotaUse]:
    """One row per ResourceQuota and counted key, sorted by namespace, quota, key."""
    per_ns: dict[str, dict[str, int]] = {}
    for doc in docs:
        counts = per_ns.setdefault(doc.namespace, {})
        if doc.kind == "PersistentVolumeClaim":
            counts["persistentvolumeclaims"] = counts.get("persistentvolumeclaims", 0) + 1
        for pod in manifests.pod_specs(doc):
            # A DaemonSet's pods: one per node of every pool it may run on, as in usage().
            n = replicas(pod, sum(p.nodes for p in daemonset_pools(pod, pools)) if doc.kind == "DaemonSet" else 0)
            counts["pods"] = counts.get("pods", 0) + n
            for key, (which, get, _) in _RESOURCE_KEYS.items():
                counts[key] = counts.get(key, 0) + n * get(pod_resources(pod.spec, which))
    out = []
    for doc in docs:
        if doc.kind != "ResourceQuota":
            continue
        for resource, value in sorted(hard_limits(doc).items()):
            if counted(resource):
                out.append(QuotaUse(doc.namespace, doc.name, resource,
                                    per_ns.get(doc.namespace, {}).get(resource, 0), hard(resource, value)))
    return sorted(out, key=lambda q: (q.namespace, q.quota, q.resource))


@dataclass(frozen=True)
class QuotaDelta:
    namespace: str
    quota: str
    resource: str
    used_before: int
    used_after: int
    hard_before: int | None
    hard_after: int | None

    @property
    def over(self) -> bool:
        """The namespace now asks for more than the quota admits: some pods are refused."""
        return self.hard_after is not None and self.used_after > self.hard_after


def deltas(before: list[QuotaUse], after: list[QuotaUse]) -> list[QuotaDelta]:
    """Quota rows whose use or hard limit changes (a quota added or removed has None for hard)."""
    old = {(q.namespace, q.quota, q.resource): q for q in before}
    new = {(q.namespace, q.quota, q.resource): q for q in after}
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        row = QuotaDelta(*key, a.used if a else 0, b.used if b else 0, a.hard if a else None, b.hard if b else None)
        if (row.used_before, row.hard_before) != (row.used_after, row.hard_after):
            out.append(row)
    return out
