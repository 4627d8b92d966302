"""Which changes need a second look, and why. Upstream sources: docs/review.md."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from colocate.model import quantity
from colocate.checker.manifests import NON_API_KINDS, Doc, pod_specs
from colocate.model.names import KEEP_ON_PRUNE, TIER_LABEL, sync_options
from colocate.model.tiers import PriorityTier, TierClass, inversions
from colocate.model.scheduling import pod_pools
from colocate.review.compare import FieldChange
from colocate.review.tree import Entry

#: Ranks, most harmful first: the report lists dangers in this order. HARMLESS sorts last.
DATA_LOSS, RECREATE, PRIORITY, TAINT, POOL_MOVE, NODES, HARMLESS = range(7)
#: Deleting these deletes data or everything inside them.
_HOLDS_DATA = {
    "Namespace": "deleting a Namespace deletes every object in it",
    "PersistentVolumeClaim": "deleting a PersistentVolumeClaim deletes its volume's data (with the StorageClass's "
                             "usual Delete reclaim policy)",
    "PersistentVolume": "deleting a PersistentVolume can delete the disk behind it",
    "CustomResourceDefinition": "deleting a CustomResourceDefinition deletes every object of its kind",
    "StatefulSet": "deleting a StatefulSet stops the pods that own its volumes",
    "TFJob": "deleting a TFJob stops its training at once (training-operator deletes its pods): the work since "
             "its last checkpoint is lost, and a job still running never finishes",
}
#: Fields the API server refuses to update: Argo CD can only apply the change by deleting and
#: re-creating the object (Replace=true), which for a workload restarts every pod.
_IMMUTABLE = {
    "Deployment": ("spec.selector",),
    "DaemonSet": ("spec.selector",),
    "ReplicaSet": ("spec.selector",),
    "StatefulSet": ("spec.selector", "spec.volumeClaimTemplates", "spec.serviceName", "spec.podManagementPolicy"),
    "Job": ("spec.selector", "spec.template", "spec.completionMode"),
    "PersistentVolumeClaim": ("spec.storageClassName", "spec.accessModes", "spec.volumeName", "spec.selector",
                              "spec.volumeMode"),
    "PriorityClass": ("value", "preemptionPolicy"),
    "RoleBinding": ("roleRef",),
    "ClusterRoleBinding": ("roleRef",),
}
#: A path inside a pod's tolerations or a node's taints; group 1 is the list's own path.
_TAINT_FIELD = re.compile(r"^(|.*\.)(tolerations|taints)(?=\[|$)")


@dataclass(frozen=True)
class Danger:
    rank: int
    reason: str


def _prune_disabled(obj: dict[str, Any]) -> bool:
    return KEEP_ON_PRUNE in sync_options(obj.get("metadata"))


#: kubeadm control-plane config documents (``kubeadm init --config``), as opposed to node files.
_CONTROL_PLANE_KINDS = frozenset({"ClusterConfiguration", "KubeProxyConfiguration"})


def _node_file(entry: Entry) -> list[Danger]:
    """Node provisioning files reach a node only when it (re-)joins."""
    if entry.key.kind not in NON_API_KINDS:
        return []
    if entry.key.kind in _CONTROL_PLANE_KINDS:
        return [Danger(NODES, f"{entry.file} is not applied by Argo CD: kubeadm reads it at kubeadm init; a running "
                              f"cluster keeps its live copies in the kube-system ConfigMaps kubeadm-config and "
                              f"kube-proxy, which editing this file does not change")]
    return [Danger(NODES, f"{entry.file} is not applied by Argo CD: drain and re-join the pool's nodes for it to "
                          f"take effect (a CPU manager policy change also needs /var/lib/kubelet/cpu_manager_state "
                          f"removed)")]


def _tier_of(entry: Entry, tiers: Sequence[PriorityTier]) -> str:
    """The tier a PriorityClass serves: the configuration's tier of its name (the configuration is
    the source of truth), else its colocate.io/tier label; "" for any other object."""
    if entry.key.kind != "PriorityClass":
        return ""
    configured = next((t.role for t in tiers if t.name == entry.key.name), "")
    labels = (entry.obj.get("metadata") or {}).get("labels")
    label = labels.get(TIER_LABEL) if isinstance(labels, dict) else None
    return configured or (label if isinstance(label, str) else "")


def removed(entry: Entry, tiers: Sequence[PriorityTier] = ()) -> list[Danger]:
    """Why removing this object from dist/ is dangerous; ``tiers``: the configuration's."""
    if entry.key.kind in NON_API_KINDS:
        return _node_file(entry)
    tier = _tier_of(entry, tiers)
    if tier:
        return [Danger(PRIORITY, f"{entry.key.name} is the {tier} tier's PriorityClass: Argo CD prunes it (Delete=false "
                                 f"stops a cascade delete, not a prune), and the Priority admission plugin then refuses "
                                 f"every new pod naming it")]
    reason = _HOLDS_DATA.get(entry.key.kind)
    if not reason:
        return []
    if _prune_disabled(entry.obj):
        reason += f" (Argo CD keeps it: {KEEP_ON_PRUNE}; delete it by hand only on purpose)"
    return [Danger(DATA_LOSS, reason)]


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def _storage(obj: dict[str, Any]) -> Any:
    return (((obj.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")


def _pools(entry: Entry) -> set[str]:
    """Pools any pod of the object may run in."""
    doc = Doc(entry.file, 0, entry.obj)
    return set().union(*(pod_pools(pod.spec) for pod in pod_specs(doc)))


def changed(old: Entry, new: Entry, fields: list[FieldChange]) -> list[Danger]:
    kind = new.key.kind
    out = []
    immutable = sorted({prefix for prefix in _IMMUTABLE.get(kind, ()) for f in fields if _under(f.path, prefix)})
    for prefix in immutable:
        out.append(Danger(RECREATE, f"{prefix} is immutable: Argo CD must delete and re-create the {kind} "
                                    f"(Replace=true) or the sync fails"))
    if kind == "TFJob" and any(_under(f.path, "spec.tfReplicaSpecs") for f in fields):
        name, namespace = new.key.name, new.key.namespace
        out.append(Danger(RECREATE, f"training-operator v1.7.0 never updates a TFJob's pods: running replicas keep the "
                                    f"old template and TF_CONFIG; after the sync run kubectl -n {namespace} delete tfjob "
                                    f"{name}, Argo CD re-creates it and it resumes from {name}-checkpoints "
                                    f"(docs/training.md, 'Editing a job file')"))
    if kind == "PersistentVolumeClaim":
        before, after = _storage(old.obj), _storage(new.obj)
        try:
            if before is not None and after is not None and quantity.parse(after) < quantity.parse(before):
                out.append(Danger(RECREATE, f"storage shrinks from {before} to {after}: a claim can only grow, "
                                            f"so it must be deleted and re-created, losing its data"))
        except ValueError:
            pass
    if kind == "PriorityClass" and any(f.path == "value" for f in fields):
        value = next(f for f in fields if f.path == "value")
        out.append(Danger(PRIORITY, f"priority value {value.old} -> {value.new} changes who preempts whom; "
                                    f"running pods keep the old value until re-created"))
    touched = sorted({m.group(0) for m in map(_TAINT_FIELD.match, (f.path for f in fields)) if m})
    if touched:
        out.append(Danger(TAINT, f"taints or tolerations change ({', '.join(touched)}): decides which pods may run "
                                 f"on which nodes, and which are evicted (NoExecute)"))
    before_pools, after_pools = _pools(old), _pools(new)
    if before_pools != after_pools:
        out.append(Danger(POOL_MOVE, f"pods move between pools: {', '.join(sorted(before_pools)) or 'any'} -> "
                                     f"{', '.join(sorted(after_pools)) or 'any'}"))
    return out + _node_file(new)


def _tier_classes(objects: dict[Any, Entry], tiers: Sequence[PriorityTier]) -> list[TierClass]:
    """The PriorityClasses of a tree that serve a tier (the configuration's tier of their name,
    else their colocate.io/tier label), with their values."""
    out = []
    for entry in objects.values():
        role = _tier_of(entry, tiers)
        value = entry.obj.get("value")
        if role and isinstance(value, int) and not isinstance(value, bool):
            out.append(TierClass(entry.key.name, role, value))
    return out


def tier_inversions(before: dict[Any, Entry], after: dict[Any, Entry],
                    tiers: Sequence[PriorityTier] = ()) -> dict[str, list[Danger]]:
    """PriorityClass name -> the inversions of the tiers the change makes: a lower tier's class
    that now outranks (or ties) a higher tier's, so its pods preempt theirs. Both classes of a
    pair carry it: either may be the one the change raised or lowered. A class the configuration
    names keeps its configured tier whatever its label says, so relabelling it hides nothing."""
    was = {(upper.name, lower.name) for upper, lower in inversions(_tier_classes(before, tiers))}
    out: dict[str, list[Danger]] = {}
    for upper, lower in inversions(_tier_classes(after, tiers)):
        if (upper.name, lower.name) not in was:
            found = Danger(PRIORITY, f"tier inversion: {lower.name} ({lower.role}, {lower.value}) now outranks "
                                     f"{upper.name} ({upper.role}, {upper.value}): {lower.role} pods preempt "
                                     f"{upper.role} pods")
            for name in (lower.name, upper.name):
                out.setdefault(name, []).append(found)
    return out
