"""``colocate offline pause|resume``: stop the batch load without deleting a job, and start it again.

training-operator v1.7.0 honours ``spec.runPolicy.suspend``: set to true, it deletes the job's
active pods and marks it Suspended; set back to false, it creates them again and the job goes
on from its last checkpoint (pkg/controller.v1/common/job.go ReconcileJobs, v1.7.0). Pause
suspends every unfinished TFJob that is not already suspended and marks it with
``colocate.io/paused-by``, so resume starts only what pause stopped, never a job someone suspended
on purpose. Argo CD leaves both live edits alone: git sets neither field, and its three-way diff
only reverts fields that git or the last applied manifest set (docs/runbook-latency.md).

With Kueue (docs/queue.md) pause and resume hold the training ClusterQueue instead: its
``spec.stopPolicy`` set to HoldAndDrain evicts every admitted workload, whose TFJob Kueue then
suspends, and admits none until it is None again. One object, so no job created, re-created or
resubmitted during the day escapes the pause, and no partial pause. The same annotation marks a
queue pause held, so resume never lifts a hold someone set on purpose."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from colocate.base.text import escape
from colocate.errors import ColocateError
from colocate.model.names import PAUSED_BY_ANNOTATION

if TYPE_CHECKING:
    from colocate.incluster.kube import ClusterQueues, TFJobs

PAUSED_BY = "colocate-offline-pause"
_FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Change:
    name: str
    action: str  # "pause" | "resume"
    reason: str


#: An object name the API server serves (a DNS-1123 subdomain, kubernetes v1.28.15
#: staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go IsDNS1123Subdomain).
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
#: Where each field the plan reads sits, and the type it must have when present.
_SHAPE = (("metadata", dict), ("metadata.annotations", dict), ("spec", dict), ("spec.runPolicy", dict),
          ("status", dict), ("status.conditions", list))


def _field(obj: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def check_shape(item: Any, what: str, kind: str) -> None:
    """Refuse (exit 2, before any patch) an API server item that is not the object asked for: a
    name that is no object name, a field the plan reads of the wrong type. The item's name is
    escaped in the message (the CLI escapes the error line as a whole too)."""
    if not isinstance(item, dict):
        raise ColocateError(f"{what}: an item is a {type(item).__name__}, not a {kind}")
    if item.get("kind") not in (None, kind):
        raise ColocateError(f"{what}: an item is a {escape(str(item.get('kind')))[:80]}, not a {kind}")
    for path, kind_of in _SHAPE:
        value = _field(item, path)
        if value is not None and not isinstance(value, kind_of):
            raise ColocateError(f"{what}: an item's {path} is a {type(value).__name__}, not a {kind_of.__name__}")
    name = _field(item, "metadata.name")
    if not isinstance(name, str) or len(name) > 253 or not _NAME.fullmatch(name):
        raise ColocateError(f"{what}: an item's metadata.name {escape(repr(name))[:80]} is not an object name")
    if not all(isinstance(c, dict) for c in _field(item, "status.conditions") or []):
        raise ColocateError(f"{what}: {kind} {name}'s status.conditions holds a value that is not a condition")


def _true(job: dict[str, Any], condition: str) -> bool:
    return any(c.get("type") == condition and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _suspended(job: dict[str, Any]) -> bool:
    return bool(((job.get("spec") or {}).get("runPolicy") or {}).get("suspend"))


def plan(jobs: Iterable[dict[str, Any]], action: str) -> list[Change]:
    """What pause or resume does to each TFJob, from their live state (the API server's list items)."""
    out = []
    for job in sorted(jobs, key=lambda j: j["metadata"]["name"]):
        name = job["metadata"]["name"]
        ours = (job["metadata"].get("annotations") or {}).get(PAUSED_BY_ANNOTATION) == PAUSED_BY
        if action == "pause" and not _suspended(job) and not any(_true(job, c) for c in _FINISHED):
            out.append(Change(name, "pause", "unfinished and running or waiting"))
        elif action == "resume" and ours:
            out.append(Change(name, "resume", f"paused by {PAUSED_BY}"))
    return out


def patch(change: Change) -> dict[str, Any]:
    """The JSON merge patch for a change: suspend and mark, or resume and unmark."""
    pause = change.action == "pause"
    return {"metadata": {"annotations": {PAUSED_BY_ANNOTATION: PAUSED_BY if pause else None}},
            "spec": {"runPolicy": {"suspend": pause}}}


def run(jobs: "TFJobs", namespace: str, action: str, dry_run: bool = False, wait_seconds: float = 120.0,
        log=lambda line: None) -> list[Change]:
    """Plan ``action`` on the live TFJobs of ``namespace`` and send each patch (unless ``dry_run``).
    The CronJobs, the CLI and ``colocate simulate`` all come through here.

    Resume waits until a paused job's pods are gone: training-operator v1.7.0 counts a pod that is
    still terminating (Running, with a deletionTimestamp) as a failed replica (pkg/core/status.go
    UpdateJobReplicaStatuses), so un-suspending before the old pods left would fail the job.
    A job whose pods are still there after ``wait_seconds`` stays paused and is an error."""
    listed = jobs.list(namespace)
    for item in listed:
        check_shape(item, f"list tfjobs in {namespace}", "TFJob")
    changes = plan(listed, action)
    if dry_run:
        return changes
    waiting = [c for c in changes if c.action == "resume"]
    deadline = time.monotonic() + wait_seconds
    for change in changes:
        if change.action == "pause":
            jobs.merge_patch(namespace, change.name, patch(change))
    while waiting:
        for change in list(waiting):
            left = jobs.pods(namespace, change.name)
            if not left:
                jobs.merge_patch(namespace, change.name, patch(change))
                waiting.remove(change)
            elif time.monotonic() > deadline:
                raise ColocateError(f"resume tfjob {namespace}/{change.name}: its pods {', '.join(left[:3])} are "
                                    f"still terminating after {wait_seconds:.0f} s; it stays paused (resuming now "
                                    "would fail it). Run resume again once they are gone")
        if waiting:
            log(f"waiting for the pods of {', '.join(c.name for c in waiting)} to be gone before resuming")
            time.sleep(1.0)
    return changes


#: ClusterQueue ``spec.stopPolicy`` per action (kueue v0.10.6 apis/kueue/v1beta1/clusterqueue_types.go).
STOP_POLICY = {"pause": "HoldAndDrain", "resume": "None"}


def plan_hold(queue: dict[str, Any], action: str) -> Change | None:
    """What pause or resume does to a ClusterQueue, from its live state: pause holds and drains it
    unless it is already; resume releases it only when pause held it."""
    name = (queue.get("metadata") or {}).get("name", "")
    stop = (queue.get("spec") or {}).get("stopPolicy") or "None"
    ours = ((queue.get("metadata") or {}).get("annotations") or {}).get(PAUSED_BY_ANNOTATION) == PAUSED_BY
    if action == "pause" and stop != STOP_POLICY["pause"]:
        return Change(name, "pause", f"stopPolicy {stop} -> {STOP_POLICY['pause']}")
    if action == "resume" and ours:
        return Change(name, "resume", f"held by {PAUSED_BY}: stopPolicy {stop} -> {STOP_POLICY['resume']}")
    return None


def hold_patch(change: Change) -> dict[str, Any]:
    """The JSON merge patch for a queue change: hold and mark, or release and unmark."""
    pause = change.action == "pause"
    return {"metadata": {"annotations": {PAUSED_BY_ANNOTATION: PAUSED_BY if pause else None}},
            "spec": {"stopPolicy": STOP_POLICY[change.action]}}


def hold(queues: "ClusterQueues", name: str, action: str, dry_run: bool = False, jobs: "TFJobs | None" = None,
         namespaces: Sequence[str] = (), wait_seconds: float = 120.0, log=lambda line: None) -> list[Change]:
    """Plan ``action`` on the live ClusterQueue ``name`` and send its patch (unless ``dry_run``).

    Resume first waits until no training pod of ``namespaces`` is still terminating: released,
    Kueue readmits the suspended jobs at once, and training-operator v1.7.0 counts a paused pod
    that is still terminating as a failed replica (pkg/core/status.go UpdateJobReplicaStatuses),
    so the job would fail. Pods still there after ``wait_seconds``: the queue stays held, an error."""
    queue = queues.get(name)
    check_shape(queue, f"get clusterqueue {name}", "ClusterQueue")
    change = plan_hold(queue, action)
    if change is None or dry_run:
        return [change] if change else []
    deadline = time.monotonic() + wait_seconds
    while change.action == "resume" and jobs is not None:
        left = [f"{ns}/{pod}" for ns in namespaces for pod in jobs.terminating_pods(ns)]
        if not left:
            break
        if time.monotonic() > deadline:
            raise ColocateError(f"resume clusterqueue {name}: paused pods {', '.join(left[:3])} are still terminating "
                                f"after {wait_seconds:.0f} s; it stays held (releasing now would fail their jobs). "
                                "Run resume again once they are gone")
        log(f"waiting for the paused pods {', '.join(left[:3])} to be gone before releasing {name}")
        time.sleep(1.0)
    queues.merge_patch(name, hold_patch(change))
    return [change]
