"""Scenarios in steps: at each step the simulation runs the step's actions (the schedule's
``offline pause|resume``, a lost node), sets the online replicas, lets the cluster settle and
records what it holds: online pods desired and placed, training pods, requests per pool and tier,
preemptions and resubmissions. The ``day`` scenario is 25 hour steps (docs/simulate.md)."""
from __future__ import annotations

import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

from colocate.model import quantity
from colocate.model.names import BLOCKED_METRIC, BLOCKED_REASON, GPU, JOB_NAME_LABEL, PEAK_REPLICAS_ANNOTATION, RESUBMITTED_REASON
from colocate.model.pods import pod_resources
from colocate.simulate.argocd import syncs_started
from colocate.simulate.charts import PoolHour
from colocate.simulate.local_cluster import ControlPlane, SimulationError
from colocate.simulate.nodes import KWOK_LABEL
from colocate.simulate.observe import tfjob_state

#: The NoExecute taint of a node declared out of service (non-graceful node shutdown, GA in 1.28:
#: kubernetes v1.28.15 pkg/controller/podgc/gc_controller.go, k8s.io/api core/v1 well_known_taints.go).
OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}
_DONE = ("Succeeded", "Failed")
KUEUE_API = "kueue.x-k8s.io/v1beta1"


@dataclass(frozen=True)
class Step:
    """What the scenario does at one step."""

    name: str
    #: Replicas by workload (``Deployment/online/recsys-inference``), absolute.
    scale: Mapping[str, int] = field(default_factory=dict)
    #: ``colocate offline pause`` or ``resume`` before the replicas change.
    offline: str | None = None
    #: A node of this pool is lost: tainted out of service, so the taint manager evicts its pods
    #: (``lose_mode`` outOfService), or its kubelet stops reporting (notReady).
    lose_node: str | None = None
    #: What else the step is, for the report ("spike").
    notes: tuple[str, ...] = ()
    #: A job whose file is deleted from git (its TFJob and checkpoint claim leave dist/).
    remove_job: str | None = None
    #: Job files added to git (paths relative to the scenario), synced before the replicas change.
    add_jobs: tuple[str, ...] = ()
    #: Jobs whose training ends now: their pods exit 0. Each entry names one job, or several of
    #: which the first that runs ends (Kueue's order among jobs created in one second is not fixed).
    finish_jobs: tuple[tuple[str, ...], ...] = ()
    lose_mode: str = "outOfService"
    #: The runbook's step: nodes lost notReady in this run are tainted out of service.
    out_of_service: bool = False


@dataclass
class StepReport:
    name: str
    actions: list[str] = field(default_factory=list)
    online_desired: int = 0
    online_placed: int = 0
    #: Online pods not placed at this step: namespace/name and the scheduler's reason.
    unplaced_online: list[str] = field(default_factory=list)
    training_running: int = 0
    training_pending: int = 0
    #: Per TFJob with pods placed and pods waiting: the GPUs its placed pods hold (all-reduce
    #: waits for every worker, so they hold them doing nothing).
    partly_placed: dict[str, int] = field(default_factory=dict)
    #: Replicas of suspended TFJobs (their pods are gone while paused).
    training_suspended: int = 0
    #: Kueue's Workloads (when it admits training): admitted and not finished, and waiting in the
    #: queue (neither admitted nor finished). None without Kueue.
    queue_admitted: int | None = None
    queue_waiting: int | None = None
    #: Per job waiting in the queue: since when (its TFJob's arrival), and Kueue's reason.
    waiting_since: dict[str, str] = field(default_factory=dict)
    waiting_reason: dict[str, str] = field(default_factory=dict)
    #: Requests by tier against allocatable, per pool and resource (hour = the step's index).
    use: list[PoolHour] = field(default_factory=list)
    preemptions: int = 0
    resubmissions: int = 0
    #: The resubmitter's ResubmissionBlocked Events in this step: what holds each job.
    blocked: list[str] = field(default_factory=list)
    #: Its gauge colocate_tfjob_resubmission_blocked at the end of the step, per namespace/job at 1.
    blocked_gauge: list[str] = field(default_factory=list)
    tfjobs: dict[str, str] = field(default_factory=dict)
    #: Per Argo CD Application, how many sync operations it has run so far (its history).
    argocd_operations: dict[str, int] = field(default_factory=dict)
    #: Per Argo CD Application, how many automated syncs it has started so far: the controller's
    #: OperationStarted events, one per sync (argo-cd v2.10.15 controller/appcontroller.go autoSync,
    #: "Initiated automated sync"). Unlike the history, kept to 10 entries, it shows a sync loop.
    argocd_syncs: dict[str, int] = field(default_factory=dict)
    #: Per Argo CD Application, its sync status (Synced, OutOfSync) at the end of the step.
    argocd_sync_status: dict[str, str] = field(default_factory=dict)
    #: removeJob: per Application that synced the job, the syncs it started once the job's
    #: objects were pruned, over two resync periods (0 when nothing holds it OutOfSync).
    argocd_syncs_after_prune: dict[str, int] = field(default_factory=dict)
    settled: bool = True


def plan(scenario, docs, schedule, config_file: str = "colocate.yaml") -> list[Step]:
    """The steps a scenario plays: its own list, or the day's 25 hours from the schedule."""
    from colocate.errors import InputError

    normal = {workload_key(d): int(d["spec"].get("replicas", 1)) for _, d in docs
              if d["kind"] in ("Deployment", "StatefulSet")}
    peak = {workload_key(d): int(d["metadata"]["annotations"][PEAK_REPLICAS_ANNOTATION]) for _, d in docs
            if d["kind"] in ("Deployment", "StatefulSet") and PEAK_REPLICAS_ANNOTATION in (d["metadata"].get("annotations") or {})}
    for where, scale in [(f"steps[{i}].scale", s.get("scale") or {}) for i, s in enumerate(scenario.steps)] + \
            [("day.spike.scale", ((scenario.day or {}).get("spike") or {}).get("scale") or {}),
             ("day.curves", (scenario.day or {}).get("curves") or {})]:
        unknown = sorted(set(scale) - set(normal))
        if unknown:
            raise InputError(f"scenario {scenario.name}", where, f"no such workload in dist/: {', '.join(unknown)}; "
                             f"workloads: {', '.join(sorted(normal))}")
    if scenario.steps:
        return [Step(s["name"], {**(peak if s.get("peak") else {k: normal[k] for k in peak} if s.get("peak") is False
                                    else {}), **(s.get("scale") or {})}, s.get("offline"), _lost_pool(s.get("loseNode")),
                     remove_job=s.get("removeJob"), add_jobs=tuple(filter(None, [s.get("addJob")])),
                     finish_jobs=tuple(_candidates(j) for j in [s.get("finishJob")] if j),
                     lose_mode=(s.get("loseNode") or {}).get("mode", "outOfService") if isinstance(s.get("loseNode"), dict)
                     else "outOfService", out_of_service=bool(s.get("outOfService")))
                for s in scenario.steps]
    if scenario.day is None:
        return []
    if schedule is None:
        raise InputError(config_file, "$.schedule", "missing: the day scenario pauses and resumes training at "
                         "the schedule's edges (docs/schedule.md)")
    curves = scenario.day.get("curves") or {}
    spike = scenario.day.get("spike") or {}
    events = scenario.day.get("events") or []
    steps = []
    for hour in range(25):
        minute = hour * 60
        inside = (schedule.peak_start <= minute < schedule.peak_end if schedule.peak_start < schedule.peak_end
                  else minute >= schedule.peak_start or minute < schedule.peak_end)
        scale = {}
        for key in peak:
            fraction = curves[key][hour] if key in curves else (1.0 if inside else 0.0)
            scale[key] = normal[key] + round(fraction * (peak[key] - normal[key]))
        actions = []
        if hour == spike.get("hour"):
            scale.update(spike.get("scale") or peak)
            actions.append("spike")
        offline = next((a for a, at in (("pause", schedule.pause_at), ("resume", schedule.resume_at))
                        if (hour - 1) * 60 < at <= minute), None)
        steps.append(Step(f"{hour:02d}:00", scale, offline, None, tuple(actions),
                          add_jobs=tuple(e["addJob"] for e in events if e["hour"] == hour and "addJob" in e),
                          finish_jobs=tuple(_candidates(e["finishJob"]) for e in events
                                            if e["hour"] == hour and "finishJob" in e)))
    return steps


def _candidates(finish: str | list[str]) -> tuple[str, ...]:
    return (finish,) if isinstance(finish, str) else tuple(finish)


def _lost_pool(lose: str | Mapping[str, Any] | None) -> str | None:
    return lose.get("pool") if isinstance(lose, Mapping) else lose


def workload_key(doc: Mapping[str, Any]) -> str:
    return f"{doc['kind']}/{doc['metadata']['namespace']}/{doc['metadata']['name']}"


def lose_node(cp: ControlPlane, pool: str, node_pool: Mapping[str, str], mode: str = "outOfService") -> str:
    """Lose the node of ``pool`` that runs the most training pods (``mode``: out of service, or
    silent, for ``stop_reporting``); its name."""
    pods = [p for p in cp.items("/api/v1/pods") if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]
    candidates = sorted(n for n, p in node_pool.items() if p == pool)
    if not candidates:
        raise ValueError(f"no node in pool {pool}")
    node = max(candidates, key=lambda n: (sum(1 for p in pods if p["spec"]["nodeName"] == n
                                              and JOB_NAME_LABEL in (p["metadata"].get("labels") or {})), n))
    if mode == "notReady":
        stop_reporting(cp, node)
    else:
        out_of_service(cp, node)
    return node


def stop_reporting(cp: ControlPlane, node: str, timeout: float = 240.0) -> str:
    """The node's kubelet stops reporting: kwok no longer manages it (its label selector,
    nodes.KWOK_LABEL), so neither its lease nor its pods are updated. Waits until the node
    controller has marked it NotReady (--node-monitor-grace-period) and the taint manager has
    deleted its pods (after their toleration of node.kubernetes.io/unreachable). Returns since when
    it is NotReady."""
    key, _ = KWOK_LABEL
    cp.request("PATCH", f"/api/v1/nodes/{node}", {"metadata": {"labels": {key: None}}},
               content_type="application/merge-patch+json")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cp.check_alive()
        ready = next((c for c in cp.request("GET", f"/api/v1/nodes/{node}")["status"].get("conditions") or []
                      if c["type"] == "Ready"), {})
        pods = [p for p in cp.items(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")
                if JOB_NAME_LABEL in (p["metadata"].get("labels") or {})]
        if ready.get("status") != "True" and all(p["metadata"].get("deletionTimestamp") for p in pods):
            return ready.get("lastTransitionTime", "")
        time.sleep(1)
    raise SimulationError(f"node {node} stopped reporting, but after {timeout:.0f} s it is not NotReady with its "
                          "training pods deleted")


def finish_job(cp: ControlPlane, candidates: tuple[str, ...]) -> str:
    """Training of the first TFJob of ``candidates`` that has running pods ends: each of its running
    pods exits 0, written as kwok writes a completed pod (kwok/stages.yaml pod-complete).
    training-operator v1.7.0 then marks the TFJob Succeeded (its Chief succeeded,
    pkg/controller.v1/tensorflow/tfjob_controller.go UpdateJobStatus) and Kueue finishes its
    Workload and frees its quota. Returns what it did."""
    tfjobs = {j["metadata"]["name"]: j for j in cp.items("/apis/kubeflow.org/v1/tfjobs")}
    missing = [job for job in candidates if job not in tfjobs]
    if missing:
        raise SimulationError(f"finishJob: no TFJob {', '.join(missing)}")
    for job in candidates:
        namespace = tfjobs[job]["metadata"]["namespace"]
        selector = urllib.parse.quote(f"{JOB_NAME_LABEL}={job}")
        pods = [p for p in cp.items(f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}")
                if not p["metadata"].get("deletionTimestamp") and (p.get("status") or {}).get("phase") == "Running"]
        if pods:
            _complete(cp, namespace, pods)
            return f"job {job} finished: {len(pods)} pod(s) exited 0"
    if len(candidates) == 1:
        raise SimulationError(f"finishJob: TFJob {candidates[0]} has no running pod (is it admitted?)")
    raise SimulationError(f"finishJob: none of the TFJobs {', '.join(candidates)} has a running pod (are they admitted?)")


def _complete(cp: ControlPlane, namespace: str, pods: list) -> None:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for pod in pods:
        status = {"phase": "Succeeded", "conditions": [
            {"type": t, "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}
            for t in ("ContainersReady", "Ready")],
            "containerStatuses": [{"name": c["name"], "image": c["image"], "ready": False, "restartCount": 0,
                                   "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": now}}}
                                  for c in pod["spec"]["containers"]]}
        cp.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/status", {"status": status},
                   content_type="application/strategic-merge-patch+json")


def wait_event(cp: ControlPlane, reason: str, since: str, timeout: float) -> bool:
    """Wait until an Event with ``reason`` newer than resourceVersion ``since`` exists; False at timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cp.check_alive()
        if any(e.get("reason") == reason and int(e["metadata"]["resourceVersion"]) > int(since)
               for e in cp.items("/api/v1/events")):
            return True
        time.sleep(1)
    return False


def wait_gone_from(cp: ControlPlane, nodes: list[str], timeout: float) -> bool:
    """Wait until no pod is left on ``nodes``, but DaemonSet pods (which tolerate every taint); False at timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cp.check_alive()
        left = [p for node in nodes for p in cp.items(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")
                if not any(o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences") or [])]
        if not left:
            return True
        time.sleep(1)
    return False


def out_of_service(cp: ControlPlane, node: str) -> None:
    """Taint ``node`` out of service (NoExecute): the taint manager evicts every pod that does not
    tolerate it, with DisruptionTarget reason DeletionByTaintManager."""
    current = cp.request("GET", f"/api/v1/nodes/{node}")
    taints = [*(current["spec"].get("taints") or []), OUT_OF_SERVICE]
    cp.request("PATCH", f"/api/v1/nodes/{node}", {"spec": {"taints": taints}}, content_type="application/merge-patch+json")


def report(cp: ControlPlane, step: StepReport, index: int, tiers: Mapping[str, str], node_pool: Mapping[str, str],
           tier_of: Callable[[Mapping[str, Any], Mapping[str, str]], str], since_events: str,
           queued: bool = False) -> StepReport:
    """Fill ``step`` from the cluster as it is now; events newer than ``since_events`` count;
    ``queued``: Kueue admits training, so its Workloads are counted too."""
    if queued:
        _queue(cp, step)
    if "resubmitter" in cp.metrics:
        step.blocked_gauge = _blocked_gauge(cp.metrics["resubmitter"])
    pods = cp.items("/api/v1/pods")
    online_ns = set()
    for kind in ("deployments", "statefulsets"):
        for w in cp.items(f"/apis/apps/v1/{kind}"):
            template = w["spec"]["template"]
            if tier_of(template, tiers) == "online":
                step.online_desired += int(w["spec"].get("replicas", 1))
                online_ns.add(w["metadata"]["namespace"])
    held: dict[str, int] = {}  # per TFJob, GPUs of its placed pods
    waiting: set[str] = set()  # TFJobs with a pod not placed
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp") or pod.get("status", {}).get("phase") in _DONE:
            continue
        tier = tier_of(pod, tiers)
        placed = bool(pod["spec"].get("nodeName"))
        if tier == "online":
            if placed:
                step.online_placed += 1
            else:
                step.unplaced_online.append(f"{pod['metadata']['namespace']}/{pod['metadata']['name']}: "
                                            + _unschedulable(pod))
        if job := (pod["metadata"].get("labels") or {}).get(JOB_NAME_LABEL):
            key = f"{pod['metadata']['namespace']}/{job}"
            if placed:
                step.training_running += 1
                held[key] = held.get(key, 0) + pod_resources(pod["spec"]).gpus
            else:
                step.training_pending += 1
                waiting.add(key)
    step.partly_placed = {job: held[job] for job in sorted(waiting & held.keys())}
    for job in cp.items("/apis/kubeflow.org/v1/tfjobs"):
        name = f"{job['metadata']['namespace']}/{job['metadata']['name']}"
        step.tfjobs[name] = tfjob_state(job)
        if ((job.get("spec") or {}).get("runPolicy") or {}).get("suspend"):
            step.training_suspended += sum(int(r.get("replicas", 1)) for r in job["spec"]["tfReplicaSpecs"].values())
    step.use = _use(index, pods, cp.items("/api/v1/nodes"), tiers, node_pool, tier_of)
    for app in cp.items("/apis/argoproj.io/v1alpha1/applications"):
        status = app.get("status") or {}
        # Each finished sync adds a history entry (argo-cd v2.10.15 controller/
        # state.go persistRevisionHistory, kept to revisionHistoryLimit, 10); the one under way counts too.
        running = (status.get("operationState") or {}).get("phase") == "Running"
        step.argocd_operations[app["metadata"]["name"]] = len(status.get("history") or []) + running
        step.argocd_sync_status[app["metadata"]["name"]] = (status.get("sync") or {}).get("status", "Unknown")
        step.argocd_syncs.setdefault(app["metadata"]["name"], 0)
    for app, count in syncs_started(cp).items():
        step.argocd_syncs[app] = count
    for event in cp.items("/api/v1/events"):
        if since_events and int(event["metadata"]["resourceVersion"]) <= int(since_events):
            continue
        if event.get("reason") == "Preempted":
            step.preemptions += 1
        elif event.get("reason") == RESUBMITTED_REASON:
            step.resubmissions += 1
        elif event.get("reason") == BLOCKED_REASON:
            involved = event.get("involvedObject") or {}
            step.blocked.append(f"{involved.get('namespace')}/{involved.get('name')}: {event.get('message', '')}")
    return step


def _blocked_gauge(url: str) -> list[str]:
    """namespace/tfjob of each series of the resubmitter's blocked gauge at 1 (its /metrics)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            text = answer.read().decode()
    except OSError:
        return []
    return sorted(f"{s.labels['namespace']}/{s.labels['tfjob']}" for family in text_string_to_metric_families(text)
                  if family.name == BLOCKED_METRIC for s in family.samples if s.value == 1)


def _queue(cp: ControlPlane, step: StepReport) -> None:
    """Kueue's Workloads by state (apis/kueue/v1beta1/workload_types.go conditions: Admitted,
    Finished); a waiting job's wait counts from its TFJob's creation, its place in the queue."""
    step.queue_admitted = step.queue_waiting = 0
    for workload in cp.items(f"/apis/{KUEUE_API}/workloads"):
        listed = (workload.get("status") or {}).get("conditions") or []
        conditions = {c["type"]: c.get("status") == "True" for c in listed}
        if conditions.get("Finished"):
            continue
        # An evicted Workload keeps its admission until its job has stopped (kueue v0.10.6
        # jobframework/reconciler.go): it already waits again.
        if conditions.get("Admitted") and not conditions.get("Evicted"):
            step.queue_admitted += 1
            continue
        step.queue_waiting += 1
        owners = [o["name"] for o in workload["metadata"].get("ownerReferences") or [] if o.get("kind") == "TFJob"]
        job = f"{workload['metadata']['namespace']}/{owners[0] if owners else workload['metadata']['name']}"
        step.waiting_since[job] = workload["metadata"].get("creationTimestamp", "")
        # QuotaReserved False says why (pkg/workload/workload.go UnsetQuotaReservationWithCondition);
        # an eviction under way, Evicted (e.g. "Exceeded the PodsReady timeout", workload_controller.go).
        said = [c.get("message", "") for c in listed if (c["type"], conditions[c["type"]]) in
                {("Evicted", True), ("QuotaReserved", False)}]
        step.waiting_reason[job] = "; ".join(dict.fromkeys(m for m in said if m))


def _unschedulable(pod: Mapping[str, Any]) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") != "True":
            return condition.get("message") or condition.get("reason") or "not scheduled"
    return "not yet scheduled"


def _use(index, pods, nodes, tiers, node_pool, tier_of) -> list[PoolHour]:
    allocatable: dict[str, dict[str, float]] = {}
    for node in nodes:
        pool = node_pool.get(node["metadata"]["name"])
        if pool is None:
            continue
        a = node.get("status", {}).get("allocatable") or {}
        ready = not any(t.get("effect") == "NoExecute" for t in node["spec"].get("taints") or [])
        got = allocatable.setdefault(pool, {"cpu": 0.0, "memory": 0.0, "gpu": 0.0})
        if ready:  # a node that is out of service offers nothing
            got["cpu"] += quantity.millicores(a.get("cpu", 0)) / 1000
            got["memory"] += quantity.to_bytes(a.get("memory", 0)) / 2**30
            got["gpu"] += float(quantity.parse(a.get(GPU, 0)))
    requested: dict[tuple[str, str], dict[str, float]] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if not node or node not in node_pool or pod.get("status", {}).get("phase") in _DONE:
            continue
        r = pod_resources(pod["spec"])
        tier = tier_of(pod, tiers)
        for resource, value in (("cpu", r.cpu_milli / 1000), ("memory", r.memory_bytes / 2**30), ("gpu", float(r.gpus))):
            by_tier = requested.setdefault((node_pool[node], resource), {})
            by_tier[tier] = by_tier.get(tier, 0.0) + value
    return [PoolHour(index, pool, resource, dict(sorted(requested.get((pool, resource), {}).items())), totals[resource])
            for pool, totals in sorted(allocatable.items()) for resource in ("cpu", "memory", "gpu")]
