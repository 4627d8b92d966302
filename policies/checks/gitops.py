"""GitOps checks: what Argo CD would delete, and what it must not."""
from __future__ import annotations

from typing import Iterator

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
