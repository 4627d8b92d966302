"""Pod-placement and image facts the constructs and the checker share: one pool affinity term,
one label-selector matcher, one image-reference parser. Plain functions, no cdk8s."""
from __future__ import annotations

import re
# isinstance with typing's Mapping goes through typing's __instancecheck__: several times slower,
# and the capacity rules match selectors per pod and pool.
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from colocate.model.names import POOL_LABEL, POOL_SELECTOR_LABEL

#: Labels that name a node's pool: the one colocate selects by, and the kubelet-set one.
_POOL_KEYS = (POOL_SELECTOR_LABEL, POOL_LABEL)


def pool_term(pools: Iterable[str]) -> dict[str, Any]:
    """A nodeSelectorTerm that admits the nodes of these pools (by the pool label kubelets
    cannot set on themselves)."""
    return {"matchExpressions": [{"key": POOL_SELECTOR_LABEL, "operator": "In", "values": sorted(pools)}]}


def required_pool_affinity(pools: Iterable[str]) -> dict[str, Any]:
    """``affinity`` that requires one of these pools."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [pool_term(pools)]}}}


def ordered_pool_affinity(pools: Sequence[str]) -> dict[str, Any]:
    """``affinity`` that requires one of ``pools`` and prefers the first: the scheduler scores
    its nodes higher and spills to the others only when it is full."""
    affinity = required_pool_affinity(pools)
    if len(pools) > 1:
        affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": 100, "preference": pool_term(pools[:1])}]
    return affinity


def _required_terms(spec: Mapping[str, Any]) -> list[dict]:
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    return required.get("nodeSelectorTerms") or []


def pod_pools(spec: Mapping[str, Any]) -> set[str]:
    """Pools a pod may run in: the pool label in its nodeSelector or required node affinity
    (``In``). Empty: anywhere."""
    out: set[str] = set()
    selector = spec.get("nodeSelector") or {}
    out.update(selector[key] for key in _POOL_KEYS if key in selector)
    for term in _required_terms(spec):
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") in _POOL_KEYS and expr.get("operator") == "In":
                out.update(expr.get("values") or [])
    return out


def preferred_pool(spec: Mapping[str, Any]) -> str | None:
    """The pool a pod lands on while it has room: its only pool, or among several the one its
    heaviest preferred node-affinity term names alone. None when that is not decidable."""
    pools = pod_pools(spec)
    if len(pools) == 1:
        return next(iter(pools))
    preferred = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                 .get("preferredDuringSchedulingIgnoredDuringExecution") or [])
    for term in sorted(preferred, key=lambda t: -int(t.get("weight") or 0)):
        for expr in (term.get("preference") or {}).get("matchExpressions") or []:
            values = expr.get("values") or []
            if expr.get("key") in _POOL_KEYS and expr.get("operator") == "In" and len(values) == 1 \
                    and values[0] in pools:
                return values[0]
    return None


def node_selected(spec: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a node with ``labels`` passes the pod's nodeSelector and required node affinity
    (terms ORed, expressions ANDed; taints are not considered)."""
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    terms = _required_terms(spec)
    return not terms or any(selector_matches({"matchExpressions": t.get("matchExpressions") or []}, labels)
                            for t in terms)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels and matchExpressions) against a label set, as the
    API server evaluates it: ``{}`` matches everything, a null selector (``None``) nothing;
    NotIn and DoesNotExist hold when the key is absent; an unknown operator never holds. A
    selector of the wrong shape (a list where a mapping goes), which the API server refuses,
    matches nothing; labels of the wrong shape are none."""
    if not isinstance(selector, Mapping):
        return False
    match_labels, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
    match_labels, expressions = {} if match_labels is None else match_labels, [] if expressions is None else expressions
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
        return False
    labels = labels if isinstance(labels, Mapping) else {}
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for expression in expressions:
        if not isinstance(expression, Mapping) or not isinstance(expression.get("key"), str):
            return False
        key, values = expression["key"], expression.get("values") or []
        values = values if isinstance(values, list) else []
        present = key in labels
        operator = str(expression.get("operator"))
        if operator == "In":
            holds = present and labels.get(key) in values
        elif operator == "NotIn":
            holds = not present or labels.get(key) not in values
        else:
            holds = present if operator == "Exists" else not present if operator == "DoesNotExist" else False
        if not holds:
            return False
    return True


#: The registry a runtime pulls from when a reference names none (containerd v1.7.13
#: reference/docker/normalize.go, defaultDomain), where official images live under ``library/``.
DEFAULT_REGISTRY = "docker.io"


# The image reference grammar of github.com/docker/distribution reference/regexp.go (v2.8.2),
# which the kubelet and containerd parse image names with: lower-case path components joined by
# ".", "_", "__" or dashes, an optional registry host[:port], a tag of at most 128 word
# characters, a digest of at least 32 hex digits; at most 255 characters of name
# (reference.go NameTotalLengthMax).
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"  # regexp.go: [-]*; an empty separator only joins two runs, so -+
_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?"
_TAG = r"[0-9A-Za-z_][0-9A-Za-z_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"(?P<name>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)(?::{_TAG})?(?:@{_DIGEST})?")
NAME_TOTAL_LENGTH_MAX = 255


def reference_error(image: str) -> str:
    """Why ``image`` is not an image reference the kubelet can pull; "" when it is one."""
    match = _REFERENCE.fullmatch(image)
    if not match:
        return (f"{image!r} is not a valid image reference: [host[:port]/]path[:tag][@digest], the path in lower "
                "case, its parts letters and digits joined by '.', '_', '__' or '-' (no '..', no empty part)")
    if len(match["name"]) > NAME_TOTAL_LENGTH_MAX:
        return f"{image!r} is not a valid image reference: its name is longer than {NAME_TOTAL_LENGTH_MAX} characters"
    return ""


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
    def host(self) -> str:
        """The registry the runtime pulls from (``docker.io`` when the reference names none)."""
        return self.registry or DEFAULT_REGISTRY

    @property
    def path(self) -> str:
        """The repository as its registry stores it: Docker Hub's official images under ``library/``."""
        if self.host == DEFAULT_REGISTRY and "/" not in self.repository:
            return f"library/{self.repository}"
        return self.repository

    def moved_to(self, prefix: str) -> str:
        """The same image under ``prefix`` (``<registry>/<project>``), tag and digest kept."""
        return f"{prefix}/{self.path}" + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")

    @property
    def has_registry_path(self) -> bool:
        """``registry/repository`` or at least ``project/repository`` (a mirror path)."""
        return bool(self.registry) or "/" in self.repository
