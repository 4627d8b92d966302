"""What objects take of their namespace's ResourceQuota: one count for ``colocate capacity``,
``diff`` (colocate/review/quota.py) and the rule COL051 (policies/checks/capacity.py).

The ResourceQuota admission plugin refuses a pod or object that would take its namespace past a
hard limit. Counted, in quota units (millicores, bytes, count):
- a pod template's requests and limits of cpu, memory and ``nvidia.com/gpu`` times its replicas
  (model/pods.py ``replicas``; a DaemonSet: one pod per node of the pools that admit it), and
  ``pods``; ``cpu`` and ``memory`` are ``requests.cpu`` and ``requests.memory``
  (kubernetes v1.28.15 pkg/quota/v1/evaluator/core/pods.go);
- ``persistentvolumeclaims`` and ``requests.storage`` of each claim
  (pkg/quota/v1/evaluator/core/persistent_volume_claims.go);
- ``count/<resource>[.<group>]`` of every namespaced object (k8s.io/apiserver v0.28.15
  pkg/quota/v1/generic/evaluator.go), the resource taken as the kind in lower case plus "s".
Other keys are not counted. A TFJob that waits in Kueue's queue is suspended and has no pod
(model/kueue_admission.py): callers leave its pods out.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, NamedTuple, Protocol, Sequence

from colocate.model import quantity
from colocate.model.names import GPU
from colocate.model.pods import PodTemplate, pod_resources, replicas
from colocate.model.pool_facts import PoolFacts
from colocate.model.pools import Resources


class QuotaObject(Protocol):
    """An object as the quota counts it (colocate.checker.manifests.Doc is one)."""

    obj: dict[str, Any]
    kind: str
    group: str
    namespace: str
    ref: str
    is_api_object: bool


class Contribution(NamedTuple):
    """``amount`` of quota ``key`` that ``who`` takes in ``namespace``; ``of_pods``: pods the
    object creates (what a suspended job does not take), else the object itself. A tuple: a
    tree of 10,000 workloads makes some 100,000 of them."""

    namespace: str
    key: str
    who: str
    amount: int
    of_pods: bool


def pod_requests(rows: Iterable[Contribution]) -> Resources:
    """What the pods of ``rows`` request in all, replicas counted: a queued job's ask to Kueue."""
    asked: dict[str, int] = defaultdict(int)
    for c in rows:
        if c.of_pods:
            asked[c.key] += c.amount
    return Resources(asked["requests.cpu"], asked["requests.memory"], asked[f"requests.{GPU}"])


def contributions(doc: QuotaObject, pods: Iterable[PodTemplate], pools: Sequence[PoolFacts]) -> list[Contribution]:
    """Every quota amount the object takes, its pods' first; ``pods``: its pod templates."""
    out: list[Contribution] = []
    ns = doc.namespace
    for pod in pods:
        count = replicas(pod, sum(p.nodes for p in pools if p.admits(pod.spec)) if doc.kind == "DaemonSet" else 0)
        who = f"{doc.ref}{' ' + pod.role if pod.role else ''} x{count}"
        for which in ("requests", "limits"):
            r = pod_resources(pod.spec, which)
            for key, value in ((f"{which}.cpu", r.cpu_milli), (f"{which}.memory", r.memory_bytes),
                               (f"{which}.{GPU}", r.gpus)):
                if value * count:
                    out.append(Contribution(ns, key, who, value * count, True))
        if count:
            out.append(Contribution(ns, "pods", doc.ref, count, True))
    if doc.is_api_object and ns:
        out.append(Contribution(ns, f"count/{doc.kind.lower()}s" + (f".{doc.group}" if doc.group else ""),
                                doc.ref, 1, False))
        if doc.kind == "PersistentVolumeClaim" and not doc.group:
            out.append(Contribution(ns, "persistentvolumeclaims", doc.ref, 1, False))
            storage = _storage_request(doc.obj)
            if storage:
                out.append(Contribution(ns, "requests.storage", doc.ref, storage, False))
    return out


#: Quota keys that are another key under a second name (pods.go: cpu is requests.cpu).
ALIASES = {"cpu": "requests.cpu", "memory": "requests.memory"}


def totals(rows: Iterable[Contribution]) -> dict[str, dict[str, int]]:
    """Per namespace and quota key (aliases included): the total."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        out[row.namespace][row.key] += row.amount
    for by_key in out.values():
        for alias, key in ALIASES.items():
            if key in by_key:
                by_key[alias] = by_key[key]
    return out


def contributors(rows: Iterable[Contribution], namespace: str, key: str) -> list[tuple[str, int]]:
    """Who takes quota ``key`` in ``namespace``, and how much, in order (asked of a key over its
    limit only: most trees have none)."""
    key = ALIASES.get(key, key)
    return [(r.who, r.amount) for r in rows if r.key == key and r.namespace == namespace]


def counted(key: str) -> bool:
    """A quota key ``contributions`` counts."""
    return key in _FIXED or key.startswith("count/")


_FIXED = frozenset({"pods", "persistentvolumeclaims", "requests.storage", *ALIASES,
                    *(f"{w}.{r}" for w in ("requests", "limits") for r in ("cpu", "memory", GPU))})


def unit(key: str) -> str:
    """How a key is counted: cpu (millicores), memory (bytes) or count."""
    return "cpu" if key.endswith("cpu") else "memory" if key.endswith(("memory", "storage")) else "count"


def hard(key: str, value: object) -> int:
    """A hard limit in its key's unit; ValueError when it is not a quantity."""
    kind = unit(key)
    return quantity.millicores(value) if kind == "cpu" else quantity.to_bytes(value) if kind == "memory" \
        else int(quantity.parse(value))


def show(key: str, amount: int, readable: bool = False) -> str:
    """An amount of a key as a quantity (``readable``: memory in the largest whole unit)."""
    kind = unit(key)
    if kind == "cpu":
        return quantity.format_cpu(amount)
    if kind == "memory":
        return quantity.format_bytes_readable(amount) if readable else quantity.format_bytes(amount)
    return str(amount)


def hard_limits(obj: dict[str, Any]) -> dict[str, object]:
    """A ResourceQuota's ``spec.hard`` by key; of another shape, none (the schema check reports it)."""
    spec = obj.get("spec")
    limits = spec.get("hard") if isinstance(spec, dict) else None
    return {k: v for k, v in limits.items() if isinstance(k, str)} if isinstance(limits, dict) else {}


def _storage_request(obj: dict[str, Any]) -> int:
    spec = obj.get("spec")
    resources = spec.get("resources") if isinstance(spec, dict) else None
    requests = resources.get("requests") if isinstance(resources, dict) else None
    value = requests.get("storage") if isinstance(requests, dict) else None
    try:
        return quantity.to_bytes(value) if quantity.is_quantity(value) else 0
    except ValueError:
        return 0
