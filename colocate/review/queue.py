"""How much of the training a dist/ tree asks for waits in Kueue's queue.

Per ClusterQueue: its nominal quota summed over flavors, each TFJob that names one of its
LocalQueues (label ``kueue.x-k8s.io/queue-name``) with its requests, and which jobs wait when the
queue admits them in order, all or nothing, each one that fits what is left (``BestEffortFIFO``:
kubernetes-sigs/kueue v0.10.6 pkg/queue/cluster_queue.go; a job that does not fit lets the next
one in). Order is by name, the order Argo CD creates objects of one kind and wave in
(gitops-engine pkg/sync/sync_tasks.go); Kueue's is creation time, the same on a first sync.
Jobs that never end in one night are not modelled: this is what the first night can start.
A job that waits is suspended (Kueue keeps ``runPolicy.suspend``): it has no pod, so neither its
pool nor its namespace's ResourceQuota counts it until it is admitted (``admitted_only``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

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

    @property
    def admitted(self) -> tuple[QueuedJob, ...]:
        return tuple(j for j in self.jobs if not j.waits)

    @property
    def waiting_gpus(self) -> int:
        return sum(j.requests.gpus for j in self.waiting)


@dataclass(frozen=True)
class QueueDelta:
    """One ClusterQueue before and after a change (None where that tree does not have it)."""

    cluster_queue: str
    before: QueueUse | None
    after: QueueUse | None

    @property
    def newly_waiting(self) -> tuple[QueuedJob, ...]:
        """Jobs that wait after the change and did not before: new jobs past the night's quota,
        or jobs that other jobs, or a smaller quota, now push out of the first night."""
        was = {j.name for j in self.before.waiting} if self.before else set()
        return tuple(j for j in (self.after.waiting if self.after else ()) if j.name not in was)

    @property
    def newly_admitted(self) -> tuple[QueuedJob, ...]:
        """Jobs that waited before the change and the first night now starts."""
        was = {j.name for j in self.before.waiting} if self.before else set()
        return tuple(j for j in (self.after.admitted if self.after else ()) if j.name in was)


def deltas(before: list[QueueUse], after: list[QueueUse]) -> list[QueueDelta]:
    """Every ClusterQueue of either side, by name."""
    old, new = {q.cluster_queue: q for q in before}, {q.cluster_queue: q for q in after}
    return [QueueDelta(name, old.get(name), new.get(name)) for name in sorted(set(old) | set(new))]


def nominal_quotas(doc: Doc) -> Iterator[tuple[str, str, object]]:
    """(field path, resource name, nominalQuota) of each resource of a ClusterQueue's flavors;
    a part of another shape counts as absent (the schema check reports it)."""
    spec = doc.obj.get("spec")
    groups = spec.get("resourceGroups") if isinstance(spec, dict) else None
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        flavors = group.get("flavors") if isinstance(group, dict) else None
        for f, flavor in enumerate(flavors if isinstance(flavors, list) else []):
            resources = flavor.get("resources") if isinstance(flavor, dict) else None
            for r, resource in enumerate(resources if isinstance(resources, list) else []):
                if isinstance(resource, dict) and "nominalQuota" in resource:
                    yield (f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}].nominalQuota",
                           str(resource.get("name")), resource["nominalQuota"])


def _quota(doc: Doc) -> Resources:
    total = {"cpu": 0, "memory": 0, GPU: 0}
    for _, name, value in nominal_quotas(doc):
        if name == "cpu":
            total["cpu"] += quantity.millicores(value)
        elif name == "memory":
            total["memory"] += quantity.to_bytes(value)
        elif name == GPU:
            total[GPU] += int(quantity.parse(value))
    return Resources(total["cpu"], total["memory"], total[GPU])


def queues(docs: list[Doc]) -> list[QueueUse]:
    """One entry per ClusterQueue in ``docs``, sorted by name; none without Kueue."""
    local = {(d.namespace, d.name): _spec(d).get("clusterQueue") for d in docs if d.kind == "LocalQueue"
             and isinstance(_spec(d).get("clusterQueue"), str)}
    asked: dict[str, list[tuple[str, Resources]]] = {}
    for doc in sorted((d for d in docs if d.kind == "TFJob"), key=lambda d: (d.namespace, d.name)):
        label = doc.labels.get(QUEUE_NAME_LABEL)
        queue = local.get((doc.namespace, label)) if isinstance(label, str) else None
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


def _spec(doc: Doc) -> dict:
    spec = doc.obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def admitted_only(docs: list[Doc], uses: list[QueueUse]) -> list[Doc]:
    """``docs`` without the TFJobs that wait in a queue: suspended, they have no pod to place or to
    count against their namespace's quota until Kueue admits them."""
    waiting = {j.name for q in uses for j in q.waiting}
    return [d for d in docs if not (d.kind == "TFJob" and f"{d.namespace}/{d.name}" in waiting)]
