"""TFJob: a distributed TensorFlow job (kubeflow.org/v1) with the co-location guardrails built in.

The user names the image and, per role, replicas, resources and GPUs. Everything the cluster's
rules decide is set here: restartPolicy OnFailure, the ``tensorflow`` container on port 2222,
the offline priority on every replica (the operator does not copy a job-level priority to
pods, docs/training.md), a grace period that holds one checkpoint save, no tolerations, required affinity to the pools
training may use, GPU roles on GPU pools, PS spread over nodes, and a checkpoint volume on a
ReadWriteMany claim whose path is in ``CHECKPOINT_DIR``, and ``cleanPodPolicy: All``. The last
three are the TFJob contract a resubmitted job relies on (docs/training.md; COL112-COL114 check it).

Also emits that claim (PersistentVolumeClaim ``<job>-checkpoints``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal, Mapping, Sequence

from constructs import Construct

from colocate.model import quantity
from colocate.constructs._k8s import emit
from colocate.model.validate import check_dns1035_label, check_dns_label, check_image, check_pull_secret, pull_secrets
from colocate.constructs.node_pool import NodePool
from colocate.model.names import (EXPECTED_HOURS_ANNOTATION, MAX_EXPECTED_HOURS,
                                   CHECKPOINT_ENV, GPU, NO_GPU_VISIBLE, VISIBLE_DEVICES_ENV, JOB_NAME_LABEL, MAX_MEMORY_BURST, OFFLINE_MAX_GRACE_SECONDS,
                                   PROTECTED_ANNOTATIONS, QUEUE_NAME_LABEL, REPLICA_TYPE_LABEL, SYNC_OPTIONS, TF_CHIEF_ROLES, TF_CONTAINER, TF_PORT,
                                   TF_PORT_NAME, TF_ROLES, TFJOB_CLEAN_POD_POLICY, TFJOB_GROUP, TFJOB_KIND,
                                   TFJOB_MIN_GRACE_SECONDS, TFJOB_VERSION)
from colocate.model.pools import Resources
from colocate.model.scheduling import pool_term, required_pool_affinity
from colocate.errors import PropError

CHECKPOINT_ROOT = "/mnt/checkpoints"
CHECKPOINT_VOLUME = "checkpoints"


@dataclass(frozen=True)
class RoleSpec:
    """One replica type of the job."""

    #: CPU request per replica, e.g. ``"2"``. Required.
    cpu: str | None = None
    #: Memory request per replica: the measured peak plus about 20% (memory is not compressible). Required.
    memory: str | None = None
    #: Replicas. Default 1.
    replicas: int = 1
    #: CPU limit: above the request lets the pod burst into idle CPU. Default: the request.
    cpu_limit: str | None = None
    #: Memory limit, at most MAX_MEMORY_BURST x the request. Default: the request.
    memory_limit: str | None = None
    #: Whole NVIDIA GPUs per replica, set as ``nvidia.com/gpu`` limits. Default 0.
    gpus: int = 0
    #: ``OnFailure`` (default), ``Never`` or ``ExitCode``; ``Always`` is refused.
    restart_policy: Literal["OnFailure", "Never", "ExitCode"] = "OnFailure"


@dataclass(frozen=True)
class TFJobProps:
    """Props of a TFJob."""

    #: Job name (DNS-1035 label: starts with a letter); names the pods ``<name>-<role>-<i>`` and the checkpoint claim.
    name: str
    #: Namespace (the offline TenantNamespace).
    namespace: str
    #: Training image with a pinned tag, from the internal registry.
    image: str
    #: Replica types: keys from TF_ROLES, at least a Chief, Master or Worker.
    roles: Mapping[str, RoleSpec]
    #: Pools the job may run on (required node affinity). Must be untainted: training pods
    #: tolerate nothing, so the online pool's taint keeps them out.
    pools: Sequence[NodePool]
    #: PriorityClass of the offline tier, set on every replica's pod template.
    priority_class: str
    #: ReadWriteMany (NFS) StorageClass of the checkpoint claim.
    storage_class: str
    #: Size of the checkpoint claim. Default ``10Gi``.
    checkpoint_size: str = "10Gi"
    #: Container command; default the image's entrypoint.
    command: Sequence[str] = ()
    #: Container arguments. Default: none.
    args: Sequence[str] = ()
    #: ``runPolicy.backoffLimit``: restarts before the job is marked Failed. Default 3.
    backoff_limit: int = 3
    #: ``runPolicy.activeDeadlineSeconds``: the job fails (and frees its GPUs) after this long. Default:
    #: unset. training-operator v1.7.0 counts it from status.startTime, which it sets when the job
    #: starts and again on every resume (pkg/controller.v1/common/job.go ReconcileJobs), so it bounds
    #: one uninterrupted run (a night), not the job's whole life (docs/training.md).
    active_deadline_seconds: int | None = None
    #: ``runPolicy.ttlSecondsAfterFinished``. Default: unset. Under Argo CD self-heal a TFJob
    #: deleted by its TTL is re-created from git and runs again (argoproj/argo-cd#8586);
    #: a job leaves the cluster when its file leaves git.
    ttl_seconds_after_finished: int | None = None
    #: Seconds between SIGTERM and SIGKILL on preemption: long enough for one checkpoint save,
    #: TFJOB_MIN_GRACE_SECONDS (30) to OFFLINE_MAX_GRACE_SECONDS (60). Default 30.
    termination_grace_period_seconds: int = TFJOB_MIN_GRACE_SECONDS
    #: Extra pod labels. Default: none (the operator adds ``training.kubeflow.org/*``).
    labels: Mapping[str, str] = field(default_factory=dict)
    #: Existing Secret the kubelet pulls the image with (a private Harbor project). Default: none.
    image_pull_secret: str | None = None
    #: Kueue LocalQueue the job waits in (the ``kueue.x-k8s.io/queue-name`` label). Default: none,
    #: the job starts as soon as it is created.
    queue: str | None = None
    #: Hours the job is expected to run, over all its nights: the ``colocate.io/expected-hours``
    #: annotation, from which ``capacity`` and ``diff`` count the GPU-hours waiting in the queue.
    #: Above 0, at most MAX_EXPECTED_HOURS. Default: no estimate (they say so).
    expected_hours: float | None = None


def hours_text(hours: float) -> str:
    """``6``, ``2.5``: the annotation's value, without a float's noise (``2.5`` not ``2.50``)."""
    return format(Decimal(str(hours)).normalize(), "f")


class TFJob(Construct):
    """A TFJob and its checkpoint PersistentVolumeClaim."""

    def __init__(self, scope: Construct, id: str, props: TFJobProps):
        super().__init__(scope, id)
        self.props = props
        self._where = f"TFJob {props.name!r}"
        self._validate()
        p = props
        self.claim_name = f"{p.name}-checkpoints"
        self.checkpoint_dir = f"{CHECKPOINT_ROOT}/{p.name}"
        # Always All, Evaluator or not: a failed job must release every pod's GPUs (docs/training.md).
        run_policy: dict = {"cleanPodPolicy": TFJOB_CLEAN_POD_POLICY, "backoffLimit": p.backoff_limit,
                            # Gang schedulers read the job-level class; the pods get it below.
                            "schedulingPolicy": {"priorityClass": p.priority_class}}
        if p.active_deadline_seconds is not None:
            run_policy["activeDeadlineSeconds"] = p.active_deadline_seconds
        if p.ttl_seconds_after_finished is not None:
            run_policy["ttlSecondsAfterFinished"] = p.ttl_seconds_after_finished
        emit(self, "tfjob", {
            "apiVersion": f"{TFJOB_GROUP}/{TFJOB_VERSION}", "kind": TFJOB_KIND,
            # The TFJob CRD comes from the training-operator Application (docs/gitops.md).
            "metadata": {"name": p.name, "namespace": p.namespace,
                         **({"labels": {QUEUE_NAME_LABEL: p.queue}} if p.queue else {}),
                         "annotations": {SYNC_OPTIONS: "SkipDryRunOnMissingResource=true",
                                         **({EXPECTED_HOURS_ANNOTATION: hours_text(p.expected_hours)}
                                            if p.expected_hours is not None else {})}},
            "spec": {
                "runPolicy": run_policy,
                "tfReplicaSpecs": {role: self._replica(role, p.roles[role]) for role in TF_ROLES if role in p.roles},
            },
        })
        emit(self, "checkpoints", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            # Checkpoints outlive the job: deleting the job file (prune) or the training
            # Application (cascade) keeps the claim, and IgnoreExtraneous keeps the kept claim from
            # holding the Application OutOfSync; it is deleted by hand (docs/training.md).
            "metadata": {"name": self.claim_name, "namespace": p.namespace, "annotations": dict(PROTECTED_ANNOTATIONS)},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": p.storage_class,
                     "resources": {"requests": {"storage": quantity.canonical(p.checkpoint_size, "memory")}}},
        })

    # --- rendering -------------------------------------------------------------------------

    def _replica(self, role: str, spec: RoleSpec) -> dict:
        p = self.props
        container: dict = {
            "name": TF_CONTAINER,
            "image": p.image,
            "ports": [{"name": TF_PORT_NAME, "containerPort": TF_PORT, "protocol": "TCP"}],
            "resources": self._resources(spec),
            "env": [{"name": CHECKPOINT_ENV, "value": self.checkpoint_dir},
                    # A GPU-less replica of a CUDA image would otherwise see every GPU of its node.
                    *([] if spec.gpus else [{"name": VISIBLE_DEVICES_ENV, "value": NO_GPU_VISIBLE}])],
            "volumeMounts": [{"name": CHECKPOINT_VOLUME, "mountPath": self.checkpoint_dir}],
            "securityContext": {"allowPrivilegeEscalation": False, "seccompProfile": {"type": "RuntimeDefault"}},
        }
        if p.command:
            container["command"] = list(p.command)
        if p.args:
            container["args"] = list(p.args)
        pod: dict = {
            "priorityClassName": p.priority_class,
            "terminationGracePeriodSeconds": p.termination_grace_period_seconds,
            "affinity": self._affinity(role, spec),
            "containers": [container],
            "volumes": [{"name": CHECKPOINT_VOLUME, "persistentVolumeClaim": {"claimName": self.claim_name}}],
            **pull_secrets(p.image_pull_secret),
        }
        template: dict = {"spec": pod}
        if p.labels:
            template["metadata"] = {"labels": dict(p.labels)}
        return {"replicas": spec.replicas, "restartPolicy": spec.restart_policy, "template": template}

    @staticmethod
    def _resources(spec: RoleSpec) -> dict:
        requests = {"cpu": quantity.canonical(spec.cpu, "cpu"), "memory": quantity.canonical(spec.memory, "memory")}
        limits = {"cpu": quantity.canonical(spec.cpu_limit or spec.cpu, "cpu"),
                  "memory": quantity.canonical(spec.memory_limit or spec.memory, "memory")}
        if spec.gpus:
            # Limits only: the API server sets the request equal (docs/training.md).
            limits[GPU] = str(spec.gpus)
        return {"requests": requests, "limits": limits}

    def _affinity(self, role: str, spec: RoleSpec) -> dict:
        pools = self._pools_for(spec)
        affinity = required_pool_affinity(pool.name for pool in pools)
        if role == "PS":
            # "CPU-rich": among the pools the job may use, prefer those with the most CPU per
            # node, and put each PS on its own node so no two share one node's spare CPU.
            richest = max(pool.allocatable.cpu_milli for pool in pools)
            rich = [pool for pool in pools if pool.allocatable.cpu_milli == richest]
            if len(rich) < len(pools):
                affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": 100, "preference": pool_term(pool.name for pool in rich)}]
            affinity["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100,
                "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {
                    JOB_NAME_LABEL: self.props.name, REPLICA_TYPE_LABEL: "ps"}}},
            }]}
        return affinity

    def _pools_for(self, spec: RoleSpec) -> list[NodePool]:
        """Pools one replica fits on: GPU replicas only where GPUs are."""
        need = _need(spec)
        return [pool for pool in self.props.pools if pool.allocatable.fits(need)]

    # --- validation ------------------------------------------------------------------------

    def _validate(self) -> None:
        p, where = self.props, self._where
        # ValidateV1TFJob: NameIsDNS1035Label (kubeflow/training-operator v1.7.0
        # pkg/apis/kubeflow.org/v1/tensorflow_validation.go); the API server takes 1abc, the operator does not.
        check_dns1035_label(where, "name", p.name, "training-operator v1.7.0 refuses the job and creates no pod")
        check_dns_label(where, "namespace", p.namespace)
        check_image(where, "image", p.image, example="harbor.example.com/ml/tf-mnist:2.11.0")
        check_pull_secret(where, "image_pull_secret", p.image_pull_secret)
        if not p.pools:
            raise PropError(where, "pools", "is empty: name the pools training may use (the mixed pool)")
        for i, pool in enumerate(p.pools):
            blocking = [t for t in pool.props.taints if t.effect != "PreferNoSchedule"]
            if blocking:
                raise PropError(where, f"pools[{i}]", f"pool {pool.name!r} is tainted "
                                f"{blocking[0].key}={blocking[0].value}:{blocking[0].effect}; training pods tolerate "
                                "no taint (the online pool's taint is what keeps them off it), use an untainted pool")
        unknown = sorted(set(p.roles) - set(TF_ROLES))
        if unknown:
            raise PropError(where, f"roles.{unknown[0]}", f"is not a TFJob replica type; use one of {', '.join(TF_ROLES)}")
        if not any(role in p.roles for role in ("Chief", "Master", "Worker")):
            raise PropError(where, "roles", "needs a Chief, Master or Worker: the job succeeds when the "
                            "chief (or, without one, worker 0) finishes")
        chiefs = [role for role in TF_CHIEF_ROLES if role in p.roles]
        if len(chiefs) > 1:
            raise PropError(where, "roles", "has both Chief and Master; they are the same replica type "
                            "(Master is the legacy name), keep one")
        for role in chiefs:
            if p.roles[role].replicas != 1:
                raise PropError(where, f"roles.{role}.replicas", f"{p.roles[role].replicas!r}: a TFJob has exactly "
                                f"one {role}; put the extra replicas under Worker")
        for role in TF_ROLES:
            if role in p.roles:
                self._validate_role(role, p.roles[role])
        self._validate_shape(chiefs)
        if not quantity.is_quantity(p.checkpoint_size) or quantity.parse(p.checkpoint_size) <= 0:
            raise PropError(where, "checkpoint_size", f"{p.checkpoint_size!r} must be a positive size such as '10Gi'")
        for prop in ("backoff_limit", "termination_grace_period_seconds"):
            value = getattr(p, prop)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise PropError(where, prop, f"{value!r} must be a whole number >= 0")
        grace = p.termination_grace_period_seconds
        if not TFJOB_MIN_GRACE_SECONDS <= grace <= OFFLINE_MAX_GRACE_SECONDS:
            raise PropError(where, "termination_grace_period_seconds", (
                f"{grace} is below {TFJOB_MIN_GRACE_SECONDS}: the window between SIGTERM and SIGKILL must hold one "
                "checkpoint save, so a preempted replica resumes where it stopped" if grace < TFJOB_MIN_GRACE_SECONDS
                else f"{grace} is above {OFFLINE_MAX_GRACE_SECONDS}: a preempted replica keeps its node that long and "
                "the online pod that preempted it waits; save more often so one save fits")
                + f" (use {TFJOB_MIN_GRACE_SECONDS} to {OFFLINE_MAX_GRACE_SECONDS} seconds)")
        deadline = p.active_deadline_seconds
        if deadline is not None and (not isinstance(deadline, int) or isinstance(deadline, bool) or deadline < 1):
            raise PropError(where, "active_deadline_seconds", f"{deadline!r} must be a whole number of seconds >= 1")
        hours = p.expected_hours
        if hours is not None and (not isinstance(hours, (int, float, Decimal)) or isinstance(hours, bool)
                                  or not 0 < hours <= MAX_EXPECTED_HOURS):
            raise PropError(where, "expected_hours", f"{hours!r} must be a number of hours above 0 and at most "
                            f"{MAX_EXPECTED_HOURS}")
        if p.ttl_seconds_after_finished is not None and (
                not isinstance(p.ttl_seconds_after_finished, int) or p.ttl_seconds_after_finished < 0):
            raise PropError(where, "ttl_seconds_after_finished", f"{p.ttl_seconds_after_finished!r} must be >= 0")

    def _validate_shape(self, chiefs: list[str]) -> None:
        """The two shapes TensorFlow 2 trains with (docs/training.md, "Job shapes"): with PS,
        ParameterServerStrategy, whose training loop runs in a coordinator (the Chief); without,
        MultiWorkerMirroredStrategy, whose chief is one more worker in the all-reduce and so needs
        the Workers' GPUs."""
        p, where = self.props, self._where
        if "PS" in p.roles and not chiefs:
            raise PropError(where, "roles", "has PS but no Chief: TensorFlow 2's ParameterServerStrategy needs a "
                            "coordinator, the Chief, to run the training loop, and without one training-operator "
                            "v1.7.0 marks the job Succeeded when worker 0 exits; add a Chief (CPU only, replicas 1)")
        if "PS" not in p.roles and chiefs and "Worker" in p.roles:
            chief, worker = p.roles[chiefs[0]], p.roles["Worker"]
            if chief.gpus != worker.gpus:
                raise PropError(where, f"roles.{chiefs[0]}.gpus", f"{chief.gpus}, but each Worker has {worker.gpus}: "
                                "without PS the job is all-reduce (MultiWorkerMirroredStrategy), where the "
                                f"{chiefs[0]} is one more worker and every worker needs the same devices; "
                                f"give the {chiefs[0]} {worker.gpus} GPU(s), or drop it (worker 0 is then the chief)")

    def _validate_role(self, role: str, spec: RoleSpec) -> None:
        where, prop = self._where, f"roles.{role}"
        if spec.restart_policy == "Always":
            raise PropError(where, f"{prop}.restart_policy", "'Always' restarts replicas that finished, so the job "
                            "never completes; use OnFailure")
        if spec.restart_policy not in ("OnFailure", "Never", "ExitCode"):
            raise PropError(where, f"{prop}.restart_policy", f"{spec.restart_policy!r} must be OnFailure, Never or ExitCode")
        if not isinstance(spec.replicas, int) or isinstance(spec.replicas, bool) or spec.replicas < 1:
            raise PropError(where, f"{prop}.replicas", f"{spec.replicas!r} must be a whole number >= 1")
        if not isinstance(spec.gpus, int) or isinstance(spec.gpus, bool) or spec.gpus < 0:
            raise PropError(where, f"{prop}.gpus", f"{spec.gpus!r} must be a whole number >= 0")
        if role == "PS" and spec.gpus:
            raise PropError(where, f"{prop}.gpus", f"{spec.gpus}: parameter servers hold variables and need CPU "
                            "and memory, not GPUs; set gpus on Worker instead")
        for kind in ("cpu", "memory"):
            request, limit = getattr(spec, kind), getattr(spec, f"{kind}_limit")
            if request is None:
                raise PropError(where, f"{prop}.{kind}", f"the {kind} request is missing; the scheduler places pods "
                                "by requests, so set it (memory: the measured peak plus about 20%)")
            for name, value in ((kind, request), (f"{kind}_limit", limit)):
                if value is not None and (not quantity.is_quantity(value) or quantity.parse(value) <= 0):
                    raise PropError(where, f"{prop}.{name}", f"{value!r} must be a positive quantity such as "
                                    f"{'2 or 500m' if kind == 'cpu' else '4Gi'}")
            if limit is not None and quantity.parse(request) > quantity.parse(limit):
                raise PropError(where, f"{prop}.{kind}", f"request {request} is above the limit {limit}; "
                                f"raise {kind}_limit or lower the request")
        if spec.memory_limit is not None and quantity.parse(spec.memory_limit) > MAX_MEMORY_BURST * quantity.parse(spec.memory):
            raise PropError(where, f"{prop}.memory_limit", f"{spec.memory_limit} is more than {MAX_MEMORY_BURST}x the "
                            f"request {spec.memory}; memory does not compress, so size the request near the real peak "
                            "(+20%) and keep the limit close to it")
        if not self._pools_for(spec):
            pools = "; ".join(f"{pool.name}: {pool.allocatable}" for pool in self.props.pools)
            raise PropError(where, f"{prop}.cpu/memory/gpus", f"a replica needs {_need(spec)}, more than one node of "
                            f"any pool the job may use can give (allocatable per node: {pools}); "
                            "lower the request or split the work over more replicas")


def _need(spec: RoleSpec) -> Resources:
    """What one replica needs from a node: its requests (limits for GPUs)."""
    return Resources(quantity.millicores(spec.cpu), quantity.to_bytes(spec.memory), spec.gpus)
