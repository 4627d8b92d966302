"""A Kubernetes object's identity, read from its dict: kind, group, name, namespace.

The checker's parsed documents (colocate/checker/manifests/doc.py ``Doc``), the files synth writes
(colocate/synth/write.py ``Manifest``) and the PromQL finder (colocate/promql/) share it.
"""
from __future__ import annotations

from typing import Any


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
    def labels(self) -> dict[str, Any]:
        """metadata.labels, or {} when it is missing or not a mapping (the schema reports that)."""
        labels = self.metadata.get("labels")
        return labels if isinstance(labels, dict) else {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))
