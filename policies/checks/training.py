"""Python checks for the training rules: GPUs in limits, TFJobs written by hand (the TFJob contract's
checkpoint directory and grace period among them), and PodDisruptionBudgets over training pods.
Each takes the Index and its Rule and yields Violations; metadata, message and fix live in
policies/rules/<id>.yaml.
"""
from __future__ import annotations

import posixpath
from collections import defaultdict
from typing import Any, Iterator

from colocate.model import kueue_admission, quantity, resource_quota
from colocate.checker import Index, Rule, Violation
from colocate.model.names import (CHECKPOINT_ENV, GPU, JOB_NAME_LABEL, MAX_MEMORY_BURST, JOB_ROLE_LABEL,
                                   OPERATOR_NAME_LABEL, QUEUE_NAME_LABEL, REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL,
                                   TF_CHIEF_ROLES as CHIEF_ROLES, TF_CONTAINER, TFJOB_CONTROLLER,
                                   TFJOB_MIN_GRACE_SECONDS, tf_role)
from colocate.checker.manifests import Doc, PodSpec, replica_specs_field
from colocate.model.pods import ZERO, containers, pod_resources, replicas
from colocate.model.pools import Resources
from colocate.policies.checks.gpus import gpu_quantity
from colocate.model.scheduling import selector_matches

#: The one replica type that does not checkpoint (the chief saves the variables it serves).
PS_ROLE = "PS"


def _whole(value: Any) -> bool:
    return quantity.is_quantity(value) and quantity.parse(value) % 1 == 0


def gpu_in_limits(index: Index, rule: Rule) -> Iterator[Violation]:
    """The API server's rule for extended resources: whole numbers, a limit, request == limit."""
    for pod in index.pods(rule.scope):
        for path, container in containers(pod):
            request, limit = gpu_quantity(container, "requests"), gpu_quantity(container, "limits")
            for kind, value in (("requests", request), ("limits", limit)):
                if value is not None and not _whole(value):
                    yield Violation(pod.doc, f"{path}.resources.{kind}.{GPU}", f"{value} is not a whole number")
            if request is None:
                continue
            if limit is None:
                yield Violation(pod.doc, f"{path}.resources.limits.{GPU}", f"requests {request}, no limit")
            elif _whole(request) and _whole(limit) and quantity.parse(request) != quantity.parse(limit):
                yield Violation(pod.doc, f"{path}.resources.requests.{GPU}", f"request {request} != limit {limit}")


def tfjob_offline_namespace(index: Index, rule: Rule) -> Iterator[Violation]:
    """TFJobs outside the offline namespaces (a missing namespace is COL007's finding)."""
    for doc in index.docs:
        if doc.namespace and doc.namespace not in index.ctx.offline_namespaces:
            tier = "an online namespace" if doc.namespace in index.ctx.online_namespaces else "not offline"
            yield Violation(doc, "metadata.namespace", f"{doc.namespace} is {tier}")


def ungoverned_training_kind(index: Index, rule: Rule) -> Iterator[Violation]:
    """Kubeflow training jobs of a kind other than TFJob: nothing pauses or resubmits them."""
    for doc in index.docs:
        field = replica_specs_field(doc)
        if field:
            yield Violation(doc, "kind", f"kind {doc.kind}: its replicas (spec.{field}) run unpaused through the "
                            "day peak and are not resubmitted when online work preempts them")


#: A Service name is a DNS-1035 label (pkg/apis/core/validation ValidateServiceName, kubernetes v1.28.15).
SERVICE_NAME_MAX = 63


def tfjob_service_names(index: Index, rule: Rule) -> Iterator[Violation]:
    """training-operator v1.7.0 names each replica's headless Service
    ``<job>-<replica type lower-cased>-<index>`` (pkg/controller.v1/common/util.go GenGeneralName,
    service.go CreateNewService); one over 63 characters is refused, and the job never starts."""
    for doc in index.docs:
        specs = (doc.obj.get("spec") or {}).get("tfReplicaSpecs") if isinstance(doc.obj.get("spec"), dict) else None
        if not isinstance(specs, dict) or not doc.name:
            continue
        for key, replica in specs.items():
            count = replica.get("replicas", 1) if isinstance(replica, dict) else 1
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                continue
            longest = f"{doc.name}-{str(key).lower()}-{count - 1}"
            if len(longest) > SERVICE_NAME_MAX:
                yield Violation(doc, "metadata.name", f"the Service of {key} {count - 1} would be {longest!r}, "
                                f"{len(longest)} characters; shorten the name by {len(longest) - SERVICE_NAME_MAX}")
                break


def _claim_volumes(pod: PodSpec) -> dict[str, str]:
    """Volume name -> claimName of the pod's persistentVolumeClaim volumes."""
    return {v["name"]: str(v["persistentVolumeClaim"].get("claimName", "")) for v in pod.spec.get("volumes") or []
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict) and v.get("name")}


def _checkpoint_containers(pod: PodSpec) -> list[tuple[int, dict]]:
    """The containers that must mount the checkpoints: tensorflow, or any container when none is
    named tensorflow (COL105 reports the name)."""
    listed = [(i, c) for i, c in enumerate(pod.spec.get("containers") or []) if isinstance(c, dict)]
    return [(i, c) for i, c in listed if c.get("name") == TF_CONTAINER] or listed


def _mounts(container: dict) -> list[dict]:
    return [m for m in container.get("volumeMounts") or [] if isinstance(m, dict)]


def tfjob_checkpoint_volume(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every non-PS replica mounts a persistentVolumeClaim volume into its tensorflow container
    (into any container when none is named tensorflow; COL105 reports the name)."""
    for pod in index.pods():
        if not pod.role or pod.role == PS_ROLE:
            continue
        claims = sorted(_claim_volumes(pod))
        if not claims:
            yield Violation(pod.doc, f"{pod.path}.volumes", "no persistentVolumeClaim volume")
            continue
        candidates = _checkpoint_containers(pod)
        mounted = {m.get("name") for _, c in candidates for m in _mounts(c)}
        if candidates and not mounted & set(claims):
            yield Violation(pod.doc, f"{pod.path}.containers[{candidates[0][0]}].volumeMounts",
                            f"does not mount the persistentVolumeClaim volume {' or '.join(claims)}")


def _under(path: str, mount_path: str) -> bool:
    return path == mount_path or path.startswith(mount_path.rstrip("/") + "/")


def tfjob_checkpoint_dir(index: Index, rule: Rule) -> Iterator[Violation]:
    """CHECKPOINT_DIR in each non-PS replica's checkpoint container names a folder on a writable
    persistentVolumeClaim mount of that container; no two TFJobs share (claim, folder on it).
    A replica COL106 reports (no claim, or none mounted) is left to it."""
    users: dict[tuple[str, str, str], list[tuple[Doc, str]]] = defaultdict(list)
    for pod in index.pods():
        if not pod.role or pod.role == PS_ROLE:
            continue
        claims = _claim_volumes(pod)
        candidates = [(i, c) for i, c in _checkpoint_containers(pod)
                      if any(m.get("name") in claims for m in _mounts(c))]
        if not candidates:
            continue  # COL106's finding
        i, container = candidates[0]
        path = f"{pod.path}.containers[{i}]"
        claim_mounts = ", ".join(f"{m.get('mountPath')} ({claims[m['name']]})" for m in _mounts(container)
                                 if m.get("name") in claims)
        env = [(j, e) for j, e in enumerate(container.get("env") or [])
               if isinstance(e, dict) and e.get("name") == CHECKPOINT_ENV]
        if not env:
            yield Violation(pod.doc, f"{path}.env", f"no {CHECKPOINT_ENV}; the claim is mounted at {claim_mounts}")
            continue
        j, var = env[-1]  # the last entry wins, as in the kubelet
        value = var.get("value")
        if not isinstance(value, str) or not value.startswith("/"):
            yield Violation(pod.doc, f"{path}.env[{j}]", f"{CHECKPOINT_ENV} is not an absolute path written as value "
                            f"(a fixed directory per job); the claim is mounted at {claim_mounts}")
            continue
        directory = posixpath.normpath(value)
        holding = [m for m in _mounts(container)
                   if isinstance(m.get("mountPath"), str) and _under(directory, posixpath.normpath(m["mountPath"]))]
        mount = max(holding, key=lambda m: len(posixpath.normpath(m["mountPath"])), default=None)  # the innermost
        if mount is None or mount.get("name") not in claims:
            where = f"on volume {mount.get('name')!r}, not a claim" if mount else "on the container's own file system"
            yield Violation(pod.doc, f"{path}.env[{j}].value",
                            f"{value} is {where}; the claim is mounted at {claim_mounts}")
            continue
        if mount.get("readOnly") is True:
            yield Violation(pod.doc, f"{path}.env[{j}].value",
                            f"{value} is on the read-only mount {mount['mountPath']}")
            continue
        below = posixpath.relpath(directory, posixpath.normpath(mount["mountPath"]))
        sub_path = str(mount.get("subPath") or mount.get("subPathExpr") or "")
        on_claim = posixpath.normpath(posixpath.join(sub_path, below))
        key = (pod.doc.namespace, claims[mount["name"]], on_claim)
        if not any(doc.ref == pod.doc.ref for doc, _ in users[key]):  # one job, many replicas; a copy is COL006's
            users[key].append((pod.doc, f"{path}.env[{j}].value"))
    for (_, claim, on_claim), jobs in users.items():
        first = jobs[0][0]
        for doc, field in jobs[1:]:
            folder = "its root" if on_claim == "." else f"folder {on_claim}"
            yield Violation(doc, field, f"claim {claim}, {folder}, is also the checkpoint directory of {first.ref}")


def tfjob_grace_period(index: Index, rule: Rule) -> Iterator[Violation]:
    """TFJob replicas keep at least TFJOB_MIN_GRACE_SECONDS between SIGTERM and SIGKILL (unset is
    the API's default, 30). The upper bound is COL107's, for every offline pod."""
    for pod in index.pods():
        if not pod.role:
            continue
        seconds = pod.spec.get("terminationGracePeriodSeconds")
        if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds < TFJOB_MIN_GRACE_SECONDS:
            yield Violation(pod.doc, f"{pod.path}.terminationGracePeriodSeconds", f"{seconds} s")


def _pod_label_sets(pod: PodSpec) -> Iterator[dict]:
    """The labels each pod made from this spec carries: the template's, and for a TFJob
    replica the operator's own per index (job-role=master on the chief, else on Worker 0)."""
    if not pod.role:
        yield pod.labels
        return
    specs = pod.doc.obj["spec"]["tfReplicaSpecs"]
    replicas = specs[pod.replica_key].get("replicas", 1)
    has_chief = any(tf_role(key) in CHIEF_ROLES for key in specs)
    for i in range(replicas if isinstance(replicas, int) else 1):
        labels = {**pod.labels, OPERATOR_NAME_LABEL: TFJOB_CONTROLLER, JOB_NAME_LABEL: pod.doc.name,
                  REPLICA_TYPE_LABEL: pod.role.lower(), REPLICA_INDEX_LABEL: str(i)}
        if pod.role in CHIEF_ROLES or (not has_chief and pod.role == "Worker" and i == 0):
            labels[JOB_ROLE_LABEL] = "master"
        yield labels


def offline_pdb(index: Index, rule: Rule) -> Iterator[Violation]:
    """PodDisruptionBudgets whose selector matches pods of offline namespaces or of any TFJob
    in the PDB's namespace (policy/v1: a null selector selects nothing, ``{}`` everything)."""
    pdbs = [(d, (d.obj.get("spec") or {}).get("selector")) for d in index.of_kind("PodDisruptionBudget")]
    pdbs = [(d, selector) for d, selector in pdbs if isinstance(selector, dict)]
    if not pdbs:
        return
    training: dict[str, list] = defaultdict(list)  # by namespace: a PDB selects only in its own
    for pod in index.pods():
        if pod.role or index.ctx.scope_of(pod) == "offline":
            training[pod.doc.namespace].append(pod)
    for pdb, selector in pdbs:
        matched: dict[str, list[str]] = defaultdict(list)
        for pod in training.get(pdb.namespace, ()):
            if any(selector_matches(selector, labels) for labels in _pod_label_sets(pod)):
                matched[pod.doc.ref].append(pod.role)
        if matched:
            names = [ref + (f" ({', '.join(roles)})" if any(roles) else "") for ref, roles in sorted(matched.items())]
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            yield Violation(pdb, "spec.selector", f"selects pods of {', '.join(names[:3])}{more}")
        elif pdb.namespace in index.ctx.offline_namespaces:
            # The TFJobs it would protect need not be in this run: every pod there is offline.
            yield Violation(pdb, "metadata.namespace", f"{pdb.namespace} is an offline namespace; its pods are the "
                            "ones preemption and drains must be free to take")


def tfjob_memory_burst(index: Index, rule: Rule) -> Iterator[Violation]:
    """A TFJob container's memory limit at most MAX_MEMORY_BURST times its request, as the job-file
    construct enforces (memory is not compressible: the burst is memory the node may not have)."""
    for pod in index.pods():
        for path, container in containers(pod):
            resources = container.get("resources") or {}
            request = (resources.get("requests") or {}).get("memory")
            limit = (resources.get("limits") or {}).get("memory")
            if request is None or limit is None or not (quantity.is_quantity(request) and quantity.is_quantity(limit)):
                continue
            if quantity.parse(request) > 0 and quantity.parse(limit) > MAX_MEMORY_BURST * quantity.parse(request):
                yield Violation(pod.doc, f"{path}.resources.limits.memory",
                                f"{limit} is more than {MAX_MEMORY_BURST}x the request {request}")


def _replica_specs(doc: Doc) -> dict[str, tuple[str, dict]]:
    """Replica type -> (its key as written, its spec) of a TFJob; keys the operator renames
    (``worker`` -> ``Worker``) by their type."""
    specs = ((doc.obj.get("spec") or {}).get("tfReplicaSpecs")) if isinstance(doc.obj.get("spec"), dict) else None
    if not isinstance(specs, dict):
        return {}
    return {tf_role(key): (key, spec) for key, spec in specs.items() if isinstance(spec, dict)}


def _replica_gpus(spec: dict) -> float:
    """GPUs one replica asks for: the sum over its containers' limits (or requests)."""
    pod = ((spec.get("template") or {}).get("spec")) or {}
    total = 0.0
    for container in pod.get("containers") or []:
        if isinstance(container, dict):
            value = gpu_quantity(container, "limits") or gpu_quantity(container, "requests")
            if value is not None and quantity.is_quantity(value):
                total += float(quantity.parse(value))
    return total


def tfjob_allreduce_gpus(index: Index, rule: Rule) -> Iterator[Violation]:
    """A TFJob without PS is all-reduce (MultiWorkerMirroredStrategy): its Chief (or Master) is one
    more worker in the collective, so it must have the Workers' GPUs."""
    for doc in index.docs:
        specs = _replica_specs(doc)
        if PS_ROLE in specs or "Worker" not in specs:
            continue
        for role in CHIEF_ROLES:
            if role not in specs:
                continue
            key, spec = specs[role]
            chief, worker = _replica_gpus(spec), _replica_gpus(specs["Worker"][1])
            if chief != worker:
                yield Violation(doc, f"spec.tfReplicaSpecs.{key}.template.spec.containers",
                                f"{role} has {chief:g} GPU(s), each Worker {worker:g}")


def tfjob_ps_chief(index: Index, rule: Rule) -> Iterator[Violation]:
    """A TFJob with PS replicas and no Chief (or Master): TensorFlow 2's ParameterServerStrategy
    has no coordinator to run the training loop."""
    for doc in index.docs:
        specs = _replica_specs(doc)
        if PS_ROLE in specs and not any(role in specs for role in CHIEF_ROLES):
            yield Violation(doc, "spec.tfReplicaSpecs", f"{specs[PS_ROLE][0]} but no Chief")


def tfjob_queue_fits(index: Index, rule: Rule) -> Iterator[Violation]:
    """A TFJob that names a Kueue LocalQueue: the queue exists in the checked tree, and the whole
    job fits its ClusterQueue's quota, else Kueue never admits it (the job waits for ever). A tree
    with no ClusterQueue is not judged: its queues live elsewhere."""
    cluster_queues = {d.name: d for d in index.of_kind("ClusterQueue")}
    if not cluster_queues:
        return
    local = {(d.namespace, d.name): d for d in index.of_kind("LocalQueue")}
    asks: dict[str, Resources] = defaultdict(lambda: ZERO)
    for pod in index.pods():
        asks[pod.doc.ref] += pod_resources(pod.spec).times(replicas(pod, 0))
    for doc in index.of_kind("TFJob"):
        queue_name = kueue_admission.queue_label(doc)
        if queue_name is None:
            continue
        field = f"metadata.labels[{QUEUE_NAME_LABEL}]"
        queue = local.get((doc.namespace, queue_name))
        if queue is None:
            yield Violation(doc, field, f"no LocalQueue {queue_name!r} in namespace {doc.namespace!r}")
            continue
        cq_name = (queue.obj.get("spec") or {}).get("clusterQueue")
        cq = cluster_queues.get(cq_name)
        if cq is None:
            yield Violation(doc, field, f"LocalQueue {queue_name!r} points at ClusterQueue {cq_name!r}, which is not in the tree")
            continue
        quota = kueue_admission.nominal_quota(cq.obj)
        for (name, asked), (_, held) in zip(asks[doc.ref].by_name(), quota.by_name()):
            if asked > held:
                key = f"requests.{name}"  # printed as the quota prints it
                yield Violation(doc, "spec.tfReplicaSpecs", f"the job asks {resource_quota.show(key, asked)} {name} "
                                f"in all, ClusterQueue {cq_name!r} holds {resource_quota.show(key, held)}")


def tfjob_queued(index: Index, rule: Rule) -> Iterator[Violation]:
    """Where Kueue admits training (a LocalQueue in the TFJob's namespace), the TFJob names a
    queue: Kueue, managing every TFJob, suspends one without the label and never admits it."""
    queued = {d.namespace for d in index.of_kind("LocalQueue")}
    for doc in index.of_kind("TFJob"):
        if doc.namespace in queued and kueue_admission.queue_label(doc) is None:
            queues = sorted(d.name for d in index.of_kind("LocalQueue") if d.namespace == doc.namespace)
            yield Violation(doc, f"metadata.labels[{QUEUE_NAME_LABEL}]",
                            f"missing; namespace {doc.namespace!r} has LocalQueue(s) {', '.join(map(repr, queues))}")
