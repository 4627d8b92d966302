"""The result model of `colocate check`: rules, findings, the context they are judged in and
the index of every checked object."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from colocate.checker import kubeconform, manifests
from colocate.model.cluster import Cluster
from colocate.model.pool_facts import PoolFacts
from colocate.checker.manifests import Doc, PodSpec
from colocate.rules.files import Rule, placeholder_values

SCHEMA_RULE_ID = "SCHEMA"
#: Notices about the input itself: folders that are not plain manifests.
INPUT_RULE_ID = "INPUT"


#: kubeconform's findings and the notices about the input, described like rules for
#: --explain and SARIF. They have no rule file, and no annotation silences them.
SCHEMA_RULE = Rule(
    SCHEMA_RULE_ID, "kubernetes-schema", "error", "hygiene", "Object",
    "kubeconform -strict validates every object against the Kubernetes schemas of colocate.yaml's "
    "kubernetesVersion, and custom resources against policies/schemas/: an object it rejects, or has no "
    "schema for, is refused by the API server or silently loses fields.",
    "every object matches its Kubernetes or custom resource schema",
    "make the object match the Kubernetes 1.28 schema (or our schema under policies/schemas/)")
INPUT_RULE = Rule(
    INPUT_RULE_ID, "input-form", "warning", "hygiene", "Set",
    "A Helm chart or a Kustomize folder is not a manifest: check reports it instead of guessing what "
    "it renders to.",
    "checked paths hold plain manifests", "render it first (helm template, kustomize build) and check the output")

@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    file: str
    line: int
    kind: str
    namespace: str
    name: str
    field: str
    message: str
    fix: str = ""
    #: Line of the offending field (or of the deepest part of its path the object has); 0 = not known.
    field_line: int = 0

    @property
    def ref(self) -> str:
        return f"{self.kind or '-'}/{self.namespace or '-'}/{self.name or '-'}"


@dataclass
class Context:
    """What the rules need to know about the cluster, read from the cluster definition and
    from tier labels on the checked Namespaces, so each fact has one source."""

    cluster: Cluster
    online_namespaces: set[str]
    offline_namespaces: set[str]
    #: Oldest Argo CD (major, minor) that syncs the manifests (colocate.yaml).
    min_argocd_version: tuple[int, int] = (0, 0)
    #: Harbor, and the upstream registries the nodes' containerd redirects to its proxy-cache
    #: projects (colocate.yaml registry.host, registry.proxyCacheProjects); "" = not known.
    registry_host: str = ""
    proxied_registries: frozenset[str] = frozenset()
    #: The node pools, from NodePool descriptions (dist/nodes/ or --cluster); () = not known.
    pools: tuple[PoolFacts, ...] = ()
    #: Where they were read from, for messages.
    pools_source: str = ""
    #: The rules of this run (hygiene checks name unknown rule ids).
    rules: tuple = ()
    #: colocate.yaml storage.sharedClass: the ReadWriteMany (NFS) class; "" = not known.
    shared_storage_class: str = ""

    @property
    def values(self) -> dict[str, str]:
        """Placeholders rule files may use."""
        return placeholder_values(self.cluster, self.registry_host, self.proxied_registries, self.offline_namespaces)

    def scope_of(self, pod: PodSpec) -> str:
        ns = pod.doc.namespace
        return "online" if ns in self.online_namespaces else "offline" if ns in self.offline_namespaces else "other"


class UndeclaredKind(Exception):
    """A check asked for a kind its rule file does not name (the engine turns it into bad input
    naming the rule file): it was handed none of them, so it would silently judge nothing."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


@dataclass
class Index:
    """The objects a rule is run over, with lookups the rules share. Each lookup is built once,
    on first use, in one pass over the objects, so that no rule scans them per object."""

    docs: list[Doc]
    ctx: Context
    #: What these objects are (checker.reads.Reads), when a check's declaration chose them:
    #: ``of_kind`` refuses a kind it does not name. None: every object.
    declared: Any = None
    _by_kind: dict[str, list[Doc]] | None = field(default=None, init=False, repr=False)
    _pods: list[PodSpec] | None = field(default=None, init=False, repr=False)
    _shared: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def api_objects(self) -> Iterator[Doc]:
        return (d for d in self.docs if d.is_api_object)

    def of_kind(self, kind: str) -> list[Doc]:
        if self.declared is not None and not self.declared.names(kind):
            raise UndeclaredKind(kind)
        if self._by_kind is None:
            self._by_kind = {}
            for doc in self.docs:
                self._by_kind.setdefault(doc.kind, []).append(doc)
        return list(self._by_kind.get(kind, ()))

    def pods(self, scope: str = "all") -> Iterator[PodSpec]:
        if self._pods is None:
            self._pods = [pod for doc in self.docs for pod in _pod_specs(doc)]
        for pod in self._pods:
            if scope == "all" or self.ctx.scope_of(pod) == scope:
                yield pod

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, once per index: what several rules derive from the same objects (the
        PromQL queries and their analyses, the metrics known to this run)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]


def _pod_specs(doc: Doc) -> list[PodSpec]:
    """manifests.pod_specs, once per object: several checks' indexes hold the same workloads."""
    made = doc.__dict__.get("_pod_specs")
    if made is None:
        made = doc.__dict__["_pod_specs"] = list(manifests.pod_specs(doc))
    return made


#: (phase or rule id, seconds) in the order they ran, for ``check --timings``.
Timings = list[tuple[str, float]]


@dataclass(frozen=True)
class Violation:
    """What a Python check returns: where, and optionally what exactly was found."""

    doc: Doc
    field: str
    detail: str = ""


@dataclass
class CheckResult:
    findings: list[Finding]
    kubeconform: kubeconform.Result
    objects: int
    rules: list[Rule] = field(default_factory=list)
    #: Findings an object's colocate.io/ignore annotation silenced, with the reason given.
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)
    #: What the verdict cache did, for --timings ("" without a cache).
    cache: str = ""

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]
