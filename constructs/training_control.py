"""What colocate itself runs in the cluster to steer training, in colocate's image
(docs/training-control.md):

* ``Resubmitter``: the Deployment of ``colocate resubmitter``, which re-creates TFJobs that failed
  because a pod of theirs was disrupted (docs/resubmission.md), with its RBAC, Service,
  ServiceMonitor and PodDisruptionBudget;
* ``OfflineSchedule``: the CronJobs that run ``colocate offline pause`` before the day peak and
  ``colocate offline resume`` after it (docs/schedule.md), with their RBAC.

Both run as a non-root user with nothing but their service account's token, on a pool training
cannot use (the tainted monitoring pool), at a PriorityClass above the offline tier; their
rights are namespaced Roles, one per training namespace, and nothing cluster-wide.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from constructs import Construct

from colocate.model import quantity
from colocate.config import Schedule
from colocate.constructs._k8s import emit
from colocate.constructs.node_pool import NodePool
from colocate.constructs.service_monitor import ServiceMonitor, ServiceMonitorProps
from colocate.errors import PropError
from colocate.rules.admission import API_VERSION as ADMISSION_API_VERSION
from colocate.model.names import (BLOCKED_METRIC, DISRUPTION_ANNOTATION, GIVEN_UP_METRIC, GUARD_ANNOTATIONS, KUEUE_API,
                                   NAME_LABEL, RESUBMISSIONS_ANNOTATION, RESUBMISSIONS_METRIC, TFJOB_GROUP, TFJOB_PLURAL)
from colocate.model.validate import check_dns_label, check_image, check_pull_secret, check_required_labels, pull_secrets

#: The user the Dockerfile creates (``USER 10001:10001``); the kubelet proves runAsNonRoot only
#: for a numeric user, so the pods name it too (tests/test_dockerfile.py holds them equal).
IMAGE_UID = 10001
#: ``colocate resubmitter --metrics-port``: prometheus_client's HTTP server, ``/metrics``.
METRICS_PORT = 8080
METRICS_PORT_NAME = "metrics"
#: Rules the resubmitter needs in each training namespace (colocate/incluster/resubmit/): it watches pods
#: for the disruption evidence (kopf's watch, and a list of a job's pods), watches, patches,
#: deletes and re-creates TFJobs (colocate/incluster/kube.py TFJobs), and creates a new core Event for each
#: Resubmitted / ResubmissionGivenUp (controller.py ``_event``; kopf's own posting is off). Only
#: the verbs those calls use: no Event patch, no events.k8s.io.
#: The annotations whose values the resubmitter decides on and only it may write.
RESUBMITTER_ANNOTATIONS = (DISRUPTION_ANNOTATION, RESUBMISSIONS_ANNOTATION)
RESUBMITTER_RULES = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [TFJOB_GROUP], "resources": [TFJOB_PLURAL],
     "verbs": ["get", "list", "watch", "create", "delete", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
)
#: ``colocate offline pause|resume`` lists the TFJobs of a namespace and merge-patches
#: ``spec.runPolicy.suspend`` and one annotation (colocate/incluster/offline.py); get for a retry. Resume
#: lists a paused job's pods and waits until they are gone (a terminating pod fails the job).
SCHEDULE_RULES = (
    {"apiGroups": [TFJOB_GROUP], "resources": [TFJOB_PLURAL], "verbs": ["get", "list", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
)
#: With Kueue the schedule holds the ClusterQueue; in each training namespace it only lists the
#: training pods, so resume waits until the paused ones are gone (offline.hold).
QUEUE_SCHEDULE_RULES = ({"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},)


@dataclass(frozen=True)
class ControlPod:
    """What every pod colocate runs in the cluster shares: image, priority, placement."""

    #: colocate's image, ``<registry>/<project>/colocate:<release>`` (``Config.colocate_image``).
    image: str
    #: PriorityClass; above the offline tier, so training never preempts it.
    priority_class: str
    #: The pool the pods run on: one training cannot fill (its taint keeps training off).
    pool: NodePool
    #: Existing Secret the kubelet pulls the image with (a private Harbor project). Default: none.
    image_pull_secret: str | None = None

    def validate(self, where: str) -> None:
        check_image(where, "pod.image", self.image, example="harbor.example.com/platform/colocate:2026.12.0")
        check_pull_secret(where, "pod.image_pull_secret", self.image_pull_secret)
        check_dns_label(where, "pod.priority_class", self.priority_class)

    def spec(self, service_account: str, container: dict, **extra) -> dict:
        """A pod spec: the pool's node selector and tolerations, non-root with a read-only root
        file system and no capabilities (the restricted Pod Security level), /tmp writable."""
        return {
            "serviceAccountName": service_account,
            "priorityClassName": self.priority_class,
            "nodeSelector": dict(self.pool.labels),
            "tolerations": self.pool.tolerations(),
            "securityContext": {"runAsNonRoot": True, "runAsUser": IMAGE_UID, "runAsGroup": IMAGE_UID,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                **container,
                "image": self.image,
                "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
            }],
            "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
            **extra,
            **pull_secrets(self.image_pull_secret),
        }


def _resources(cpu: str, cpu_limit: str, memory: str) -> dict:
    """Requests and limits: memory request == limit (not compressible), CPU may burst."""
    return {"requests": {"cpu": quantity.canonical(cpu, "cpu"), "memory": quantity.canonical(memory, "memory")},
            "limits": {"cpu": quantity.canonical(cpu_limit, "cpu"), "memory": quantity.canonical(memory, "memory")}}


def grant(scope: Construct, id: str, *, name: str, namespace: str, rules: Sequence[Mapping],
          service_account: str, service_account_namespace: str) -> None:
    """A Role with ``rules`` in ``namespace``, bound to one ServiceAccount (of any namespace)."""
    emit(scope, f"{id}-role", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": namespace}, "rules": [dict(r) for r in rules],
    })
    emit(scope, f"{id}-binding", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": service_account_namespace}],
    })


def _service_account(scope: Construct, name: str, namespace: str) -> None:
    emit(scope, "serviceaccount", {"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": {"name": name, "namespace": namespace}})


def _check_namespaces(where: str, namespace: str, training_namespaces: Sequence[str]) -> None:
    check_dns_label(where, "namespace", namespace)
    if not training_namespaces or len(set(training_namespaces)) != len(training_namespaces):
        raise PropError(where, "training_namespaces", f"{list(training_namespaces)!r} must name at least one "
                        "namespace, each once")
    for i, ns in enumerate(training_namespaces):
        check_dns_label(where, f"training_namespaces[{i}]", ns)
    if namespace in training_namespaces:
        raise PropError(where, "namespace", f"{namespace!r} is a training namespace: its pods would run at the "
                        "offline tier and behind its network policies; run the controller in a namespace of its own")


@dataclass(frozen=True)
class ResubmitterProps:
    """Props of a Resubmitter."""

    #: Deployment, ServiceAccount, Role, Service and Lease name.
    name: str
    #: Namespace of the Deployment and of its leader-election Lease.
    namespace: str
    #: Namespaces whose TFJobs it resubmits; it gets a Role in each, and nothing elsewhere.
    training_namespaces: Sequence[str]
    #: Image, priority and placement.
    pod: ControlPod
    #: Labels Prometheus selects ServiceMonitors by (kube-prometheus-stack: ``release``). Required.
    monitor_labels: Mapping[str, str]
    #: Replicas; one leads (the Lease), the others wait to take over. Default 2.
    replicas: int = 2
    #: Re-creations per TFJob before it is given up (``--max-resubmissions``). Default 5.
    max_resubmissions: int = 5
    #: First backoff before a re-creation, doubled each time (``--backoff-seconds``). Default 30.
    backoff_seconds: int = 30
    #: Requests and limits of its container.
    cpu: str = "100m"
    cpu_limit: str = "500m"
    memory: str = "256Mi"
    #: Namespaces Prometheus scrapes from (the NetworkPolicy's only ingress). Default: none.
    scrape_from_namespaces: Sequence[str] = field(default_factory=tuple)
    #: A ValidatingAdmissionPolicy that lets only its ServiceAccount write the annotations it
    #: decides on (where the cluster serves the policies: colocate.yaml admission.policies).
    guard_annotations: bool = False
    #: Its binding's validationActions, as the rules' bindings (admission.validationActions).
    guard_actions: Sequence[str] = ("Deny",)


class Resubmitter(Construct):
    """The resubmitter's Deployment, ServiceAccount, RBAC, Service, ServiceMonitor and PDB."""

    def _guard(self, p: ResubmitterProps) -> None:
        """The evidence and the count on a TFJob are the resubmitter's: anyone who may patch a
        TFJob could otherwise forge a disruption (a genuine failure resubmitted) or reset the
        count (endless resubmission). On CREATE and UPDATE, only its ServiceAccount may set or
        change them; git never writes them, Kueue and the operator never touch them. The cap
        annotation stays the tenants': a job's own cap only lowers the controller's."""
        user = f"system:serviceaccount:{p.namespace}:{p.name}"
        keys = "[" + ", ".join(f"'{k}'" for k in RESUBMITTER_ANNOTATIONS) + "]"
        now = "(has(object.metadata.annotations) && k in object.metadata.annotations ? object.metadata.annotations[k] : '')"
        before = ("(oldObject != null && has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations"
                  " ? oldObject.metadata.annotations[k] : '')")
        name = f"{p.name}-annotations"
        labels = {NAME_LABEL: p.name}
        annotations = dict(GUARD_ANNOTATIONS)
        emit(self, "guard-policy", {
            "apiVersion": ADMISSION_API_VERSION, "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": {"failurePolicy": "Fail",
                     "matchConstraints": {"resourceRules": [{
                         "apiGroups": [TFJOB_GROUP], "apiVersions": ["v1"], "resources": [TFJOB_PLURAL],
                         "operations": ["CREATE", "UPDATE"]}],
                         "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                                     "operator": "In",
                                                                     "values": list(p.training_namespaces)}]}},
                     "validations": [{
                         "expression": f"request.userInfo.username == '{user}' || {keys}.all(k, {now} == {before})",
                         "message": f"{', '.join(RESUBMITTER_ANNOTATIONS)} are the resubmitter's: only {user} may "
                                    "set or change them (docs/training-control.md)",
                         "reason": "Forbidden"}]}})
        emit(self, "guard-binding", {
            "apiVersion": ADMISSION_API_VERSION, "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": {"policyName": name, "validationActions": list(p.guard_actions)}})

    def __init__(self, scope: Construct, id: str, props: ResubmitterProps):
        super().__init__(scope, id)
        self.props = p = props
        self._validate()
        selector = {NAME_LABEL: p.name}
        _service_account(self, p.name, p.namespace)
        for ns in p.training_namespaces:
            grant(self, f"rbac-{ns}", name=p.name, namespace=ns, rules=RESUBMITTER_RULES,
                  service_account=p.name, service_account_namespace=p.namespace)
        # Leader election: create cannot be limited to a name (the name is in the body, not the
        # URL), so it is a rule of its own; reading and renewing only this one Lease.
        grant(self, "rbac-lease", name=p.name, namespace=p.namespace, service_account=p.name,
              service_account_namespace=p.namespace, rules=(
                  {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
                  {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [p.name],
                   "verbs": ["get", "update"]},
              ))
        args = ["resubmitter", *(a for ns in p.training_namespaces for a in ("--namespace", ns)),
                "--metrics-port", str(METRICS_PORT), "--lease-namespace", p.namespace,
                "--max-resubmissions", str(p.max_resubmissions), "--backoff-seconds", str(p.backoff_seconds)]
        container = {"name": "resubmitter", "args": args,
                     "ports": [{"name": METRICS_PORT_NAME, "containerPort": METRICS_PORT, "protocol": "TCP"}],
                     "resources": _resources(p.cpu, p.cpu_limit, p.memory)}
        # The two replicas on different nodes, where the pool has two: one node lost keeps a leader.
        spread = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                               "labelSelector": {"matchLabels": dict(selector)}}}]}}
        emit(self, "deployment", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": p.name, "namespace": p.namespace, "labels": dict(selector)},
            "spec": {
                "replicas": p.replicas,
                "selector": {"matchLabels": dict(selector)},
                "template": {"metadata": {"labels": dict(selector)},
                             "spec": p.pod.spec(p.name, container, affinity=spread)},
            },
        })
        emit(self, "service", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": p.name, "namespace": p.namespace, "labels": dict(selector)},
            "spec": {"selector": dict(selector), "ports": [{"name": METRICS_PORT_NAME, "port": METRICS_PORT,
                                                           "targetPort": METRICS_PORT_NAME, "protocol": "TCP"}]},
        })
        # Its series label the TFJob's namespace as ``namespace``: honorLabels keeps that instead
        # of renaming it exported_namespace next to the target's own (this namespace).
        ServiceMonitor(self, "servicemonitor", ServiceMonitorProps(
            name=p.name, namespace=p.namespace, service_labels=selector, port=METRICS_PORT_NAME,
            monitor_labels=p.monitor_labels, honor_labels=True,
            metrics={RESUBMISSIONS_METRIC: "counter", GIVEN_UP_METRIC: "gauge", BLOCKED_METRIC: "gauge"}))
        if p.guard_annotations:
            self._guard(p)
        emit(self, "pdb", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": p.name, "namespace": p.namespace, "labels": dict(selector)},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(selector)}},
        })
        # Nothing connects to it but Prometheus. Egress stays open: the API server's address is
        # the kubernetes Service's endpoints, which a NetworkPolicy cannot name portably.
        emit(self, "networkpolicy", {
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": f"{p.name}-ingress", "namespace": p.namespace, "annotations": dict(GUARD_ANNOTATIONS)},
            "spec": {"podSelector": {"matchLabels": dict(selector)}, "policyTypes": ["Ingress"],
                     "ingress": [{
                         "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}
                                  for ns in p.scrape_from_namespaces],
                         "ports": [{"port": METRICS_PORT, "protocol": "TCP"}]}] if p.scrape_from_namespaces else []},
        })

    def _validate(self) -> None:
        p, where = self.props, f"Resubmitter {self.props.name!r}"
        check_dns_label(where, "name", p.name)
        _check_namespaces(where, p.namespace, p.training_namespaces)
        p.pod.validate(where)
        check_required_labels(where, "monitor_labels", p.monitor_labels,
                              "Prometheus would not scrape it, and the given-up alert could never fire")
        for prop, low in (("replicas", 1), ("max_resubmissions", 0), ("backoff_seconds", 1)):
            value = getattr(p, prop)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise PropError(where, prop, f"{value!r} must be a whole number >= {low}")
        for prop in ("cpu", "cpu_limit", "memory"):
            value = getattr(p, prop)
            if not quantity.is_quantity(value) or quantity.parse(value) <= 0:
                raise PropError(where, prop, f"{value!r} must be a positive quantity")
        if quantity.parse(p.cpu) > quantity.parse(p.cpu_limit):
            raise PropError(where, "cpu", f"{p.cpu!r} is above cpu_limit {p.cpu_limit!r}")


@dataclass(frozen=True)
class OfflineScheduleProps:
    """Props of an OfflineSchedule."""

    #: Prefix of the CronJob names (``<prefix>-pause-<namespace>``) and the ServiceAccount's name.
    name: str
    #: Namespace of the CronJobs and their ServiceAccount.
    namespace: str
    #: Namespaces whose TFJobs are paused and resumed: a CronJob pair and a Role in each.
    training_namespaces: Sequence[str]
    #: When (colocate.yaml ``schedule``).
    schedule: Schedule
    #: Image, priority and placement.
    pod: ControlPod
    #: How late a missed run may still start (the controller-manager was down at the time); a run
    #: later than this is skipped, and the next day's comes as usual. Default 3600.
    starting_deadline_seconds: int = 3600
    #: Kueue's ClusterQueue of the training namespaces: pause and resume set its stopPolicy
    #: instead of suspending each TFJob, so one CronJob pair and one ClusterRole limited to that
    #: queue. Default: none (a pair and a Role per namespace).
    cluster_queue: str | None = None
    #: Requests and limits of its container.
    cpu: str = "100m"
    cpu_limit: str = "500m"
    memory: str = "256Mi"


class OfflineSchedule(Construct):
    """A CronJob that pauses training before the day peak and one that resumes it after: with
    Kueue, one pair that holds and releases the ClusterQueue and may only get and patch that
    queue; else a pair per training namespace, whose ServiceAccount may only list, get and patch
    TFJobs there, and list their pods."""

    def __init__(self, scope: Construct, id: str, props: OfflineScheduleProps):
        super().__init__(scope, id)
        self.props = p = props
        self._validate()
        _service_account(self, p.name, p.namespace)
        s = p.schedule
        if p.cluster_queue:
            self._queue_rbac(p.cluster_queue)
            for ns in p.training_namespaces:  # resume lists the paused pods there, nothing more
                grant(self, f"rbac-{ns}", name=p.name, namespace=ns, rules=QUEUE_SCHEDULE_RULES,
                      service_account=p.name, service_account_namespace=p.namespace)
        for target in self.targets:
            if not p.cluster_queue:
                grant(self, f"rbac-{target}", name=p.name, namespace=target, rules=SCHEDULE_RULES,
                      service_account=p.name, service_account_namespace=p.namespace)
            for action, minute in (("pause", s.pause_at), ("resume", s.resume_at)):
                self._cronjob(action, target, minute)

    @property
    def targets(self) -> list[str]:
        """What one CronJob pair acts on: the ClusterQueue, else each training namespace."""
        return [self.props.cluster_queue] if self.props.cluster_queue else list(self.props.training_namespaces)

    def cronjob_name(self, action: str, target: str) -> str:
        return f"{self.props.name}-{action}-{target}"

    def _queue_rbac(self, queue: str) -> None:
        p = self.props
        name = f"{p.name}-{queue}"
        emit(self, "queue-role", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            # colocate/incluster/offline.py hold(): get the queue, merge-patch its spec.stopPolicy.
            "rules": [{"apiGroups": [KUEUE_API.split("/")[0]], "resources": ["clusterqueues"],
                       "resourceNames": [queue], "verbs": ["get", "patch"]}]})
        emit(self, "queue-binding", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": p.name, "namespace": p.namespace}]})

    def _cronjob(self, action: str, target: str, minute_of_day: int) -> None:
        p = self.props
        name = self.cronjob_name(action, target)
        labels = {NAME_LABEL: p.name}
        hours, minutes = divmod(minute_of_day, 60)
        # With a queue, resume waits in each training namespace for the paused pods to be gone.
        where = (["--cluster-queue", target, *(a for ns in p.training_namespaces for a in ("--namespace", ns))]
                 if p.cluster_queue else ["--namespace", target])
        container = {"name": "offline", "args": ["offline", action, *where],
                     "resources": _resources(p.cpu, p.cpu_limit, p.memory)}
        emit(self, f"cronjob-{action}-{target}", {
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": p.namespace, "labels": dict(labels)},
            "spec": {
                "schedule": f"{minutes} {hours} * * *",
                # GA in Kubernetes 1.27 (KEP-3140): the schedule is read in this zone, not the
                # controller-manager's.
                "timeZone": p.schedule.time_zone,
                # pause and resume are idempotent; never two at once.
                "concurrencyPolicy": "Forbid",
                "startingDeadlineSeconds": p.starting_deadline_seconds,
                "successfulJobsHistoryLimit": 3,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        # A refused or unanswered API call is retried by a new pod, with backoff.
                        "backoffLimit": 3,
                        "activeDeadlineSeconds": 600,
                        "template": {"metadata": {"labels": dict(labels)},
                                     "spec": p.pod.spec(p.name, container, restartPolicy="Never")},
                    },
                },
            },
        })

    def _validate(self) -> None:
        p, where = self.props, f"OfflineSchedule {self.props.name!r}"
        check_dns_label(where, "name", p.name)
        _check_namespaces(where, p.namespace, p.training_namespaces)
        p.pod.validate(where)
        # The API server refuses a CronJob name over 52 characters: its Jobs are named
        # <cronjob>-<11 characters> within 63 (kubernetes pkg/apis/batch/validation/validation.go,
        # DNS1035LabelMaxLength-11).
        for target in self.targets:
            for action in ("pause", "resume"):
                name = self.cronjob_name(action, target)
                if len(name) > 52:
                    raise PropError(where, "name", f"CronJob name {name!r} is {len(name)} characters; a CronJob "
                                    "name may have at most 52: shorten the prefix")
        if not isinstance(p.starting_deadline_seconds, int) or p.starting_deadline_seconds < 10:
            raise PropError(where, "starting_deadline_seconds", f"{p.starting_deadline_seconds!r} must be a whole "
                            "number >= 10: the CronJob controller checks every 10 seconds, so a shorter deadline "
                            "can miss a run")
        for prop in ("cpu", "cpu_limit", "memory"):
            value = getattr(p, prop)
            if not quantity.is_quantity(value) or quantity.parse(value) <= 0:
                raise PropError(where, prop, f"{value!r} must be a positive quantity")
