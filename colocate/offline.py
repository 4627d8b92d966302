"""``colocate offline pause|resume``: stop the batch load without deleting a job, and start it again.

training-operator v1.7.0 honours ``spec.runPolicy.suspend``: set to true, it deletes the job's
active pods and marks it Suspended; set back to false, it creates them again and the job goes
on from its last checkpoint (pkg/controller.v1/common/job.go ReconcileJobs, v1.7.0). Pause
suspends every unfinished TFJob that is not already suspended and marks it with
``colocate.io/paused-by``, so resume starts only what pause stopped, never a job someone suspended
on purpose. Argo CD leaves both live edits alone: git sets neither field, and its three-way diff
only reverts fields that git or the last applied manifest set (docs/runbook-latency.md)."""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Iterable

from colocate.errors import ColocateError
from colocate.model.names import PAUSED_BY_ANNOTATION, TFJOB_GROUP, TFJOB_PLURAL

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
    """What pause or resume does to each TFJob, from their live state (``kubectl get -o json`` items)."""
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


class Kubectl:
    """The user's kubectl and kubeconfig; every failure is a ColocateError with kubectl's own words."""

    def __init__(self, binary: str, namespace: str):
        path = shutil.which(binary)
        if not path:
            raise ColocateError(f"kubectl not found ({binary!r}): install it (https://kubernetes.io/docs/tasks/tools/) "
                                "or pass --kubectl /path/to/kubectl")
        self.binary, self.namespace = path, namespace

    def _run(self, *args: str) -> str:
        proc = subprocess.run([self.binary, "--namespace", self.namespace, *args], capture_output=True, text=True,
                              timeout=120)
        if proc.returncode != 0:
            detail = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise ColocateError(f"kubectl {' '.join(args[:2])} in namespace {self.namespace} failed: {detail}")
        return proc.stdout

    def tfjobs(self) -> list[dict[str, Any]]:
        try:
            return json.loads(self._run("get", f"{TFJOB_PLURAL}.{TFJOB_GROUP}", "--output", "json"))["items"]
        except (ValueError, KeyError):
            raise ColocateError("kubectl get tfjobs did not return a JSON list") from None

    def apply(self, change: Change) -> None:
        self._run("patch", f"{TFJOB_PLURAL}.{TFJOB_GROUP}", change.name, "--type", "merge",
                  "--patch", json.dumps(patch(change)))
