"""The pod templates inside an object: where each workload kind keeps its pod spec, and each
replica's of a Kubeflow training job (TFJob and the other kinds training-operator serves)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from colocate.checker.manifests.doc import Doc
from colocate.model.names import KUBEFLOW_REPLICA_SPECS, TFJOB_GROUP, tf_role

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

#: The Kubeflow training kinds and the field holding their replicas.
REPLICA_SPECS = KUBEFLOW_REPLICA_SPECS


def replica_specs_field(doc: Doc) -> str:
    """The field holding the replicas of a Kubeflow training job (empty for any other object)."""
    return REPLICA_SPECS.get(doc.kind, "") if doc.group == TFJOB_GROUP else ""


@dataclass(frozen=True)
class PodSpec:
    """A pod spec inside an object, with its dotted field path and its pod labels."""

    doc: Doc
    path: str
    spec: dict[str, Any]
    labels: dict[str, str]
    #: The TFJob replica type (``Chief``, ``Worker``, ``PS``...); empty for other workloads,
    #: the other Kubeflow kinds included (the TFJob rules read it).
    role: str = ""
    #: Its key in the job's replica specs as written (``worker`` is the TFJob replica type Worker).
    replica_key: str = ""


def _get(obj: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def pod_specs(doc: Doc) -> Iterator[PodSpec]:
    """Every pod spec the object creates pods from: workloads, and each replica of a Kubeflow
    training job."""
    field = replica_specs_field(doc)
    if field:
        replicas = _get(doc.obj, ("spec", field))
        for key in sorted(replicas) if isinstance(replicas, dict) else ():
            template = _get(replicas, (key, "template"))
            spec = template.get("spec") if isinstance(template, dict) else None
            if isinstance(spec, dict):
                role = tf_role(key) if doc.kind == "TFJob" else ""
                yield PodSpec(doc, f"spec.{field}.{key}.template.spec", spec,
                              _get(template, ("metadata", "labels")) or {}, role, key)
        return
    keys = POD_SPEC_PATHS.get(doc.kind)
    if not keys:
        return
    spec = _get(doc.obj, keys)
    if isinstance(spec, dict):
        labels = _get(doc.obj, ("metadata", "labels")) if doc.kind == "Pod" else _get(doc.obj, keys[:-1] + ("metadata", "labels"))
        yield PodSpec(doc, ".".join(keys), spec, labels or {})
