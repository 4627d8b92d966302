"""emit(): how every construct adds a plain manifest to its chart through cdk8s.

Constructs build plain dicts and touch jsii once per object: every jsii call is a round trip
to a Node.js process, so typed L1 classes for each nested field would make synth slow
(docs/architecture.md). Correctness of the dicts is proven by kubeconform and the policy rules.
"""
from __future__ import annotations

from typing import Any, Mapping

from cdk8s import ApiObject, ApiObjectMetadata, JsonPatch
from constructs import Construct



def emit(scope: Construct, id: str, manifest: Mapping[str, Any]) -> ApiObject:
    """Add one manifest to the chart. apiVersion, kind and metadata go in as props; every other
    top-level field as one JSON patch, applied when the chart is synthesized. A manifest
    without ``metadata`` (kubelet and kubeadm configuration files) keeps none."""
    meta = manifest.get("metadata")
    obj = ApiObject(
        scope,
        id,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=ApiObjectMetadata(**_metadata_kwargs(meta)) if meta else None,
    )
    for key, value in manifest.items():
        if key not in ("apiVersion", "kind", "metadata"):
            obj.add_json_patch(JsonPatch.add(f"/{key}", value))
    if meta is None:
        obj.add_json_patch(JsonPatch.remove("/metadata"))
    return obj


def _metadata_kwargs(meta: Mapping[str, Any]) -> dict[str, Any]:
    keys = {"name": "name", "namespace": "namespace", "labels": "labels", "annotations": "annotations",
            "finalizers": "finalizers"}
    return {py: meta[k8s] for k8s, py in keys.items() if k8s in meta}
