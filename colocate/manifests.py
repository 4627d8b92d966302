"""Read manifests from files and folders, keeping each object's file and line."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from colocate.errors import InputError

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Files colocate writes for tools other than the API server: no metadata, never applied.
NON_API_KINDS = frozenset({"DistIndex", "KubeletConfiguration", "JoinConfiguration", "NodePool"})
#: Cluster-scoped kinds; every other API kind is namespaced.
CLUSTER_SCOPED_KINDS = frozenset({
    "Namespace", "Node", "PersistentVolume", "PriorityClass", "StorageClass", "CSIDriver", "CSINode",
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService", "RuntimeClass",
    "IngressClass", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "VolumeAttachment",
    "CertificateSigningRequest", "FlowSchema", "PriorityLevelConfiguration",
})


class ObjectView:
    """Read-only accessors over a manifest dict held in ``self.obj``."""

    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.obj["kind"]

    @property
    def api_version(self) -> str:
        return self.obj["apiVersion"]

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.obj.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))


@dataclass(frozen=True)
class Doc(ObjectView):
    """One object, where it was read from."""

    file: str
    line: int
    obj: dict[str, Any]

    @property
    def is_api_object(self) -> bool:
        return self.kind not in NON_API_KINDS

    @property
    def namespaced(self) -> bool:
        return self.is_api_object and self.kind not in CLUSTER_SCOPED_KINDS

    @property
    def ref(self) -> str:
        """``Kind/namespace/name``, with ``-`` for a missing namespace or name."""
        return f"{self.kind}/{self.namespace or '-'}/{self.name or '-'}"


def files(paths: list[Path]) -> list[Path]:
    """Every YAML file under the paths, in a stable order. An unknown path is bad input."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()))
        elif path.is_file():
            out.append(path)
        else:
            raise InputError(str(path), "", "no such file or folder")
    return out


def _documents(path: Path) -> Iterator[tuple[int, Any]]:
    loader = _Loader(path.read_text())
    try:
        while loader.check_node():
            node = loader.get_node()
            yield node.start_mark.line + 1, loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise InputError(str(path), str(mark.line + 1) if mark else "", f"not valid YAML: {exc.problem}") from None
    finally:
        loader.dispose()


def load(paths: list[Path]) -> list[Doc]:
    """Parse every object. A document that is not a Kubernetes object is bad input."""
    docs = []
    for path in files(paths):
        for line, obj in _documents(path):
            if obj is None:
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str) \
                    or not isinstance(obj.get("apiVersion"), str):
                raise InputError(str(path), str(line), "not a Kubernetes object (needs apiVersion and kind)")
            docs.append(Doc(str(path), line, obj))
    return docs


#: Where each workload kind keeps its pod template spec.
_POD_SPEC_PATHS = {
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
                              _get(template, ("metadata", "labels")) or {}, role)
        return
    keys = _POD_SPEC_PATHS.get(doc.kind)
    if not keys:
        return
    spec = _get(doc.obj, keys)
    if isinstance(spec, dict):
        labels = _get(doc.obj, ("metadata", "labels")) if doc.kind == "Pod" else _get(doc.obj, keys[:-1] + ("metadata", "labels"))
        yield PodSpec(doc, ".".join(keys), spec, labels or {})


def containers(pod: PodSpec) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, container) for init containers and containers."""
    for key in ("initContainers", "containers"):
        for i, container in enumerate(pod.spec.get(key) or []):
            if isinstance(container, dict):
                yield f"{pod.path}.{key}[{i}]", container
