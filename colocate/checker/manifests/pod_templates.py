"""The pod templates inside an object: where each workload kind keeps its pod spec, and each
TFJob replica's."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from colocate.checker.manifests.doc import Doc
from colocate.model.names import tf_role

#: Where each workload kind keeps its pod template spec.
POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


@dataclass(frozen=True)
class PodSpec:
    """A pod spec inside an object, with its dotted field path and its pod labels."""

    doc: Doc
    path: str
    spec: dict[str, Any]
    labels: dict[str, str]
    #: The TFJob replica type (``Chief``, ``Worker``, ``PS``...); empty for other workloads.
    role: str = ""
    #: Its key in ``tfReplicaSpecs`` as written (``worker`` is the replica type Worker).
    replica_key: str = ""


def _get(obj: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def pod_specs(doc: Doc) -> Iterator[PodSpec]:
    """Every pod spec the object creates pods from: workloads, and each TFJob replica."""
    if doc.kind == "TFJob" and doc.group == "kubeflow.org":
        replicas = _get(doc.obj, ("spec", "tfReplicaSpecs")) or {}
        for role in sorted(replicas):
            template = _get(replicas, (role, "template")) or {}
            spec = template.get("spec")
            if isinstance(spec, dict):
                yield PodSpec(doc, f"spec.tfReplicaSpecs.{role}.template.spec", spec,
                              _get(template, ("metadata", "labels")) or {}, tf_role(role), role)
        return
    keys = POD_SPEC_PATHS.get(doc.kind)
    if not keys:
        return
    spec = _get(doc.obj, keys)
    if isinstance(spec, dict):
        labels = _get(doc.obj, ("metadata", "labels")) if doc.kind == "Pod" else _get(doc.obj, keys[:-1] + ("metadata", "labels"))
        yield PodSpec(doc, ".".join(keys), spec, labels or {})
