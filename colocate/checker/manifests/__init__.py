"""Read manifests from files and folders, keeping each object's file and line.

One module per job: ``doc`` (the object model), ``discovery`` (which files are manifests),
``loading`` (the go-yaml-compatible reading of their objects), ``pod_templates`` (the pod specs
inside an object) and ``lines`` (a field's line, for findings). Callers import from here.
"""
from __future__ import annotations

from colocate.checker.manifests.discovery import Skipped, files, find
from colocate.checker.manifests.doc import NON_API_KINDS, Doc
from colocate.checker.manifests.lines import field_lines
from colocate.checker.manifests.loading import collector_paused, kubeconform_resources, load, load_files, load_texts
from colocate.checker.manifests.pod_templates import POD_SPEC_PATHS, REPLICA_SPECS, PodSpec, pod_specs, replica_specs_field

#: What other modules import from here (the rest is each module's own).
__all__ = [
    "NON_API_KINDS", "POD_SPEC_PATHS", "REPLICA_SPECS", "Doc", "PodSpec", "Skipped",
    "collector_paused", "field_lines", "files", "find", "kubeconform_resources",
    "load", "load_files", "load_texts", "pod_specs", "replica_specs_field",
]
