"""GitOps checks: what Argo CD would delete, and what it must not."""
from __future__ import annotations

from typing import Any, Iterator

from colocate.checker import Index, Rule, Violation
from colocate.model.names import KEEP_ON_DELETE, KEEP_ON_PRUNE, SYNC_OPTIONS, sync_options

#: Kinds whose deletion deletes data: a namespace's contents, a claim's volume, a CRD's resources.
STATEFUL_KINDS = ("Namespace", "PersistentVolumeClaim", "CustomResourceDefinition")


def deletion_protection(index: Index, rule: Rule) -> Iterator[Violation]:
    """Stateful objects without both Prune=false and Delete=false."""
    for doc in index.api_objects():
        if doc.kind not in STATEFUL_KINDS:
            continue
        missing = [o for o in (KEEP_ON_PRUNE, KEEP_ON_DELETE) if o not in sync_options(doc.metadata)]
        if missing:
            yield Violation(doc, f"metadata.annotations[{SYNC_OPTIONS}]", f"missing {', '.join(missing)}")


#: Application fields and the Argo CD release that introduced them; an older release drops them
#: silently (the chart then runs with its defaults). Read from argoproj/argo-cd
#: pkg/apis/application/v1alpha1/types.go at v2.6.0 ... v2.10.0 (docs/gitops.md).
SOURCES_SINCE = (2, 6)
SOURCE_FIELDS = {
    ("helm", "valuesObject"): (2, 8),
    ("kustomize", "patches"): (2, 9),
    ("kustomize", "components"): (2, 10),
}


def _sources(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(spec.get("source"), dict):
        yield "spec.source", spec["source"]
    for i, source in enumerate(spec.get("sources") or []):
        if isinstance(source, dict):
            yield f"spec.sources[{i}]", source


def argocd_field_version(index: Index, rule: Rule) -> Iterator[Violation]:
    """Application fields newer than the oldest Argo CD that syncs the repository."""
    oldest = index.ctx.min_argocd_version
    for doc in index.of_kind("Application"):
        spec = doc.obj.get("spec") if doc.group == "argoproj.io" else None
        if not isinstance(spec, dict):
            continue
        found = [("spec.sources", SOURCES_SINCE)] if spec.get("sources") else []
        for path, source in _sources(spec):
            for (section, name), since in SOURCE_FIELDS.items():
                if (source.get(section) or {}).get(name) is not None:
                    found.append((f"{path}.{section}.{name}", since))
        for field, since in found:
            if since > oldest:
                yield Violation(doc, field, f"needs Argo CD {since[0]}.{since[1]}, minArgoCDVersion is "
                                            f"{oldest[0]}.{oldest[1]}")
