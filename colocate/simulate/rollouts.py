"""What the sync of a change did to running workloads: the Deployments and StatefulSets it
changed, rolled out or stuck, and the pods it replaced (simulate --base)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from colocate.simulate.local_cluster import ControlPlane, SimulationError

#: Kinds whose pod template change rolls their pods, with their API path.
ROLLING = {"Deployment": ("apps/v1", "Deployment"), "StatefulSet": ("apps/v1", "StatefulSet")}


@dataclass(frozen=True)
class Rollout:
    """One Deployment or StatefulSet the change changed: whether every replica runs the new
    template, and if not why (the quota's or the scheduler's words)."""

    workload: str
    done: bool
    updated: int
    desired: int
    reason: str = ""


def pods(cp: ControlPlane, tier: Callable[[dict], str]) -> dict[str, tuple[str, str]]:
    """namespace/name -> (uid, tier) of every pod."""
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": (p["metadata"]["uid"], tier(p))
            for p in cp.items("/api/v1/pods")}


def replaced(cp: ControlPlane, before: Mapping[str, tuple[str, str]]) -> list[str]:
    """Pods of ``before`` that are gone or were re-created since, online first: ``tier namespace/name``."""
    now = {name: uid for name, (uid, _) in pods(cp, lambda p: "").items()}
    gone = [f"{tier} {name}" for name, (uid, tier) in before.items() if now.get(name) != uid]
    return sorted(gone, key=lambda s: (not s.startswith("online "), s))


def rollouts(cp: ControlPlane, changed: list[str]) -> list[Rollout]:
    """Each changed ``Kind/namespace/name`` of a rolling kind, read after the cluster settled."""
    out = []
    for workload in changed:
        kind, _, rest = workload.partition("/")
        if kind not in ROLLING or "/" not in rest:
            continue
        namespace, name = rest.split("/", 1)
        try:
            obj = cp.request("GET", cp.path(*ROLLING[kind], namespace, name))
        except SimulationError:
            continue
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        desired = int(spec.get("replicas", 1))
        updated = int(status.get("updatedReplicas", 0))
        done = (status.get("observedGeneration", 0) >= obj["metadata"].get("generation", 0) and updated >= desired
                and int(status.get("replicas", 0)) == desired and int(status.get("readyReplicas", 0)) >= desired)
        out.append(Rollout(workload, done, updated, desired, "" if done else _why(cp, namespace, name)))
    return out


def _why(cp: ControlPlane, namespace: str, name: str) -> str:
    """The newest FailedCreate of the workload's ReplicaSets (a quota, a policy), else the
    scheduler's message on its Pending pods."""
    events = [e for e in cp.items(f"/api/v1/namespaces/{namespace}/events")
              if e.get("reason") == "FailedCreate" and (e.get("involvedObject") or {}).get("name", "").startswith(f"{name}")]
    if events:
        newest = max(events, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        return f"{newest['involvedObject']['kind']} {newest['involvedObject']['name']}: {newest.get('message', '')}"
    for pod in cp.items(f"/api/v1/namespaces/{namespace}/pods"):
        if pod["metadata"]["name"].startswith(f"{name}-") and (pod.get("status") or {}).get("phase") == "Pending":
            message = next((c.get("message", "") for c in pod["status"].get("conditions") or []
                            if c.get("type") == "PodScheduled" and c.get("status") == "False"), "")
            return f"pod {pod['metadata']['name']} Pending: {message or 'not yet scheduled'}"
    return "not every replica runs the new template and is ready"


def summary(items: list[Any]) -> list[str]:
    return [f"{r.workload}: " + ("rolled out" if r.done else f"STUCK, {r.updated} of {r.desired} replicas updated: {r.reason}")
            for r in items]
