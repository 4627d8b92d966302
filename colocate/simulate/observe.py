"""What the simulated cluster did, read back from the API server into one result model that the
text, JSON and Markdown renderers share."""
from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any, Mapping

from colocate.model import quantity
from colocate.model.names import GAVE_UP_REASON, GPU, RESUBMITTED_REASON
from colocate.model.pods import pod_resources
from colocate.simulate.local_cluster import ControlPlane

#: Pods a node counts: scheduled and not finished.
_DONE = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Rejected:
    """An object the API server refused, with its message."""

    source: str
    object: str
    message: str


@dataclass(frozen=True)
class Problem:
    """A controller's or the scheduler's warning about a workload or pod."""

    object: str
    reason: str
    message: str


@dataclass(frozen=True)
class PodState:
    namespace: str
    name: str
    tier: str
    owner: str
    node: str | None
    phase: str
    #: The scheduler's reason while the pod is not placed.
    reason: str = ""


@dataclass(frozen=True)
class NodeUse:
    node: str
    pool: str
    allocatable: Mapping[str, int]
    #: Requests of the pods on the node, by tier: {"online": {"cpu": milli, "memory": bytes, GPU: n}}.
    requested: Mapping[str, Mapping[str, int]]
    pods: int


@dataclass(frozen=True)
class Preemption:
    victim: str
    node: str
    preemptor: str


@dataclass
class Observation:
    scenario: str
    rejected: list[Rejected] = field(default_factory=list)
    failed_creates: list[Problem] = field(default_factory=list)
    pods: list[PodState] = field(default_factory=list)
    nodes: list[NodeUse] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)
    #: TFJob namespace/name -> its newest condition and that condition's message.
    tfjobs: dict[str, str] = field(default_factory=dict)
    tfjob_messages: dict[str, str] = field(default_factory=dict)
    #: Applications Argo CD could not render offline and what stands in for them.
    stand_ins: dict[str, str] = field(default_factory=dict)
    #: Every Argo CD Application after the first sync (argocd.AppState: name, sync, health, message,
    #: the resources it failed on, whether its source cannot render offline).
    applications: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Delete drill: per child Application, every object Argo CD deleted with it, stateful first.
    drills: dict[str, list[str]] = field(default_factory=dict)
    #: Tiers whose Pending pods the scenario allows (preempted training waits by design).
    may_wait: tuple[str, ...] = ()
    #: Whether ``colocate resubmitter`` ran beside the training-operator.
    resubmitter: bool = True
    #: TFJob namespace/name -> the messages of the Resubmitted / ResubmissionGivenUp Events on it.
    resubmissions: dict[str, list[str]] = field(default_factory=dict)
    given_up: dict[str, list[str]] = field(default_factory=dict)
    #: Pods evicted by the taint manager (namespace/name), besides the preempted ones.
    evicted: list[str] = field(default_factory=list)
    #: The scenario's steps (steps.StepReport), in order; hourly: they are the day's hours.
    steps: list[Any] = field(default_factory=list)
    hourly: bool = False
    #: Rule ids of the ValidatingAdmissionPolicies bound in the cluster once Argo CD synced
    #: (docs/admission.md): every pod and object after that was admitted by them.
    admission_policies: list[str] = field(default_factory=list)
    settled: bool = True
    seconds: float = 0.0
    #: With a base (simulate --base): per Application, what the sync of the change did
    #: (argocd.AppChange); None when dist/ was synced from nothing.
    change: list[Any] | None = None
    #: The Deployments and StatefulSets the change changed, rolled out or stuck (rollouts.Rollout).
    rollouts: list[Any] = field(default_factory=list)
    #: Pods the change's sync replaced or deleted, online first ("tier namespace/name").
    replaced: list[str] = field(default_factory=list)
    #: Objects other than pods that went with the change's sync though it did not prune them: the
    #: garbage collector's cascade from what it pruned (a TFJob's Services), a claim's volume.
    deleted_with: list[str] = field(default_factory=list)

    @property
    def change_failed(self) -> list[Any]:
        return [a for a in self.change or [] if not a.ok] + [r for r in self.rollouts if not r.done]

    @property
    def pending(self) -> list[PodState]:
        return [p for p in self.pods if p.node is None and p.phase == "Pending"]

    @property
    def failing_pending(self) -> list[PodState]:
        return [p for p in self.pending if p.tier not in self.may_wait]

    def disrupted_pods(self) -> dict[str, list[str]]:
        """TFJob -> its pods that were preempted or evicted (pod names are ``<job>-<replica>-<index>``)."""
        victims = sorted({p.victim for p in self.preemptions} | set(self.evicted))
        return {job: [v for v in victims if v.startswith(f"{job}-")] for job in self.tfjobs
                if any(v.startswith(f"{job}-") for v in victims)}

    @property
    def failed_by_preemption(self) -> list[str]:
        """Failed TFJobs that lost a pod to a disruption: a failure of the run (training that gives
        way must resume), named apart because the fix is resubmission, not the job."""
        return sorted(j for j in self.disrupted_pods() if self.tfjobs[j] == "Failed")

    @property
    def failed_jobs(self) -> list[str]:
        return sorted(j for j, state in self.tfjobs.items() if state == "Failed")

    @property
    def unplaced_online_steps(self) -> list[str]:
        return [s.name for s in self.steps if s.unplaced_online]

    @property
    def ok(self) -> bool:
        return self.settled and not (self.change_failed or self.rejected or self.failed_creates or self.failing_pending or self.failed_jobs
                                     or self.unplaced_online_steps or not all(s.settled for s in self.steps))


def tier_of(pod: Mapping[str, Any], tiers: Mapping[str, str]) -> str:
    """The colocate tier of a pod by its PriorityClass (``online-high`` -> online), else the class."""
    name = pod["spec"].get("priorityClassName") or "none"
    return tiers.get(name, name)


def owner_of(pod: Mapping[str, Any]) -> str:
    labels = pod["metadata"].get("labels") or {}
    if "training.kubeflow.org/job-name" in labels:
        return f"TFJob/{labels['training.kubeflow.org/job-name']}"
    refs = pod["metadata"].get("ownerReferences") or []
    return f"{refs[0]['kind']}/{refs[0]['name']}" if refs else "-"


def observe(cp: ControlPlane, obs: Observation, tiers: Mapping[str, str], pools: Mapping[str, str],
            since_events: str = "") -> Observation:
    """Fill ``obs`` from the cluster; ``pools`` maps node name -> pool; events older than the
    resourceVersion ``since_events`` are ignored for preemptions."""
    pods = cp.items("/api/v1/pods")
    nodes = cp.items("/api/v1/nodes")
    events = cp.items("/api/v1/events")
    obs.pods = sorted((_pod_state(p, tiers) for p in pods), key=lambda s: (s.namespace, s.name))
    use: dict[str, dict[str, dict[str, int]]] = {}
    counts: dict[str, int] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if not node or pod.get("status", {}).get("phase") in _DONE:
            continue
        counts[node] = counts.get(node, 0) + 1
        tier = use.setdefault(node, {}).setdefault(tier_of(pod, tiers), {"cpu": 0, "memory": 0, GPU: 0})
        requests = pod_resources(pod["spec"])
        tier["cpu"] += requests.cpu_milli
        tier["memory"] += requests.memory_bytes
        tier[GPU] += requests.gpus
    obs.nodes = [NodeUse(node=n["metadata"]["name"], pool=pools.get(n["metadata"]["name"], "-"),
                         allocatable=_allocatable(n), requested=use.get(n["metadata"]["name"], {}),
                         pods=counts.get(n["metadata"]["name"], 0))
                 for n in sorted(nodes, key=lambda n: n["metadata"]["name"])]
    obs.failed_creates, recovered = failed_creates(events)
    obs.notes.extend(f"{p.object} could not create a pod or Service at first, then did ({p.reason}: {p.message})"
                     for p in recovered if f"{p.object} could not create" not in " ".join(obs.notes))
    obs.preemptions = sorted({_preemption(e) for e in events if e.get("reason") == "Preempted"
                              and _newer(e, since_events)}, key=lambda p: (p.victim, p.node))
    # kubernetes v1.28.15 pkg/controller/nodelifecycle/scheduler/taint_manager.go emits
    # TaintManagerEviction "Marking for deletion Pod ..." on each pod it evicts.
    obs.evicted = sorted({f"{e['involvedObject'].get('namespace')}/{e['involvedObject'].get('name')}" for e in events
                          if e.get("reason") == "TaintManagerEviction" and e.get("message", "").startswith("Marking")
                          and _newer(e, since_events)})
    for event in sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"])):
        o = event.get("involvedObject") or {}
        if o.get("kind") == "TFJob" and event.get("reason") in (RESUBMITTED_REASON, GAVE_UP_REASON):
            into = obs.resubmissions if event["reason"] == RESUBMITTED_REASON else obs.given_up
            into.setdefault(f"{o.get('namespace')}/{o.get('name')}", []).append(event.get("message", ""))
    for job in cp.items("/apis/kubeflow.org/v1/tfjobs"):
        name = f"{job['metadata']['namespace']}/{job['metadata']['name']}"
        obs.tfjobs[name] = tfjob_state(job)
        obs.tfjob_messages[name] = _tfjob_message(job)
    return obs


def _pod_state(pod: Mapping[str, Any], tiers: Mapping[str, str]) -> PodState:
    status = pod.get("status") or {}
    reason = ""
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") != "True":
            reason = condition.get("message") or condition.get("reason") or ""
    meta = pod["metadata"]
    return PodState(namespace=meta["namespace"], name=meta["name"], tier=tier_of(pod, tiers), owner=owner_of(pod),
                    node=pod["spec"].get("nodeName"), phase=status.get("phase", "Pending"), reason=reason)


def _allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    a = node.get("status", {}).get("allocatable") or {}
    return {"cpu": quantity.millicores(a.get("cpu", 0)), "memory": quantity.to_bytes(a.get("memory", 0)),
            GPU: int(quantity.parse(a.get(GPU, 0)))}


#: training-operator v1.7.0 names what it failed to create (``pods "<name>" ...``) and what it
#: created (pkg/controller.v1/control/pod_control.go, service_control.go: SuccessfulCreatePod
#: "Created pod: %v", SuccessfulCreateService "Created service: %v").
_CREATED = {"FailedCreatePod": ("SuccessfulCreatePod", "Created pod: "),
            "FailedCreateService": ("SuccessfulCreateService", "Created service: ")}
_NAMED = re.compile(r'(?:pods|services) "([^"]+)"')
#: The API server's quota admission lost a race on the quota's status (kubernetes v1.28.15
#: staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go checkQuotas:
#: after 3 conflicting status updates it fails the create with the last 409). It names the quota,
#: not the pod, and says nothing about whether the pod fits: the controller's next try decides.
_QUOTA_CONFLICT = re.compile(r'Operation cannot be fulfilled on resourcequotas "[^"]+": the object has been modified')


def failed_creates(events) -> tuple[list[Problem], list[Problem]]:
    """(failed, recovered): one entry per workload and reason, with the newest message (a
    controller retries, and the quota in its message changes as other pods come and go).
    Recovered, not a failure: a pod or Service that the operator failed to create and then created
    under the same name (the API server busy, the old incarnation's pod not yet gone), and a quota
    conflict after which the same workload created a pod or Service of that kind."""
    ordered = sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))
    created: dict[tuple[str, str, str], int] = {}
    last_created: dict[tuple[str, str], int] = {}
    for event in ordered:
        for failed, (reason, prefix) in _CREATED.items():
            message = event.get("message", "").removeprefix("(combined from similar events): ")
            if event.get("reason") == reason and message.startswith(prefix):
                version = int(event["metadata"]["resourceVersion"])
                created[(_involved(event), failed, message.removeprefix(prefix))] = version
                last_created[(_involved(event), failed)] = version
    newest: dict[tuple[str, str], Mapping[str, Any]] = {}
    recovered: dict[tuple[str, str], Mapping[str, Any]] = {}
    for event in ordered:
        if event.get("type") == "Warning" and event["reason"].startswith("FailedCreate"):
            key = (_involved(event), event["reason"])
            message = event.get("message", "")
            if _QUOTA_CONFLICT.search(message):
                made = last_created.get(key, -1)
            elif named := _NAMED.search(message):
                made = created.get((*key, named.group(1)), -1)
            else:
                made = -1
            (recovered if made > int(event["metadata"]["resourceVersion"]) else newest)[key] = event

    def problems(found):
        return [Problem(obj, reason, event["message"].removeprefix("(combined from similar events): "))
                for (obj, reason), event in sorted(found.items())]
    return problems(newest), problems({k: v for k, v in recovered.items() if k not in newest})


def _involved(event: Mapping[str, Any]) -> str:
    o = event.get("involvedObject") or {}
    return "/".join(x for x in (o.get("kind"), o.get("namespace"), o.get("name")) if x)


def _preemption(event: Mapping[str, Any]) -> Preemption:
    # kube-scheduler v1.28.15 pkg/scheduler/framework/preemption/preemption.go prepareCandidate:
    # Eventf(victim, preemptor, Normal, "Preempted", "Preempting", "Preempted by a pod on node %v").
    victim, preemptor = event["involvedObject"], event.get("related") or {}
    return Preemption(victim=f"{victim.get('namespace')}/{victim.get('name')}",
                      node=event.get("message", "").rsplit(" ", 1)[-1],
                      preemptor=f"{preemptor.get('namespace')}/{preemptor.get('name')}")


def _newer(event: Mapping[str, Any], since: str) -> bool:
    return not since or int(event["metadata"]["resourceVersion"]) > int(since)


def _tfjob_message(job: Mapping[str, Any]) -> str:
    conditions = [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    return conditions[-1].get("message", "") if conditions else ""


def tfjob_state(job: Mapping[str, Any]) -> str:
    """The newest True condition (Created, Running, Restarting, Succeeded, Failed)."""
    conditions = [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    return conditions[-1]["type"] if conditions else "Pending"
