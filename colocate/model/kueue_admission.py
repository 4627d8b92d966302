"""Which queued TFJobs Kueue admits on the first night: one model for ``colocate capacity``,
``diff`` (colocate/review/queue.py) and the rules COL051 and COL120 (policies/checks/).

A TFJob is queued when its ``kueue.x-k8s.io/queue-name`` label names a LocalQueue of its
namespace; the LocalQueue names its ClusterQueue. A ClusterQueue admits its jobs in order, all or
nothing, each one that fits what is left of its nominal quota summed over flavors
(``BestEffortFIFO``: kubernetes-sigs/kueue v0.10.6 pkg/queue/cluster_queue.go; a job that does not
fit lets the next one in). The order is by namespace and name, the order Argo CD creates objects of
one kind and wave in (gitops-engine pkg/sync/sync_tasks.go); Kueue's is creation time, the same on
a first sync. A job that waits stays suspended and has no pod.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from colocate.model import quantity
from colocate.model.names import GPU, QUEUE_NAME_LABEL
from colocate.model.objects import ObjectView
from colocate.model.pools import Resources


def nominal_quotas(obj: dict[str, Any]) -> Iterator[tuple[str, str, object]]:
    """(field path, resource name, nominalQuota) of each resource of a ClusterQueue's flavors;
    a part of another shape counts as absent (the schema check reports it)."""
    spec = obj.get("spec")
    groups = spec.get("resourceGroups") if isinstance(spec, dict) else None
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        flavors = group.get("flavors") if isinstance(group, dict) else None
        for f, flavor in enumerate(flavors if isinstance(flavors, list) else []):
            resources = flavor.get("resources") if isinstance(flavor, dict) else None
            for r, resource in enumerate(resources if isinstance(resources, list) else []):
                if isinstance(resource, dict) and "nominalQuota" in resource:
                    yield (f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}].nominalQuota",
                           str(resource.get("name")), resource["nominalQuota"])


def nominal_quota(obj: dict[str, Any]) -> Resources:
    """A ClusterQueue's cpu, memory and GPUs, summed over its flavors; a value that is no
    quantity counts as none (the schema check and COL410 report it)."""
    cpu = memory = gpus = 0
    for _, name, value in nominal_quotas(obj):
        if not quantity.is_quantity(str(value)):
            continue
        if name == "cpu":
            cpu += quantity.millicores(value)
        elif name == "memory":
            memory += quantity.to_bytes(value)
        elif name == GPU:
            gpus += int(quantity.parse(value))
    return Resources(cpu, memory, gpus)


def queue_label(doc: ObjectView) -> str | None:
    """The LocalQueue a TFJob names, or None."""
    label = doc.labels.get(QUEUE_NAME_LABEL) if doc.kind == "TFJob" else None
    return label if isinstance(label, str) else None


def cluster_queue_of(local_queues: Iterable[ObjectView]) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue) -> the ClusterQueue it feeds."""
    out = {}
    for doc in local_queues:
        spec = doc.obj.get("spec")
        target = spec.get("clusterQueue") if isinstance(spec, dict) else None
        if isinstance(target, str):
            out[doc.namespace, doc.name] = target
    return out


@dataclass(frozen=True)
class QueuedAsk:
    """A queued TFJob: where it waits and what the whole job asks (replicas counted)."""

    namespace: str
    name: str
    queue: str
    requests: Resources


def first_night(quotas: dict[str, Resources], local: dict[tuple[str, str], str],
                asks: Iterable[QueuedAsk]) -> dict[str, list[tuple[QueuedAsk, bool]]]:
    """Per ClusterQueue of ``quotas``, its jobs in admission order, each with whether it waits.
    A job whose LocalQueue or ClusterQueue is missing is in none (COL120 reports it)."""
    out: dict[str, list[tuple[QueuedAsk, bool]]] = {name: [] for name in quotas}
    free = dict(quotas)
    for ask in sorted(asks, key=lambda a: (a.namespace, a.name)):
        cq = local.get((ask.namespace, ask.queue))
        if cq not in quotas:
            continue
        fits = free[cq].fits(ask.requests)
        if fits:
            free[cq] = free[cq] + ask.requests.times(-1)
        out[cq].append((ask, not fits))
    return out


def waiting(quotas: dict[str, Resources], local: dict[tuple[str, str], str],
            asks: Iterable[QueuedAsk]) -> set[tuple[str, str]]:
    """(namespace, name) of every queued TFJob that waits on the first night."""
    return {(a.namespace, a.name) for jobs in first_night(quotas, local, asks).values() for a, waits in jobs if waits}
