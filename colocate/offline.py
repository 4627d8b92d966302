"""``colocate offline pause|resume``: stop the batch load without deleting a job, and start it again.

training-operator v1.7.0 honours ``spec.runPolicy.suspend``: set to true, it deletes the job's
active pods and marks it Suspended; set back to false, it creates them again and the job goes
on from its last checkpoint (pkg/controller.v1/common/job.go ReconcileJobs, v1.7.0). Pause
suspends every unfinished TFJob that is not already suspended and marks it with
``colocate.io/paused-by``, so resume starts only what pause stopped, never a job someone suspended
on purpose. Argo CD leaves both live edits alone: git sets neither field, and its three-way diff
only reverts fields that git or the last applied manifest set (docs/runbook-latency.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from colocate.model.names import PAUSED_BY_ANNOTATION

if TYPE_CHECKING:
    from colocate.kube import TFJobs

PAUSED_BY = "colocate-offline-pause"
_FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Change:
    name: str
    action: str  # "pause" | "resume"
    reason: str


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


def run(jobs: "TFJobs", namespace: str, action: str, dry_run: bool = False) -> list[Change]:
    """Plan ``action`` on the live TFJobs of ``namespace`` and send each patch (unless ``dry_run``).
    The CronJobs, the CLI and ``colocate simulate`` all come through here."""
    changes = plan(jobs.list(namespace), action)
    if not dry_run:
        for change in changes:
            jobs.merge_patch(namespace, change.name, patch(change))
    return changes
