"""Capacity and scheduling, decided from the files: does a pod fit a node of a pool that admits
it, do a namespace's pods fit its ResourceQuota and LimitRange, can the training jobs' GPUs all be
had at once. Pools come from the NodePool descriptions (Context.pools), never from the generator."""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Callable, Iterable, Iterator

from colocate.model import kueue_admission, quantity, resource_quota
from colocate.checker import WORKLOAD_KINDS, Index, Rule, Violation, reads
from colocate.checker.manifests import PodSpec, pod_specs
from colocate.model.names import GPU
from colocate.model.pool_facts import PoolFacts, tolerated
from colocate.model.pools import Resources
from colocate.model.scheduling import node_selected
from colocate.model.pods import containers, pod_resources, replicas

#: (name, accessor, printer) per resource a pod can lack.
_RESOURCES: tuple[tuple[str, Callable[[Resources], int], Callable[[int], str]], ...] = (
    ("cpu", lambda r: r.cpu_milli, quantity.format_cpu),
    ("memory", lambda r: r.memory_bytes, quantity.format_bytes),
    (GPU, lambda r: r.gpus, str),
)


def _why_not(pool: PoolFacts, pod: PodSpec) -> str:
    if not node_selected(pod.spec, pool.labels):
        return f"pool {pool.name}: its nodeSelector/required node affinity does not match"
    untolerated = [t for t in pool.taints if t.effect != "PreferNoSchedule"
                   and not tolerated(pod.spec.get("tolerations") or [], t)]
    return f"pool {pool.name}: taint {untolerated[0].key}={untolerated[0].value}:{untolerated[0].effect} not tolerated"


def _shortfall(need: Resources, pool: PoolFacts) -> list[str]:
    return [f"needs {printer(get(need))} {name}, pool {pool.name} has {printer(get(pool.allocatable))} per node"
            for name, get, printer in _RESOURCES if get(need) > get(pool.allocatable)]


def _missing(need: Resources, pool: PoolFacts) -> tuple[int, float]:
    """How badly a pod misses a pool: resources short, then the largest relative shortfall."""
    short = [(get(need) - get(pool.allocatable)) / max(get(need), 1) for _, get, _ in _RESOURCES
             if get(need) > get(pool.allocatable)]
    return len(short), max(short, default=0.0)


def pod_fits_a_pool(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every pod template fits one node of a pool that admits it (a DaemonSet: every such pool)."""
    pools = index.ctx.pools
    if not pools:
        return
    for pod in index.pods():
        need = pod_resources(pod.spec)
        admitting = [p for p in pools if p.admits(pod.spec)]
        if not admitting:
            yield Violation(pod.doc, pod.path, "no node pool admits it: " + "; ".join(_why_not(p, pod) for p in pools))
            continue
        misses = [p for p in admitting if not p.allocatable.fits(need)]
        if pod.doc.kind == "DaemonSet":
            for pool in misses:
                yield Violation(pod.doc, pod.path, "its pods stay Pending there: " + "; ".join(_shortfall(need, pool)))
        elif len(misses) == len(admitting):
            closest = min(misses, key=lambda p: _missing(need, p))
            yield Violation(pod.doc, pod.path, "; ".join(_shortfall(need, closest))
                            + (f" (pools that admit it: {', '.join(p.name for p in admitting)})" if len(admitting) > 1 else ""))


def _pods(doc) -> Iterable[PodSpec]:
    return pod_specs(doc) if doc.kind in WORKLOAD_KINDS else ()  # most objects have none


def usage_projection(doc, ctx) -> dict | None:
    """What COL051 reads of a quota (whole) or of an object with pods or storage: its
    contributions alone ([quota key, contributor after its reference, amount, of its pods]) and
    the LocalQueue a TFJob names, a few bytes where the object is KBs. Of every other object it
    reads the skeleton, which says its counts."""
    if doc.kind not in WORKLOAD_KINDS and doc.kind not in ("ResourceQuota", "PersistentVolumeClaim"):
        return None
    ref = doc.ref
    rows = []
    for c in resource_quota.contributions(doc, _pods(doc), ctx.pools):
        if c.namespace != doc.namespace or not c.who.startswith(ref):
            raise ValueError("not one object's contributions")  # read whole instead (Reads.chosen)
        rows.append([c.key, c.who[len(ref):], c.amount, c.of_pods])
    if doc.kind == "ResourceQuota":
        return {**doc.obj, "usage": rows}
    queue = kueue_admission.queue_label(doc)
    return {"apiVersion": doc.obj.get("apiVersion"), "kind": doc.kind,
            "metadata": {"name": doc.name, "namespace": doc.namespace}, "usage": rows,
            **({"queue": queue} if queue is not None else {})}


def _contributions(doc, pools) -> tuple[list[resource_quota.Contribution], str | None]:
    """An object's contributions and the LocalQueue it names, from its projection when it is one."""
    if not doc.__dict__.get("projected"):
        return resource_quota.contributions(doc, _pods(doc), pools), kueue_admission.queue_label(doc)
    ref, ns = doc.ref, doc.namespace
    return [resource_quota.Contribution(ns, key, ref + suffix, amount, of_pods)
            for key, suffix, amount, of_pods in doc.obj["usage"]], doc.obj.get("queue")


def _usage(index: Index) -> list[resource_quota.Contribution]:
    """What the objects take of their namespaces' quotas, without the pods of the TFJobs that
    wait in Kueue's queue on the first night (suspended, they have none)."""
    per_doc, asks = [], []
    for doc in index.docs:
        rows, queue = _contributions(doc, index.ctx.pools)
        per_doc.append(((doc.namespace, doc.name), rows))
        if queue is not None and doc.kind == "TFJob":
            asks.append(kueue_admission.QueuedAsk(doc.namespace, doc.name, queue, resource_quota.pod_requests(rows)))
    waits = kueue_admission.waiting({d.name: kueue_admission.nominal_quota(d.obj) for d in index.of_kind("ClusterQueue")},
                                    kueue_admission.cluster_queue_of(index.of_kind("LocalQueue")), asks) if asks else set()
    return [c for key, rows in per_doc for c in rows if not (c.of_pods and key in waits)]


@reads(project=usage_projection)
def namespace_quota(index: Index, rule: Rule) -> Iterator[Violation]:
    """A namespace's pods, replicas counted, within each ResourceQuota's hard limits."""
    quotas = index.of_kind("ResourceQuota")
    rows = _usage(index) if quotas else []
    by_namespace = resource_quota.totals(rows)
    tops: dict[tuple[str, str], str] = {}  # the largest contributors, ranked once per namespace and key
    for quota in quotas:
        usage = by_namespace.get(quota.namespace, {})
        for key, hard in sorted(resource_quota.hard_limits(quota.obj).items()):
            if key not in usage or not quantity.is_quantity(hard):
                continue
            total = usage[key]
            if total > resource_quota.hard(key, hard):
                if (quota.namespace, key) not in tops:
                    parts = resource_quota.contributors(rows, quota.namespace, key)
                    tops[quota.namespace, key] = ", ".join(f"{ref}: {resource_quota.show(key, v)}"
                                                           for ref, v in sorted(parts, key=lambda p: -p[1])[:3])
                top = tops[quota.namespace, key]
                what = "objects come to" if key.startswith(("count/", "persistentvolumeclaims", "requests.storage")) \
                    else "pods ask for"
                yield Violation(quota, f"spec.hard[{key}]", f"hard {hard}, but the namespace's {what} "
                                f"{resource_quota.show(key, total)} ({top}); the API server refuses what is past the limit")


def limit_range(index: Index, rule: Rule) -> Iterator[Violation]:
    """Containers within their namespace's LimitRange min, max and maxLimitRequestRatio (the
    LimitRanger admission plugin rejects the pod otherwise). Every LimitRange of the namespace
    applies; a container is judged against each, once per namespace's distinct ranges."""
    ranges: dict[str, dict[str, tuple]] = defaultdict(dict)
    for lr in index.of_kind("LimitRange"):
        for item in (lr.obj.get("spec") or {}).get("limits") or []:
            if item.get("type", "Container") == "Container":
                # identical ranges judge alike: keep one of each
                key = json.dumps(item, sort_keys=True, default=str)
                ranges[lr.namespace].setdefault(key, (lr, item))
    if not ranges:
        return
    for pod in index.pods():
        for lr, item in ranges.get(pod.doc.namespace, {}).values():
            for path, container in containers(pod):
                resources = container.get("resources") or {}
                limits = {**(item.get("default") or {}), **(resources.get("limits") or {})}
                requests = {**(item.get("defaultRequest") or {}), **limits, **(resources.get("requests") or {})}
                for name in sorted(set(item.get("max") or {}) | set(item.get("min") or {}) |
                                   set(item.get("maxLimitRequestRatio") or {})):
                    yield from _limit_range_one(pod, path, lr, item, name, requests.get(name), limits.get(name))


def _limit_range_one(pod, path, lr, item, name, request, limit) -> Iterator[Violation]:
    hi, lo = (item.get("max") or {}).get(name), (item.get("min") or {}).get(name)
    ratio = (item.get("maxLimitRequestRatio") or {}).get(name)
    where = f"LimitRange {lr.namespace}/{lr.name}"
    if hi is not None and limit is None:
        yield Violation(pod.doc, f"{path}.resources.limits.{name}", f"not set, but {where} has max {hi} (no default)")
    elif hi is not None and quantity.parse(limit) > quantity.parse(hi):
        yield Violation(pod.doc, f"{path}.resources.limits.{name}", f"{limit} is above {where} max {hi}")
    if lo is not None and request is not None and quantity.parse(request) < quantity.parse(lo):
        yield Violation(pod.doc, f"{path}.resources.requests.{name}", f"{request} is below {where} min {lo}")
    if ratio is not None and request and limit and quantity.parse(request) > 0 and \
            quantity.parse(limit) / quantity.parse(request) > quantity.parse(ratio):
        yield Violation(pod.doc, f"{path}.resources.limits.{name}", f"limit {limit} / request {request} is above "
                        f"{where} maxLimitRequestRatio {ratio}")


def training_gpu_demand(index: Index, rule: Rule) -> Iterator[Violation]:
    """The TFJobs' GPUs (replicas counted) against the GPUs of the pools that admit them: past
    that, jobs wait for each other (a warning, not a fault)."""
    pools = index.ctx.pools
    demand, supply_pools = 0, set()
    for doc in index.of_kind("TFJob"):
        gpus = 0
        for pod in pod_specs(doc):
            gpus += pod_resources(pod.spec).gpus * replicas(pod, 0)
            supply_pools.update(p.name for p in pools if p.admits(pod.spec) and p.allocatable.gpus)
        if not gpus:
            continue
        demand += gpus
        supply = sum(p.total.gpus for p in pools if p.name in supply_pools)
        if demand > supply:
            yield Violation(doc, "spec.tfReplicaSpecs", f"with this job the TFJobs ask for {demand} {GPU} in total, "
                            f"and the pools that admit them ({', '.join(sorted(supply_pools)) or 'none'}) hold {supply}: "
                            "they cannot all run at once")
