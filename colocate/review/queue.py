"""How much of the training a dist/ tree asks for waits in Kueue's queue.

Per ClusterQueue: its nominal quota summed over flavors, each TFJob that names one of its
LocalQueues (label ``kueue.x-k8s.io/queue-name``) with its requests, and which jobs wait when the
queue admits them in order, all or nothing, each one that fits what is left (``BestEffortFIFO``:
kubernetes-sigs/kueue v0.10.6 pkg/queue/cluster_queue.go; a job that does not fit lets the next
one in). Order is by name, the order Argo CD creates objects of one kind and wave in
(gitops-engine pkg/sync/sync_tasks.go); Kueue's is creation time, the same on a first sync.
Jobs that never end in one night are not modelled: this is what the first night can start.

GPU-hours: a job's run time is not in the manifests; a job file may give it (``expectedHours``,
carried on the TFJob as the ``colocate.io/expected-hours`` annotation). The GPU-hours waiting are
the waiting jobs' GPUs times their hours, against the night's GPU-hours: the ClusterQueue's GPU
quota times the night's length (colocate.yaml's schedule, from the resume to the pause). A
waiting job with GPUs and no estimate is counted apart, never given an invented figure.
A job that waits is suspended (Kueue keeps ``runPolicy.suspend``): it has no pod, so neither its
pool nor its namespace's ResourceQuota counts it until it is admitted (``admitted_only``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from colocate.checker import manifests
from colocate.checker.manifests import Doc
from colocate.errors import InputError
from colocate.model import quantity
from colocate.model.names import EXPECTED_HOURS_ANNOTATION, GPU, MAX_EXPECTED_HOURS, QUEUE_NAME_LABEL
from colocate.model.pods import ZERO, pod_resources, replicas
from colocate.model.pools import Resources


@dataclass(frozen=True)
class QueuedJob:
    name: str  # namespace/name
    requests: Resources
    waits: bool
    #: Expected run time (the job file's ``expectedHours``); None: no estimate.
    hours: float | None = None

    @property
    def gpu_hours(self) -> float | None:
        """GPUs times hours; 0 for a job without GPUs, None for one with GPUs and no estimate."""
        if not self.requests.gpus:
            return 0.0
        return None if self.hours is None else self.requests.gpus * self.hours


@dataclass(frozen=True)
class QueueUse:
    cluster_queue: str
    quota: Resources
    jobs: tuple[QueuedJob, ...]
    #: Hours from the resume to the pause; None without a schedule in colocate.yaml.
    night_hours: float | None = None

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

    @property
    def waiting_gpu_hours(self) -> float:
        """GPU-hours of the waiting jobs that have an estimate (see ``unestimated``)."""
        return sum(j.gpu_hours or 0.0 for j in self.waiting)

    @property
    def unestimated(self) -> tuple[QueuedJob, ...]:
        """Waiting jobs with GPUs and no ``expectedHours``: their GPU-hours are unknown."""
        return tuple(j for j in self.waiting if j.gpu_hours is None)

    @property
    def night_gpu_hours(self) -> float | None:
        """The GPU quota times the night's length; None without a schedule."""
        return None if self.night_hours is None else self.quota.gpus * self.night_hours


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


def expected_hours(doc: Doc) -> float | None:
    """A TFJob's ``colocate.io/expected-hours``, or None; a value that is no number of hours
    above 0 and at most MAX_EXPECTED_HOURS is bad input naming the file, object and field."""
    annotations = doc.metadata.get("annotations")
    value = annotations.get(EXPECTED_HOURS_ANNOTATION) if isinstance(annotations, dict) else None
    if value is None:
        return None
    try:
        hours = float(value) if isinstance(value, str) and len(value) <= 20 else math.nan
    except ValueError:
        hours = math.nan
    if not 0 < hours <= MAX_EXPECTED_HOURS:  # NaN too
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise InputError(doc.file, f"metadata.annotations.{EXPECTED_HOURS_ANNOTATION}",
                         f"{doc.ref}: {shown} is not a number of hours above 0 and at most {MAX_EXPECTED_HOURS} "
                         "(the job file's expectedHours, such as \"6\" or \"2.5\")")
    return hours


def queues(docs: list[Doc], night_hours: float | None = None) -> list[QueueUse]:
    """One entry per ClusterQueue in ``docs``, sorted by name; none without Kueue.
    ``night_hours``: from the resume to the pause (None: no schedule, no night's GPU-hours)."""
    local = {(d.namespace, d.name): _spec(d).get("clusterQueue") for d in docs if d.kind == "LocalQueue"
             and isinstance(_spec(d).get("clusterQueue"), str)}
    asked: dict[str, list[tuple[str, Resources, float | None]]] = {}
    for doc in sorted((d for d in docs if d.kind == "TFJob"), key=lambda d: (d.namespace, d.name)):
        label = doc.labels.get(QUEUE_NAME_LABEL)
        queue = local.get((doc.namespace, label)) if isinstance(label, str) else None
        if queue:
            requests = sum((pod_resources(p.spec).times(replicas(p, 0)) for p in manifests.pod_specs(doc)), ZERO)
            asked.setdefault(queue, []).append((f"{doc.namespace}/{doc.name}", requests, expected_hours(doc)))
    out = []
    for doc in sorted((d for d in docs if d.kind == "ClusterQueue"), key=lambda d: d.name):
        quota = free = _quota(doc)
        jobs = []
        for name, requests, hours in asked.get(doc.name, []):
            fits = free.fits(requests)
            if fits:
                free = free + requests.times(-1)
            jobs.append(QueuedJob(name, requests, waits=not fits, hours=hours))
        out.append(QueueUse(doc.name, quota, tuple(jobs), night_hours))
    return out


def _spec(doc: Doc) -> dict:
    spec = doc.obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def night_hours(config_path: Path | None = None) -> float | None:
    """The night of the current source's colocate.yaml, in hours; None without a schedule."""
    from colocate import config as config_mod

    schedule = (config_mod.load(config_path) if config_path else config_mod.load()).schedule
    return None if schedule is None else schedule.night_minutes / 60


def admitted_only(docs: list[Doc], uses: list[QueueUse]) -> list[Doc]:
    """``docs`` without the TFJobs that wait in a queue: suspended, they have no pod to place or to
    count against their namespace's quota until Kueue admits them."""
    waiting = {j.name for q in uses for j in q.waiting}
    return [d for d in docs if not (d.kind == "TFJob" and f"{d.namespace}/{d.name}" in waiting)]
