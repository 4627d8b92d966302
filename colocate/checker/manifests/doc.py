"""The object model: one object read from a manifest file (Doc), where it was read from, and
the attributes every rule asks of it, computed once."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from colocate.model.objects import ObjectView

#: Files colocate writes for tools other than the API server: no metadata, never applied.
NON_API_KINDS = frozenset({
    "DistIndex", "KubeletConfiguration", "JoinConfiguration", "ClusterConfiguration", "KubeProxyConfiguration", "NodePool",
})
#: Cluster-scoped kinds; every other API kind is namespaced.
CLUSTER_SCOPED_KINDS = frozenset({
    "Namespace", "Node", "PersistentVolume", "PriorityClass", "StorageClass", "CSIDriver", "CSINode",
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService", "RuntimeClass",
    "IngressClass", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "VolumeAttachment",
    "CertificateSigningRequest", "FlowSchema", "PriorityLevelConfiguration",
    # Kueue's (spec.scope: Cluster in kubernetes-sigs/kueue v0.10.6 config/components/crd/bases).
    "AdmissionCheck", "ClusterQueue", "Cohort", "MultiKueueCluster", "MultiKueueConfig", "ProvisioningRequestConfig",
    "ResourceFlavor", "Topology", "WorkloadPriorityClass",
})


class _Stored:
    """A property computed once, then kept in the instance's ``__dict__`` (works on frozen
    dataclasses; Python 3.11's functools.cached_property takes a lock on every first use)."""

    def __init__(self, compute: Any):
        self.compute = compute

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.attribute] = self.compute(instance)
        return value


@dataclass(frozen=True)
class Doc(ObjectView):
    """One object, where it was read from."""

    file: str
    line: int
    obj: dict[str, Any]

    # A Doc never changes, and every rule asks these of every object: they are plain attributes,
    # filled when it is made (read ~5x faster than properties, measured over 424,000 objects).
    kind = _Stored(ObjectView.kind.fget)  # type: ignore[assignment]
    group = _Stored(ObjectView.group.fget)  # type: ignore[assignment]
    metadata = _Stored(ObjectView.metadata.fget)  # type: ignore[assignment]
    name = _Stored(ObjectView.name.fget)  # type: ignore[assignment]
    namespace = _Stored(ObjectView.namespace.fget)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        # ObjectView's properties, inline and in one order for all (the instances keep sharing
        # their dicts' keys): calling them here cost 0.8 s more per 81,000 objects.
        obj = self.obj
        kind, version, meta = obj.get("kind"), obj.get("apiVersion"), obj.get("metadata")
        if isinstance(kind, str) and isinstance(version, str):  # else computed when asked, and fails then
            meta = meta if isinstance(meta, dict) else {}
            self.__dict__.update(kind=kind, group=version.rpartition("/")[0], metadata=meta,
                                 name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
                                 is_api_object=kind not in NON_API_KINDS)

    @_Stored
    def is_api_object(self) -> bool:
        return self.kind not in NON_API_KINDS

    @_Stored
    def json_size(self) -> int:
        """Bytes of the object as compact JSON (what client-side apply's annotation and etcd
        store); computed once, as two rules ask it of every object."""
        return len(json.dumps(self.obj, separators=(",", ":")))

    @property
    def namespaced(self) -> bool:
        return self.is_api_object and self.kind not in CLUSTER_SCOPED_KINDS

    @property
    def ref(self) -> str:
        """``Kind/namespace/name``, with ``-`` for a missing namespace or name."""
        return f"{self.kind}/{self.namespace or '-'}/{self.name or '-'}"
