"""Requested CPU, memory and GPUs per pool and tier, against the pool's allocatable.

Requests come from the objects in a dist/ tree: every pod template times its replicas
(Deployment, StatefulSet, ReplicaSet: ``spec.replicas``; TFJob: each replica type's
``replicas``; Job: ``parallelism``; DaemonSet: one pod per node of its pools). A pod's request
is what the scheduler counts: the sum over its containers, or the largest init container when
that is larger; a container with limits but no requests requests its limits (API defaulting).
Its pool is the ``colocate.io/pool`` in its nodeSelector or required node affinity (of several,
the one its preferred node affinity names: where it runs while that pool has room); its tier the
``colocate.io/tier`` label of its PriorityClass, else of its Namespace, else ``platform``.

Allocatable comes from the pools as ``check`` reads them (``PoolFacts``): a tree's own
``nodes/<pool>/nodepool.<pool>.yaml`` where it has them (described_pools), else the configured
cluster's (reference_pools), described as synth would write them. The
upstream charts' objects are rendered into dist/ and counted like ours; CronJobs are not (not
always running), nor LimitRange defaults, nor the pods an operator makes from a custom resource
(Prometheus, Alertmanager).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from colocate.checker import manifests
from colocate.errors import InputError
from colocate.model import quantity
from colocate.model.names import GPU, TIER_LABEL
from colocate.model.pools import Resources
from colocate.model.tiers import PriorityTier
from colocate.checker.manifests import Doc, PodSpec
from colocate.model.pods import ZERO, pod_resources, replicas
from colocate.model.pool_facts import PoolFacts, describe, from_documents
from colocate.model.scheduling import pod_pools, preferred_pool

#: Tier of pods whose PriorityClass and Namespace carry no tier label.
DEFAULT_TIER = "platform"
#: Row for pods not pinned to exactly one pool.
UNPINNED = "(unpinned)"


#: Where pools come from when a tree describes none: the configured cluster's (reference_pools).
PoolSource = Callable[[], Sequence[PoolFacts]]


def reference_pools(config_path: Path | None = None) -> tuple[PoolFacts, ...]:
    """The configured cluster's pools, as synth describes them in dist/nodes/."""
    from colocate import config as config_mod

    pools = (config_mod.load(config_path) if config_path else config_mod.load()).cluster.pools
    return from_documents([(f"the configured pool {p.name}", describe(p)) for p in pools])


def described_pools(root: Path) -> tuple[PoolFacts, ...] | None:
    """The pools a dist/ tree describes (``nodes/<pool>/nodepool.<pool>.yaml``), or None when it
    describes none; a malformed description is bad input naming its file."""
    from colocate.base import safe_yaml
    from colocate.base.layout import nodepool_path

    files = sorted(root.glob(nodepool_path("*")))
    if not files:
        return None
    docs = []
    for file in files:
        try:
            doc = safe_yaml.load(file.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(str(file), "", f"cannot be read as a NodePool description: {exc}") from None
        docs.append((str(file), doc if isinstance(doc, dict) else {}))
    return from_documents(docs)


def reference_tiers(config_path: Path | None = None) -> tuple[PriorityTier, ...]:
    """The priority tiers of the current source's cluster: the source of truth for which
    PriorityClass serves which tier."""
    from colocate import config as config_mod

    return (config_mod.load(config_path) if config_path else config_mod.load()).cluster.tiers


@dataclass(frozen=True)
class Usage:
    """Requests by pool, then tier, and each pool's allocatable."""

    requests: dict[str, dict[str, Resources]]
    allocatable: dict[str, Resources]

    def total(self, pool: str) -> Resources:
        out = ZERO
        for r in self.requests.get(pool, {}).values():
            out += r
        return out

    @property
    def pools(self) -> list[str]:
        return sorted(set(self.allocatable) | set(self.requests), key=lambda p: (p == UNPINNED, p))

    @property
    def tiers(self) -> list[str]:
        return sorted({t for by_tier in self.requests.values() for t in by_tier})


def _tier_of(docs: Iterable[Doc], tiers: Sequence[PriorityTier] = ()) -> Callable[[PodSpec], str]:
    """A pod's tier: its PriorityClass's, else its namespace's label. A class the configuration
    names keeps the configured role whatever its label says (colocate.yaml is the source of truth
    for tiers: a relabel in dist/ moves no load between tiers)."""
    by_class = {d.name: d.labels.get(TIER_LABEL) for d in docs if d.kind == "PriorityClass"}
    by_class.update({t.name: t.role for t in tiers})
    by_ns = {d.name: d.labels.get(TIER_LABEL) for d in docs if d.kind == "Namespace"}
    return lambda pod: by_class.get(pod.spec.get("priorityClassName") or "") or by_ns.get(pod.doc.namespace) \
        or DEFAULT_TIER


def pool_of(pod: PodSpec) -> str:
    """The pool a pod's request counts against: its only pool, or its preferred one (an online
    service on online and mixed fills online first); else UNPINNED."""
    return preferred_pool(pod.spec) or UNPINNED


def daemonset_pools(pod: PodSpec, pools: Sequence[PoolFacts]) -> list[PoolFacts]:
    """The pools a DaemonSet's pods run on: every pool whose node labels its nodeSelector and
    required node affinity accept and whose NoSchedule/NoExecute taints it tolerates (the
    DaemonSet controller places one pod per such node: PoolFacts.admits)."""
    return [p for p in pools if p.admits(pod.spec)]


def usage(docs: list[Doc], pools: Sequence[PoolFacts], tiers: Sequence[PriorityTier] = ()) -> Usage:
    tier_of = _tier_of(docs, tiers)
    requests: dict[str, dict[str, Resources]] = {}

    def add(pool: str, tier: str, amount: Resources) -> None:
        by_tier = requests.setdefault(pool, {})
        by_tier[tier] = by_tier.get(tier, ZERO) + amount

    for doc in docs:
        for pod in manifests.pod_specs(doc):
            if doc.kind == "DaemonSet":
                for pool in daemonset_pools(pod, pools):
                    add(pool.name, tier_of(pod), pod_resources(pod.spec).times(pool.nodes))
                continue
            add(pool_of(pod), tier_of(pod), pod_resources(pod.spec).times(replicas(pod, 0)))
    return Usage(requests, {p.name: p.total for p in pools})


def api_objects(root: Path) -> list[Doc]:
    """The API objects of a dist/ folder (none when it does not exist)."""
    return [d for d in manifests.load([root]) if d.is_api_object] if root.is_dir() else []



#: (name, accessor, printer) of each resource the table shows.
RESOURCES: tuple[tuple[str, Callable[[Resources], int], Callable[[int], str]], ...] = (
    ("cpu", lambda r: r.cpu_milli, quantity.format_cpu),
    ("memory", lambda r: r.memory_bytes, quantity.format_bytes_readable),
    (GPU, lambda r: r.gpus, str),
)


def signed(value: int, printer: Callable[[int], str]) -> str:
    return "0" if value == 0 else ("+" if value > 0 else "-") + printer(abs(value))


@dataclass(frozen=True)
class Row:
    """One pool and resource: requests by tier, their total, the allocatable."""

    pool: str
    resource: str
    by_tier: dict[str, int]
    total: int
    allocatable: int | None


def rows(u: Usage) -> list[Row]:
    out = []
    for pool in u.pools:
        alloc = u.allocatable.get(pool)
        for name, get, _ in RESOURCES:
            by_tier = {t: get(r) for t, r in u.requests.get(pool, {}).items()}
            out.append(Row(pool, name, by_tier, get(u.total(pool)), get(alloc) if alloc else None))
    return out


@dataclass(frozen=True)
class Delta:
    """A request that changes: pool, tier (or ``total``), resource, before, after, allocatable."""

    pool: str
    tier: str
    resource: str
    before: int
    after: int
    allocatable: int | None

    @property
    def over(self) -> bool:
        """The pool's total request now exceeds its allocatable: some pods stop fitting."""
        return self.tier == "total" and self.allocatable is not None and self.after > self.allocatable


def deltas(before: Usage, after: Usage) -> list[Delta]:
    """Every pool/tier/resource whose request changes, and the pool totals that do."""
    out = []
    old, new = {(r.pool, r.resource): r for r in rows(before)}, {(r.pool, r.resource): r for r in rows(after)}
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        alloc = (b or a).allocatable
        # A pool that grows or shrinks: its total is shown against the new allocatable even when
        # no request changes (what ran may no longer fit).
        resized = bool(a and b and a.allocatable != b.allocatable)
        tiers = sorted(set(a.by_tier if a else {}) | set(b.by_tier if b else {}))
        for tier in tiers + ["total"]:
            x = (a.total if tier == "total" else a.by_tier.get(tier, 0)) if a else 0
            y = (b.total if tier == "total" else b.by_tier.get(tier, 0)) if b else 0
            if x != y or (tier == "total" and resized):
                out.append(Delta(key[0], tier, key[1], x, y, alloc))
    return out


@dataclass(frozen=True)
class Unfit:
    """A pod larger than any one node of its pool: it never schedules."""

    object: str
    role: str
    pool: str
    request: Resources
    node: Resources


def unfit(docs: list[Doc], pools: Sequence[PoolFacts]) -> list[Unfit]:
    """Pods whose request exceeds one node's allocatable in every pool they may run in."""
    node = {p.name: p.allocatable for p in pools}
    out = []
    for doc in docs:
        for pod in manifests.pod_specs(doc):
            request = pod_resources(pod.spec)
            allowed = sorted(p for p in pod_pools(pod.spec) if p in node)
            if allowed and not any(node[p].fits(request) for p in allowed):
                largest = max(allowed, key=lambda p: (node[p].cpu_milli, node[p].memory_bytes, node[p].gpus))
                out.append(Unfit(doc.ref, pod.role, "|".join(allowed), request, node[largest]))
    return out
