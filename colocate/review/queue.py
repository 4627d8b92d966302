"""How much of the training a dist/ tree asks for waits in Kueue's queue.

Per ClusterQueue: its nominal quota summed over flavors, each TFJob that names one of its
LocalQueues (label ``kueue.x-k8s.io/queue-name``) with its requests, and which jobs wait when the
queue admits them in order, all or nothing, each one that fits what is left (``BestEffortFIFO``:
kubernetes-sigs/kueue v0.10.6 pkg/queue/cluster_queue.go; a job that does not fit lets the next
one in). Order is by name, the order Argo CD creates objects of one kind and wave in
(gitops-engine pkg/sync/sync_tasks.go); Kueue's is creation time, the same on a first sync.
Jobs that never end in one night are not modelled: this is what the first night can start.
"""
from __future__ import annotations

from dataclasses import dataclass

from colocate.checker import manifests
from colocate.checker.manifests import Doc
from colocate.model import quantity
from colocate.model.names import GPU, QUEUE_NAME_LABEL
from colocate.model.pods import ZERO, pod_resources, replicas
from colocate.model.pools import Resources


@dataclass(frozen=True)
class QueuedJob:
    name: str  # namespace/name
    requests: Resources
    waits: bool


@dataclass(frozen=True)
class QueueUse:
    cluster_queue: str
    quota: Resources
    jobs: tuple[QueuedJob, ...]

    @property
    def demand(self) -> Resources:
        return sum((j.requests for j in self.jobs), ZERO)

    @property
    def waiting(self) -> tuple[QueuedJob, ...]:
        return tuple(j for j in self.jobs if j.waits)


def _quota(doc: Doc) -> Resources:
    total = {"cpu": 0, "memory": 0, GPU: 0}
    for group in (doc.obj.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                name, value = resource.get("name"), resource.get("nominalQuota")
                if name == "cpu":
                    total["cpu"] += quantity.millicores(value)
                elif name == "memory":
                    total["memory"] += quantity.to_bytes(value)
                elif name == GPU:
                    total[GPU] += int(quantity.parse(value))
    return Resources(total["cpu"], total["memory"], total[GPU])


def queues(docs: list[Doc]) -> list[QueueUse]:
    """One entry per ClusterQueue in ``docs``, sorted by name; none without Kueue."""
    local = {(d.namespace, d.name): (d.obj.get("spec") or {}).get("clusterQueue") for d in docs if d.kind == "LocalQueue"}
    asked: dict[str, list[tuple[str, Resources]]] = {}
    for doc in sorted((d for d in docs if d.kind == "TFJob"), key=lambda d: (d.namespace, d.name)):
        queue = local.get((doc.namespace, ((doc.obj.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL)))
        if queue:
            requests = sum((pod_resources(p.spec).times(replicas(p, 0)) for p in manifests.pod_specs(doc)), ZERO)
            asked.setdefault(queue, []).append((f"{doc.namespace}/{doc.name}", requests))
    out = []
    for doc in sorted((d for d in docs if d.kind == "ClusterQueue"), key=lambda d: d.name):
        quota = free = _quota(doc)
        jobs = []
        for name, requests in asked.get(doc.name, []):
            fits = free.fits(requests)
            if fits:
                free = free + requests.times(-1)
            jobs.append(QueuedJob(name, requests, waits=not fits))
        out.append(QueueUse(doc.name, quota, tuple(jobs)))
    return out
