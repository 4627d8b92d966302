"""Namespace: a namespace with its Pod Security Admission levels, kept when Argo CD prunes or
cascade-deletes (deleting a namespace deletes everything in it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

from constructs import Construct

from colocate.constructs._k8s import emit
from colocate.errors import PropError
from colocate.model.names import PROTECTED_ANNOTATIONS
from colocate.model.validate import check_dns_label, check_labels

PSA_LEVELS = ("privileged", "baseline", "restricted")
_PSA = "pod-security.kubernetes.io"

Level = Literal["privileged", "baseline", "restricted"]


@dataclass(frozen=True)
class NamespaceProps:
    """Props of a Namespace."""

    #: Namespace name (DNS label).
    name: str
    #: Pod Security Admission level enforced (``pod-security.kubernetes.io/enforce``). Required:
    #: the level says which pods the API server admits here.
    enforce: Level
    #: Level only warned about (kubectl prints a warning) and audited. Default: none.
    warn_and_audit: Level | None = None
    #: Further labels, e.g. the tier label. Default: none.
    labels: Mapping[str, str] = field(default_factory=dict)
    #: Keep the namespace, and so everything in it, when Argo CD prunes it or its Application
    #: is deleted (``Prune=false,Delete=false``), and out of the Application's sync status once
    #: its file is gone (``IgnoreExtraneous``). Default True.
    protected: bool = True


class Namespace(Construct):
    """One Namespace object."""

    def __init__(self, scope: Construct, id: str, props: NamespaceProps):
        super().__init__(scope, id)
        where = f"Namespace {props.name!r}"
        check_dns_label(where, "name", props.name)
        check_labels(where, "labels", props.labels)
        for prop in ("enforce", "warn_and_audit"):
            level = getattr(props, prop)
            if level is not None and level not in PSA_LEVELS:
                raise PropError(where, prop, f"{level!r} must be one of {', '.join(PSA_LEVELS)}")
        self.props = props
        labels = {**props.labels, f"{_PSA}/enforce": props.enforce}
        if props.warn_and_audit:
            labels.update({f"{_PSA}/warn": props.warn_and_audit, f"{_PSA}/audit": props.warn_and_audit})
        metadata = {"name": props.name, "labels": labels}
        if props.protected:
            metadata["annotations"] = dict(PROTECTED_ANNOTATIONS)
        emit(self, "namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
