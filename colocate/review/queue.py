"""How much of the training a dist/ tree asks for waits in Kueue's queue.

Per ClusterQueue: its nominal quota, each TFJob that names one of its LocalQueues, and which
jobs wait on the first night (colocate/model/kueue_admission.py, the model the rules share).
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

from colocate.checker import manifests
from colocate.checker.manifests import Doc
from colocate.errors import InputError
from colocate.model import kueue_admission, resource_quota
from colocate.model.names import EXPECTED_HOURS_ANNOTATION, MAX_EXPECTED_HOURS
from colocate.model.pods import ZERO
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
    local = kueue_admission.cluster_queue_of(d for d in docs if d.kind == "LocalQueue")
    quotas = {d.name: kueue_admission.nominal_quota(d.obj) for d in docs if d.kind == "ClusterQueue"}
    asks, hours = [], {}
    for doc in docs:
        label = kueue_admission.queue_label(doc)
        if label is not None and (doc.namespace, label) in local:
            requests = resource_quota.pod_requests(resource_quota.contributions(doc, manifests.pod_specs(doc), ()))
            asks.append(kueue_admission.QueuedAsk(doc.namespace, doc.name, label, requests))
            hours[doc.namespace, doc.name] = expected_hours(doc)
    return [QueueUse(name, quotas[name], tuple(QueuedJob(f"{a.namespace}/{a.name}", a.requests, waits,
                                                         hours[a.namespace, a.name]) for a, waits in jobs), night_hours)
            for name, jobs in sorted(kueue_admission.first_night(quotas, local, asks).items())]


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
