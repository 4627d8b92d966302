"""Shared helpers for the constructs: emit a plain manifest through cdk8s, name checks.

Constructs build plain dicts and touch jsii once per object: every jsii call is a round trip
to a Node.js process, so typed L1 classes for each nested field would make synth slow
(PITFALLS 1.1). Correctness of the dicts is proven by kubeconform and the policy rules.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from cdk8s import ApiObject, ApiObjectMetadata, JsonPatch
from constructs import Construct

from colocate.errors import PropError

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


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


def check_dns_label(construct: str, prop: str, value: str) -> None:
    if not isinstance(value, str) or len(value) > 63 or not DNS_LABEL.match(value):
        raise PropError(construct, prop, f"{value!r} is not a DNS-1123 label "
                        "(lower-case letters, digits and '-', at most 63 characters)")


def check_labels(construct: str, prop: str, labels: Mapping[str, str]) -> None:
    """Label keys and values as the API server validates them, so a bad label fails at
    synth and not at apply time (cdk8s#1338)."""
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) or len(name) > 63 \
                or not _LABEL_NAME.match(name):
            raise PropError(construct, f"{prop}[{key!r}]", "is not a valid label key")
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            raise PropError(construct, f"{prop}[{key!r}]", f"value {value!r} is not a valid label value")
