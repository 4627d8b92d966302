"""Pod-placement and image facts the constructs and the checker share: one pool affinity term,
one label-selector matcher, one image-reference parser. Plain functions, no cdk8s."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from colocate.model.names import POOL_LABEL


def pool_term(pools: Iterable[str]) -> dict[str, Any]:
    """A nodeSelectorTerm that admits the nodes of these pools (by their pool label)."""
    return {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": sorted(pools)}]}


def required_pool_affinity(pools: Iterable[str]) -> dict[str, Any]:
    """``affinity`` that requires one of these pools."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [pool_term(pools)]}}}


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels and matchExpressions) against a label set, as the
    API server evaluates it: ``{}`` matches everything, a null selector (``None``) nothing;
    NotIn and DoesNotExist hold when the key is absent; an unknown operator never holds."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, values = expression.get("key"), expression.get("values") or []
        present = key in labels
        holds = {"In": present and labels.get(key) in values,
                 "NotIn": not present or labels.get(key) not in values,
                 "Exists": present, "DoesNotExist": not present}.get(expression.get("operator"), False)
        if not holds:
            return False
    return True


@dataclass(frozen=True)
class ImageRef:
    """``[registry/]repository[:tag][@digest]``, split as the container runtime reads it."""

    registry: str
    repository: str
    tag: str
    digest: str

    @classmethod
    def parse(cls, image: str) -> "ImageRef":
        rest, _, digest = image.partition("@")
        first, slash, remainder = rest.partition("/")
        # The first component is a registry when it has a '.' or ':' or is localhost.
        registry = first if slash and ("." in first or ":" in first or first == "localhost") else ""
        path = remainder if registry else rest
        repository, colon, tag = path.rpartition(":")
        if not colon or "/" in tag:
            repository, tag = path, ""
        return cls(registry, repository, tag, digest)

    @property
    def pinned(self) -> bool:
        """A digest, or a tag other than ``latest``: IfNotPresent never re-pulls a moving tag."""
        return bool(self.digest) or self.tag not in ("", "latest")

    @property
    def has_registry_path(self) -> bool:
        """``registry/repository`` or at least ``project/repository`` (a mirror path)."""
        return bool(self.registry) or "/" in self.repository
