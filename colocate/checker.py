"""`colocate check`: kubeconform plus the policy rules, over one index of every object.

Rules live in ``policies/rules/<id>.yaml``: metadata, message and fix, and either a JSON
Schema (single-object rules, Polaris style) or a Python check ``<module>.<function>`` in
``policies/checks/<module>.py`` (rules that read more than one field or join objects).
"""
from __future__ import annotations

import gc
import hashlib
import importlib
import json
import re
import string
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from colocate import kubeconform, manifests
from colocate.model.cluster import Cluster, reference
from colocate.model.names import IGNORE_ANNOTATION, TIER_LABEL
from colocate.errors import ColocateError, InputError
from colocate.resources import CONFIG_NAME, data_path, repository
from colocate.model import pool_facts
from colocate.model.pool_facts import PoolFacts
from colocate.manifests import Doc, PodSpec

def _config_module():
    """colocate.config, imported when first needed: a check answered from its cache needs none of
    it (its YAML loader, time zones and addresses: a tenth of that answer's start-up)."""
    from colocate import config

    return config


RULES_DIR = data_path("colocate.policies", "rules")
_RULE_SCHEMA = json.loads(data_path("colocate", "schemas", "rule.schema.json").read_text())
SCHEMA_RULE_ID = "SCHEMA"
#: Notices about the input itself: folders that are not plain manifests.
INPUT_RULE_ID = "INPUT"


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: str
    category: str
    target: str
    rationale: str
    message: str
    fix: str
    scope: str = "all"
    kinds: tuple[str, ...] = ()
    schema: dict | None = None
    check: str | None = None
    #: CEL the generated ValidatingAdmissionPolicy runs (colocate/admission.py); None: check only.
    admission: dict | None = None

    def filled(self, values: dict[str, str]) -> "Rule":
        """The rule with the ``${name}`` placeholders of its message and fix replaced, as findings
        show them (a rationale has none: it may quote ``$`` from PromQL or Grafana)."""
        return replace(self, message=_fill(self.message, values), fix=_fill(self.fix, values))


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
        c = self.cluster
        return {"online_priority": c.tier("online").name, "offline_priority": c.tier("offline").name,
                "registry_host": self.registry_host, "proxied_registries": ", ".join(sorted(self.proxied_registries)),
                "online_taint_key": c.online_taint.key, "tier_label": TIER_LABEL,
                "offline_namespaces": ", ".join(sorted(self.offline_namespaces))}

    def scope_of(self, pod: PodSpec) -> str:
        ns = pod.doc.namespace
        return "online" if ns in self.online_namespaces else "offline" if ns in self.offline_namespaces else "other"


@dataclass
class Index:
    """Every checked object, with lookups the cross-object rules share. Each lookup is built
    once, on first use, in one pass over the objects, so that no rule scans them per object."""

    docs: list[Doc]
    ctx: Context
    _by_kind: dict[str, list[Doc]] | None = field(default=None, init=False, repr=False)
    _pods: list[PodSpec] | None = field(default=None, init=False, repr=False)
    _shared: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def api_objects(self) -> Iterator[Doc]:
        return (d for d in self.docs if d.is_api_object)

    def of_kind(self, kind: str) -> list[Doc]:
        if self._by_kind is None:
            self._by_kind = {}
            for doc in self.docs:
                self._by_kind.setdefault(doc.kind, []).append(doc)
        return list(self._by_kind.get(kind, ()))

    def pods(self, scope: str = "all") -> Iterator[PodSpec]:
        if self._pods is None:
            self._pods = [pod for doc in self.docs for pod in manifests.pod_specs(doc)]
        for pod in self._pods:
            if scope == "all" or self.ctx.scope_of(pod) == scope:
                yield pod

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, once per index: what several rules derive from the same objects (the
        PromQL queries and their analyses, the metrics known to this run)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]


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


def _fill(value: Any, values: dict[str, str]) -> Any:
    """Replace ``${name}`` placeholders in every string of a rule's schema or text."""
    if isinstance(value, str):
        return string.Template(value).substitute(values)
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


@lru_cache(maxsize=None)
def load_rules(rules_dir: Path = RULES_DIR) -> tuple[Rule, ...]:
    """Every rule, ordered by id. A malformed rule file stops the check (exit 2)."""
    rules = []
    for path in sorted(rules_dir.glob("*.yaml")):
        data = _config_module().load_yaml_file(path)
        _config_module().validate(data, _RULE_SCHEMA, str(path))
        if not path.stem.startswith(data["id"]):
            raise InputError(str(path), "$.id", f"file name must start with the rule id {data['id']}")
        if "check" in data:
            _check_function(data["check"], str(path))
        rules.append(Rule(**{**data, "kinds": tuple(data.get("kinds", ()))}))
    if not rules:
        # An installed colocate without its rule files would pass everything: refuse instead.
        raise ColocateError(f"no policy rule found in {rules_dir}; the colocate installation is incomplete "
                            "(reinstall it, or check the package data in pyproject.toml)")
    ids = [r.id for r in rules]
    if len(set(ids)) != len(ids):
        raise InputError(str(rules_dir), "", "two rule files share an id")
    return tuple(rules)


def _check_function(name: str, where: str = "") -> Callable:
    """``platform.priority_gap`` -> policies/checks/platform.py's priority_gap."""
    module_name, _, function = name.partition(".")
    try:
        module = importlib.import_module(f"colocate.policies.checks.{module_name}")
    except ModuleNotFoundError:
        module = None
    check = getattr(module, function, None)
    if not callable(check):
        raise InputError(where, "$.check", f"policies/checks/{module_name}.py has no function {function!r}")
    return check


def _context(cluster: Cluster, docs: list[Doc], min_argocd_version: tuple[int, int] = (0, 0),
             registry_host: str = "", proxied_registries: Iterable[str] = (), shared_storage_class: str = "") -> Context:
    online = {cluster.online_namespace}
    offline = {cluster.training_namespace}
    for doc in docs:
        if doc.kind == "Namespace":
            tier = (doc.metadata.get("labels") or {}).get(TIER_LABEL)
            {"online": online, "offline": offline}.get(tier, set()).add(doc.name)
    return Context(cluster, online, offline, min_argocd_version, registry_host, frozenset(proxied_registries),
                   shared_storage_class=shared_storage_class)


#: Python checks that judge each object on its own, given the context (namespace tiers, node
#: pools, settings): their findings on a file depend on that file alone, so the verdict cache
#: keeps them per file. Every other check reads other objects too (quotas, PriorityClasses,
#: PromQL recording rules, Applications...) and is run over all objects whenever any file
#: changed. A check missing here is only slower with the cache, never wrong.
LOCAL_CHECKS = frozenset({
    "platform.online_guaranteed", "platform.online_integer_cpu", "platform.namespaced_without_namespace",
    "platform.image_from_mirror", "platform.image_reference", "hygiene.suppression_reason",
    "capacity.pod_fits_a_pool", "training.gpu_in_limits", "training.tfjob_offline_namespace",
    "training.tfjob_checkpoint_volume", "training.tfjob_memory_burst", "training.tfjob_grace_period",
    "gitops.deletion_protection", "gitops.argocd_field_version", "gitops.too_big_for_etcd",
    "api.request_above_limit", "api.selector_matches_template", "api.annotations_size", "api.data_size",
    "api.duplicate_names", "security.privileged_container", "security.host_namespaces",
    "security.host_path_volume", "security.added_capabilities", "security.image_pinned",
    "security.secret_in_manifests", "security.rbac_wildcards", "nodes.static_cpu_reserved",
    "nodes.kubelet_node_labels", "nodes.eviction_defaults",
})


def judges_alone(rule: Rule) -> bool:
    """The rule's findings on an object depend on that object and the context only."""
    return rule.schema is not None or rule.check in LOCAL_CHECKS


# --- what each cross-object rule reads ------------------------------------------------------------

#: How a cross-object rule sees an object: whole, as its skeleton (below), or a projection (a
#: dict the rule's ``reads`` makes); None = not at all.
WHOLE, SKELETON = 0, 1
#: Kinds that hold pod specs (manifests.pod_specs).
WORKLOAD_KINDS = frozenset(manifests.POD_SPEC_PATHS) | {"TFJob"}


@dataclass(frozen=True, eq=False)
class Reads:
    """The objects a cross-object rule reads: those of ``kinds`` whole, every workload whole
    (``pods``), those ``whole`` says yes to whole, a projection of those ``project`` makes one
    for, and the skeleton of every other object (``skeleton``; ``"first"``: of the first object
    of each file, which says the file is there). The rule is always run over just that, with or
    without the verdict cache, so what it declares is what it can see: its findings depend on
    nothing else, and the cache re-runs it only when that changed."""

    kinds: frozenset[str] = frozenset()
    pods: bool = False
    whole: Callable[[Doc], bool] | None = None
    skeleton: bool | str = False
    project: Callable[[Doc, "Context"], dict | None] | None = None

    def by_kind(self, kind: str, first: bool) -> int | None:
        """The view of an object that ``whole`` and ``project`` leave alone: its kind says it."""
        if kind in self.kinds or (self.pods and kind in WORKLOAD_KINDS):
            return WHOLE
        return SKELETON if self.skeleton is True or (self.skeleton == "first" and first) else None

    def chosen(self, doc: Doc, ctx: Context) -> int | dict | None:
        """The view ``whole`` or ``project`` give the object (None: neither says anything)."""
        if doc.kind in self.kinds or (self.pods and doc.kind in WORKLOAD_KINDS):
            return None
        try:
            if self.whole is not None and self.whole(doc):
                return WHOLE
            if self.project is not None:
                return self.project(doc, ctx)
        except Exception:
            return WHOLE  # a shape the declaration cannot read: the rule reads it, and says so
        return None

    def view(self, doc: Doc, ctx: Context, first: bool) -> int | dict | None:
        chosen = self.chosen(doc, ctx)
        return chosen if chosen is not None else self.by_kind(doc.kind, first)


def reads(*kinds: str, pods: bool = False, whole: Callable[[Doc], bool] | None = None, skeleton: bool | str = False,
          project: Callable[[Doc, Context], dict | None] | None = None) -> Callable[[Callable], Callable]:
    """Declares what a cross-object check reads (:class:`Reads`); one declaration may mark several
    checks, which then share one index (and what they derive from it, Index.shared)."""
    declared = _DECLARED.setdefault((frozenset(kinds), pods, whole, skeleton, project),
                                    Reads(frozenset(kinds), pods, whole, skeleton, project))

    def mark(check: Callable) -> Callable:
        check.reads = declared  # type: ignore[attr-defined]
        return check
    mark.reads = declared  # type: ignore[attr-defined]
    return mark


#: One Reads per distinct declaration: rules that declare the same share an index and digests.
_DECLARED: dict[tuple, Reads] = {}

#: A check that declares nothing reads every object whole: slower with the cache, never wrong.
_EVERYTHING = Reads(whole=lambda doc: True)


def rule_reads(rule: Rule) -> Reads:
    return getattr(_check_function(rule.check), "reads", _EVERYTHING)


def skeleton(doc: Doc) -> dict:
    """What identifies an object (and its suppressions): every cross-object rule reading all
    objects (duplicates, folders) needs only this, a few per cent of the object."""
    obj = doc.obj
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kept = {k: meta[k] for k in ("name", "namespace", "generateName") if k in meta}
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        if IGNORE_ANNOTATION in annotations:
            kept["annotations"] = {IGNORE_ANNOTATION: annotations[IGNORE_ANNOTATION]}
    elif annotations:  # not a mapping: kept as it is, so that reading it fails as on the object
        kept["annotations"] = annotations
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept}


def seen_as(doc: Doc, view: int | dict) -> Doc:
    """The object as a rule with this view sees it."""
    if view == WHOLE:
        return doc
    made = Doc(doc.file, doc.line, skeleton(doc)) if view == SKELETON else Doc(doc.file, doc.line, view)
    made.__dict__["projected"] = view != SKELETON  # see capacity._usage: only a projection is trusted
    return made


def viewed_index(declared: Reads, docs: list[Doc], ctx: Context) -> Index:
    """The index a cross-object rule runs over: only what it declared."""
    out = []
    previous = None
    for doc in docs:
        view = declared.view(doc, ctx, doc.file != previous)
        previous = doc.file
        if view is not None:
            out.append(seen_as(doc, view))
    return Index(out, ctx)


#: The rule that reports a suppression without a reason; it cannot itself be suppressed.
SUPPRESSION_RULE_ID = "COL010"

_REQUIRED = re.compile(r"^'([^']+)' is a required property")


def _schema_findings(rule: Rule, ctx: Context, index: Index) -> Iterator[Violation]:
    validator = None  # made for the first target: most rules judge a few kinds (0.3 ms each)
    if rule.target == "PodSpec":
        targets: Iterable[tuple[Doc, str, Any]] = ((p.doc, p.path, p.spec) for p in index.pods(rule.scope))
    else:
        targets = ((d, "", d.obj) for d in index.docs if not rule.kinds or d.kind in rule.kinds)
    for doc, base, value in targets:
        if validator is None:
            # Imported here, for the first object the rule judges: a check answered from the
            # cache, or one that judges afresh only objects no schema rule targets, never needs
            # it (0.06 s to import).
            import jsonschema

            validator = jsonschema.Draft202012Validator(_fill(rule.schema, ctx.values))
        for error in validator.iter_errors(value):
            parts = [base] if base else []
            parts += [f"[{p}]" if isinstance(p, int) else str(p) for p in error.absolute_path]
            missing = _REQUIRED.match(error.message)
            if missing:
                parts.append(missing.group(1))
            yield Violation(doc, ".".join(parts).replace(".[", "["))


def _judge(rule: Rule, index: Index, values: dict[str, str]) -> list[Finding]:
    if rule.schema is not None:
        violations: Iterable[Violation] = _schema_findings(rule, index.ctx, index)
    else:
        violations = _check_function(rule.check)(index, rule)
    return [Finding(rule.id, rule.severity, v.doc.file, v.doc.line, v.doc.kind, v.doc.namespace, v.doc.name, v.field,
                    _fill(rule.message, values) + (f" ({v.detail})" if v.detail else ""), _fill(rule.fix, values))
            for v in violations]


def _unjudged(rule: Rule, index: Index, values: dict[str, str], exc: Exception) -> list[Finding]:
    """A rule raised: the objects it raises on alone have a shape the rule cannot read (a null
    container, a string for a list: lenient schemas let some through). Each is an error naming the
    object, so the check fails closed, and the rule judges the rest. A failure that no single
    object explains is our bug (exit 3)."""
    found, unreadable = [], set()
    for doc in index.docs:
        try:
            _judge(rule, Index([doc], index.ctx), values)
        except ColocateError:
            raise
        except Exception as own:
            unreadable.add(id(doc))
            found.append(Finding(rule.id, "error", doc.file, doc.line, doc.kind, doc.namespace, doc.name, "",
                                 f"the rule cannot judge this object ({type(own).__name__}: {own}): a field has "
                                 "a shape the rule does not expect", "give every field the shape the Kubernetes API "
                                 "documents for it (no null list items, lists where lists belong)"))
    if not found:
        raise exc
    try:
        return found + _judge(rule, Index([d for d in index.docs if id(d) not in unreadable], index.ctx), values)
    except ColocateError:
        raise
    except Exception:
        raise exc from None


def evaluate(rules: Iterable[Rule], index: Index, timings: Timings | None = None,
             viewed: dict[int, Index] | None = None) -> list[Finding]:
    findings = []
    values = index.ctx.values
    # One index per declaration, shared by the rules that make it; ``viewed`` may bring them made.
    viewed = {} if viewed is None else viewed
    for rule in rules:
        start = time.perf_counter()
        scope = index
        if not judges_alone(rule):
            declared = rule_reads(rule)
            if id(declared) not in viewed:
                viewed[id(declared)] = viewed_index(declared, index.docs, index.ctx)
            scope = viewed[id(declared)]
        try:
            findings.extend(_judge(rule, scope, values))
        except ColocateError:
            raise
        except Exception as exc:
            findings.extend(_unjudged(rule, scope, values, exc))
        if timings is not None:
            timings.append((rule.id, time.perf_counter() - start))
    return findings


_KUBECONFORM_PREFIX = re.compile(r"problem validating schema\. Check JSON formatting: jsonschema validation failed "
                                 r"with '[^']*' - ")


_PROPERTY_LIST = re.compile(r"'[^',]*'(?:, '[^',]*')+")


def _schema_message(res: dict, doc: Doc | None, kubernetes_version: str) -> str:
    """kubeconform's message without its cache paths, and a kind whose apiVersion the Kubernetes
    version does not serve said so, with the versions it does serve."""
    message = _KUBECONFORM_PREFIX.sub("", str(res.get("msg", "")))
    message = re.sub(r"\s+- at ", "; at ", message)
    # kubeconform lists unknown properties in Go map order, which changes from run to run.
    message = _PROPERTY_LIST.sub(lambda m: ", ".join(sorted(m.group(0).split(", "))), message)
    kind = str(res.get("kind", ""))
    if message.startswith("could not find schema for") and doc is not None and kind:
        served = kubeconform.served_versions(kind, kubernetes_version)
        api = doc.obj.get("apiVersion", "")
        group = doc.group
        shown = [f"{group}/{v.split('-')[-1]}" if group and v.split("-")[0] == group.split(".")[0] else v
                 for v in served]
        if shown and api not in shown:
            message = (f"{api} is not served by Kubernetes {kubernetes_version} (removed, or never served): it "
                       f"serves {kind} as {', '.join(shown)}")
    return message


def _schema_result_findings(result: kubeconform.Result, docs: list[Doc], kubernetes_version: str = "") -> list[Finding]:
    """kubeconform reports file, kind and name; find the namespace and line in our index."""
    if not result.resources:
        return []
    resolved = {file: Path(file).resolve() for file in dict.fromkeys(d.file for d in docs)}
    by_key = {(resolved[d.file], d.kind, d.name): d for d in docs}
    findings = []
    for res in result.resources:
        doc = by_key.get((Path(res.get("filename", "")).resolve(), res.get("kind", ""), res.get("name", "")))
        status = res.get("status", "")
        reason = {"statusSkipped": "skipped: no schema was consulted"}.get(
            status, _schema_message(res, doc, kubernetes_version) or status)
        findings.append(Finding(
            SCHEMA_RULE_ID, "error", res.get("filename", ""), doc.line if doc else 0, res.get("kind", ""),
            doc.namespace if doc else "", res.get("name", ""), "",
            f"kubeconform ({status.removeprefix('status').lower()}): {reason}", SCHEMA_RULE.fix))
    return findings


def _with_field_lines(findings: list[Finding], known: dict[tuple[str, int, str], int] | None = None) -> list[Finding]:
    """Each finding with the line of its field, reading again only the files that have findings
    whose line ``known`` (file, object line, field -> line; the cache's) does not hold. Lines
    found are added to ``known``."""
    wanted: dict[str, list[int]] = {}
    out = list(findings)
    for i, f in enumerate(findings):
        if f.field and f.line:
            line = known.get((f.file, f.line, f.field)) if known is not None else None
            if line is None:
                wanted.setdefault(f.file, []).append(i)
            else:
                out[i] = _at_line(f, line)
    # The collector paused across files, not per document: each re-enabling scanned the nodes
    # just composed (0.3 s of 1,450 documents); they have no cycles and go with each file.
    with manifests.collector_paused():
        _field_lines_into(out, findings, wanted, known)
    return out


def _at_line(finding: Finding, line: int) -> Finding:
    """replace(finding, field_line=line), without dataclasses.replace's cost (thousands per check)."""
    made = object.__new__(Finding)
    made.__dict__.update(finding.__dict__, field_line=line)
    return made


def _field_lines_into(out: list[Finding], findings: list[Finding], wanted: dict[str, list[int]],
                      known: dict[tuple[str, int, str], int] | None) -> None:
    for file, indexes in wanted.items():
        lines = manifests.field_lines(Path(file), [(findings[i].line, findings[i].field) for i in indexes])
        for i, line in zip(indexes, lines):
            out[i] = replace(findings[i], field_line=line)
            if known is not None:
                known[(file, findings[i].line, findings[i].field)] = line


def _described_pools(where: Path) -> list[tuple[str, Any]]:
    """(file, object) of every NodePool description under ``where``."""
    return [(d.file, d.obj) for d in manifests.load([where]) if d.kind == pool_facts.KIND]


def cluster_pools(docs: list[Doc], cluster: Path | None,
                  described_at: Callable[[Path], list[tuple[str, Any]]] = _described_pools
                  ) -> tuple[tuple[PoolFacts, ...], str]:
    """The node pools the capacity rules judge against: those under ``cluster`` when given (an
    explicit --cluster wins, and must exist), else the NodePool descriptions among the checked
    objects, else those in the repository's dist/nodes/."""
    if cluster is not None and not cluster.exists():
        raise InputError(str(cluster), "", "no such file or folder (--cluster names the NodePool descriptions "
                         "the capacity rules judge against)")
    described = [] if cluster is not None else [(d.file, d.obj) for d in docs if d.kind == pool_facts.KIND]
    source = "the checked files"
    if not described:
        where = cluster or repository() / "dist" / "nodes"
        if cluster is None and not where.is_dir():
            return (), ""
        described = described_at(where)
        if not described:
            raise InputError(str(where), "", "no NodePool description found; synth writes them to "
                             "dist/nodes/<pool>/nodepool.<pool>.yaml")
        source = str(where)
    return pool_facts.from_documents(described), source


def suppressions(doc: Doc) -> list[tuple[str, str]]:
    """(rule id, reason) of an object's ``colocate.io/ignore`` annotation: entries separated by
    ``;`` or new lines, each ``RULE-ID: reason`` (the reason may be empty: rule COL010 says so)."""
    text = (doc.metadata.get("annotations") or {}).get(IGNORE_ANNOTATION)
    out = []
    for entry in re.split(r"[;\n]", str(text or "")):
        rule, _, reason = entry.strip().partition(":")
        if rule.strip():
            out.append((rule.strip(), reason.strip()))
    return out


def _suppress(findings: list[Finding], docs: list[Doc]) -> tuple[list[Finding], list[tuple[Finding, str]]]:
    """Split findings into kept and suppressed (with the reason). Only entries with a reason count."""
    by_doc = {(d.file, d.line): dict((r, why) for r, why in suppressions(d) if why) for d in docs
              if IGNORE_ANNOTATION in (d.metadata.get("annotations") or {})}
    kept, silenced = [], []
    for f in findings:
        reason = by_doc.get((f.file, f.line), {}).get(f.rule)
        if reason and f.rule not in (SUPPRESSION_RULE_ID, SCHEMA_RULE_ID, INPUT_RULE_ID):
            silenced.append((f, reason))
        else:
            kept.append(f)
    return kept, silenced


def _skipped_findings(skipped: Iterable[manifests.Skipped]) -> list[Finding]:
    return [Finding(INPUT_RULE_ID, "warning", s.path, 0, "", "", "", "", s.reason, s.hint) for s in skipped]


def _checked_context(config: config_mod.Config, docs: list[Doc], cluster: Path | None,
                     rules: tuple[Rule, ...],
                     described_at: Callable[[Path], list[tuple[str, Any]]] = _described_pools) -> Context:
    """The context ``check`` judges the checked objects in, with or without the cache."""
    ctx = _context(reference(config), docs, config.gitops.min_argocd_version, config.registry_host,
                   config.registry_proxy_projects, config.shared_storage_class)
    ctx.pools, ctx.pools_source = cluster_pools(docs, cluster, described_at)
    ctx.rules = tuple(rules)
    return ctx


def described_rules(config_path: Path | None = None) -> tuple[Rule, ...]:
    """Every rule with its placeholders filled from the configuration, for ``colocate rules``
    and ``--explain`` (no objects: the namespace tiers are the configuration's). Outside a
    repository, with no --config, the rules as written (``${name}`` placeholders)."""
    config_mod = _config_module()
    if config_path is None and not config_mod.default_path().is_file():
        return load_rules()
    config = config_mod.load(config_path) if config_path else config_mod.load()
    ctx = _context(reference(config), [], config.gitops.min_argocd_version, config.registry_host,
                   config.registry_proxy_projects)
    return tuple(rule.filled(ctx.values) for rule in load_rules())


def check(paths: list[Path], config_path: Path | None = None, cluster: Path | None = None,
          timings: Timings | None = None, exclude: Iterable[str] = (), cache: Path | None = None) -> CheckResult:
    """Validate manifests. Raises ColocateError for unusable input (exit 2). ``timings``, when
    given, receives the seconds of each phase and rule (``check --timings``). ``cache``: the
    folder of the verdict cache (docs/check-cache.md); None checks everything afresh."""
    clock = [time.perf_counter()]

    def phase(name: str) -> None:
        now = time.perf_counter()
        if timings is not None:
            timings.append((name, now - clock[0]))
        clock[0] = now

    if cache is not None:
        try:
            return _check_cached(paths, config_path, cluster, timings, tuple(exclude), cache, phase, clock)
        finally:
            gc.unfreeze()
    config = _load_config(config_path)
    inputs = manifests.find(paths, exclude)  # an unknown path is bad input before any tool starts
    if not inputs.files:
        hint = "".join(f"; {s.path}: {s.reason} ({s.hint})" for s in inputs.skipped)
        raise InputError(", ".join(map(str, paths)), "", f"no Kubernetes objects found{hint}")
    # kubeconform gets the same files, so a file named twice, or a Helm chart in a folder, is not
    # validated there either.
    validation = None
    # kubeconform takes most of the wall time: parse and run the rules while it works.
    try:
        # Started inside the try: a Ctrl-C from the moment it runs stops it too.
        validation = kubeconform.start(list(inputs.files), config.kubernetes_version)
        phase("start kubeconform")
        tally: list[int] = []
        # A file found in a folder that is not manifests (a CI workflow, a Helm template) is
        # reported on its own and the rest checked, as kubeconform does; one named is bad input.
        named = {str(p) for p in paths if not p.is_dir()}
        unusable: list[tuple[Path, InputError]] = []
        docs = _parse(inputs.files, tally, unusable, named)
        if not docs:
            said = "".join(f"; {exc}" for _, exc in unusable[:3])
            raise InputError(", ".join(map(str, paths)), "", f"no Kubernetes objects found{said}")
        if unusable:  # kubeconform again, without them: its verdict must cover the objects parsed
            validation.kill()
            validation.wait()
            left_out = {str(p) for p, _ in unusable}
            validation = kubeconform.start([f for f in inputs.files if str(f) not in left_out],
                                           config.kubernetes_version)
        phase("parse YAML")
        rules = load_rules()
        ctx = _checked_context(config, docs, cluster, rules)
        index = Index(docs, ctx)
        phase("load rules and context")
        rule_findings = evaluate(rules, index, timings)
        clock[0] = time.perf_counter()
        schema_result = kubeconform.wait(validation)
        kubeconform.unjudged(schema_result, sum(tally))
        phase("wait for kubeconform")
    finally:
        if validation is not None and validation.poll() is None:
            validation.kill()
            validation.wait()
    findings, suppressed = _suppress(_schema_result_findings(schema_result, docs, config.kubernetes_version) + rule_findings
                                     + _skipped_findings(inputs.skipped) + _unusable_findings(unusable), docs)
    findings = _with_field_lines(findings)
    suppressed = sorted(zip(_with_field_lines([f for f, _ in suppressed]), (reason for _, reason in suppressed)),
                        key=lambda s: (_order(s[0]), s[1]))
    findings.sort(key=_order)
    phase("field lines, suppressions, sort")
    gc.unfreeze()
    return CheckResult(findings, schema_result, len(docs), [r.filled(ctx.values) for r in rules], suppressed)


def _order(f: Finding) -> tuple:
    """Findings by file, line, field line, rule and field; the rest only breaks ties, so the order
    is the same whether the findings were computed in one pass or taken from the cache."""
    return (f.file, f.line, f.field_line, f.rule, f.field, f.message, f.severity, f.kind, f.namespace, f.name, f.fix)


def _unusable_findings(unusable: list[tuple[Path, InputError]]) -> list[Finding]:
    """One error per file in a checked folder that is not manifests (Argo CD would fail to sync it)."""
    out = []
    for path, exc in unusable:
        line = int(exc.where) if exc.where.isdigit() else 0
        out.append(Finding(INPUT_RULE_ID, "error", str(path), line, "", "", "", "", exc.reason,
                           "make it a Kubernetes manifest, move it out of the folder, or leave it out with --exclude"))
    return out


def judge_rendered(texts: dict[Path, str], config: config_mod.Config) -> list[Finding]:
    """The policy rules' errors on a tree synth is about to write (files not on disk yet), with
    the pools it describes: synth refuses what its own check would refuse. kubeconform is not
    run here: the constructs emit schema-shaped objects, and ``check`` validates them after."""
    docs = manifests.load_texts({p: t for p, t in texts.items() if p.suffix == ".yaml"})
    ctx = _context(reference(config), docs, config.gitops.min_argocd_version, config.registry_host,
                   config.registry_proxy_projects, config.shared_storage_class)
    ctx.pools, ctx.pools_source = pool_facts.from_documents([(d.file, d.obj) for d in docs
                                                              if d.kind == pool_facts.KIND]), "the synthesized tree"
    rules = load_rules()
    ctx.rules = tuple(rules)
    findings, _ = _suppress(evaluate(rules, Index(docs, ctx)), docs)
    return sorted((f for f in findings if f.severity == "error"), key=lambda f: (f.file, f.line, f.rule))


def _parse(files: Iterable[Path], tally: list[int] | None = None,
           unusable: list[tuple[Path, InputError]] | None = None, named: set[str] = frozenset()) -> list[Doc]:
    """The objects of the files, frozen out of the cyclic collector's scans: they are millions
    of containers that live until the check ends, without cycles, and every full collection
    during the rules would rescan them all. :func:`check` unfreezes them when done (after an
    exception, the next check does)."""
    with manifests.collector_paused():
        if unusable is None:
            docs = manifests.load_files(files, tally)
        else:
            docs = manifests.load_files(files, tally, unusable)
        # Frozen before the collector is back: its first collection would otherwise scan every
        # object just made (0.3 s for 10,000 objects).
        gc.freeze()
    for path, exc in unusable or ():
        if str(path) in named:
            raise exc
    return docs


# --- the verdict cache (docs/check-cache.md) ----------------------------------------------------

def _load_config(config_path: Path | None) -> config_mod.Config:
    config_mod = _config_module()
    return config_mod.load(config_path) if config_path else config_mod.load()


def _row(f: Finding) -> list:
    return [f.rule, f.severity, f.file, f.line, f.kind, f.namespace, f.name, f.field, f.message, f.fix, f.field_line]


_ROW_TYPES = (str, str, str, int, str, str, str, str, str, str, int)


def _finding(row: Any) -> Finding:
    """A finding from a cache entry; ValueError when the entry does not hold one."""
    if not isinstance(row, list) or len(row) != len(_ROW_TYPES) or \
            not all(type(v) is t for v, t in zip(row, _ROW_TYPES)):
        raise ValueError("not a finding")
    return Finding(*row)


def _kubeconform_part(value: Any) -> tuple[int, int, int, list[dict]]:
    if not isinstance(value, list) or len(value) != 4 or not all(type(v) is int and v >= 0 for v in value[:3]) \
            or not isinstance(value[3], list) or not all(isinstance(r, dict) for r in value[3]):
        raise ValueError("not a kubeconform verdict")
    return value[0], value[1], value[2], value[3]


_CONTEXT_KINDS = frozenset({"Namespace", pool_facts.KIND})


@dataclass
class _Entry:
    """One checked file as the cache keeps it, without its objects (a separate ``docs`` entry,
    read only when a rule that reads them must run again): what every run needs of each file."""

    value: dict
    tally: int
    unusable: tuple[str, str] | None
    kubeconform: tuple[int, int, int, list[dict]]
    local_context: str
    local: list[Finding]
    lines: list[tuple[int, str, int]]
    #: Every object's skeleton (checker.skeleton): kubeconform's findings, suppressions and the
    #: rules that read every object's identity need no more.
    skeletons: list[Doc]
    #: The Namespaces and NodePool descriptions, whole: the context is made of them.
    context_docs: list[Doc]
    #: rule id -> (digest of what the rule reads of this file, [[object index, view]]).
    views: dict[str, tuple[str, list]]
    #: Each object's digest (its compact JSON): when the file changes, the per-object findings
    #: of an object at the same line with the same digest are reused.
    digests: list[str]


def _entry(file: str, value: Any) -> _Entry | None:
    """A file entry read back, or None when it does not have the shape written (never trusted)."""
    if value is None:
        return None
    try:
        skeletons = []
        for item in value["skeletons"]:
            if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int or not isinstance(item[1], dict):
                raise ValueError
            skeletons.append(_skeleton_doc(file, item[0], item[1]))
        context_docs = []
        for item in value["context"]:
            if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int or not isinstance(item[1], dict) \
                    or item[1].get("kind") not in _CONTEXT_KINDS or not isinstance(item[1].get("apiVersion"), str):
                raise ValueError
            context_docs.append(Doc(file, item[0], item[1]))
        views = {}
        for rule_id, (digest, rows) in value["views"].items():
            if not isinstance(digest, str) or not isinstance(rows, list) or not all(
                    isinstance(r, list) and len(r) == 2 and type(r[0]) is int and 0 <= r[0] < len(skeletons)
                    and (r[1] in (WHOLE, SKELETON) and type(r[1]) is int or isinstance(r[1], dict)) for r in rows):
                raise ValueError
            views[rule_id] = (digest, rows)
        unusable = value["unusable"]
        if unusable is not None and (not isinstance(unusable, list) or len(unusable) != 2
                                     or not all(isinstance(v, str) for v in unusable)):
            raise ValueError
        context, local = value["local"]
        lines = value["lines"]
        if type(value["tally"]) is not int or not isinstance(context, str) or not isinstance(lines, list) or \
                not all(isinstance(x, list) and len(x) == 3 and type(x[0]) is int and type(x[1]) is str
                        and type(x[2]) is int for x in lines):
            raise ValueError
        local_findings = [_finding(row) for row in local]
        if any(f.file != file for f in local_findings):
            raise ValueError
        digests = value["digests"]
        if not isinstance(digests, list) or len(digests) != len(skeletons) or \
                not all(isinstance(d, str) for d in digests):
            raise ValueError
        return _Entry(value, value["tally"], tuple(unusable) if unusable else None,
                      _kubeconform_part(value["kubeconform"]), context, local_findings,
                      [tuple(x) for x in lines], skeletons, context_docs, views, digests)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


_NEW_DOC = object.__new__


def _skeleton_doc(file: str, line: int, obj: dict) -> Doc:
    """Doc(file, line, obj) of a skeleton read back, its attributes set as Doc.__post_init__ sets
    them, without its checks (10,000 of them per re-check: twice as fast)."""
    kind, version, meta = obj.get("kind"), obj.get("apiVersion"), obj.get("metadata")
    if not isinstance(kind, str) or not isinstance(version, str) or not isinstance(meta, dict) or len(obj) != 3:
        raise ValueError("not a skeleton")
    doc = _NEW_DOC(Doc)
    doc.__dict__.update(file=file, line=line, obj=obj, kind=kind, group=version.rpartition("/")[0], metadata=meta,
                        name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
                        is_api_object=kind not in manifests.NON_API_KINDS)
    return doc


def _docs_entry(file: str, value: Any, count: int) -> list[Doc] | None:
    """A file's objects read back (``count`` of them), or None when they do not have the shape written."""
    if value is None:
        return None
    try:
        docs, sizes = value["docs"], value["sizes"]
        if not isinstance(docs, list) or not isinstance(sizes, list) or len(docs) != count or len(sizes) != count:
            raise ValueError
        made = []
        for item, size in zip(docs, sizes):
            if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int or not isinstance(item[1], dict) \
                    or not isinstance(item[1].get("kind"), str) or not isinstance(item[1].get("apiVersion"), str) \
                    or type(size) is not int:
                raise ValueError
            doc = Doc(file, item[0], item[1])
            doc.__dict__["json_size"] = size  # what Doc.json_size computes: COL303 and COL306 need no JSON
            made.append(doc)
        return made
    except (KeyError, TypeError, ValueError):
        return None


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _encoded(docs: list[Doc]) -> tuple[list[str], list[str]]:
    """Each object's compact JSON (ASCII, as Doc.json_size measures it) and its digest: one
    serialisation gives the docs entry, the object's size and what the views' digests hash."""
    parts, digests = [], []
    for doc in docs:
        text = json.dumps(doc.obj, separators=(",", ":"))
        doc.__dict__["json_size"] = len(text)
        parts.append(text)
        digests.append(_digest(text))
    return parts, digests


def _file_views(docs: list[Doc], digests: list[str], skeleton_digests: list[str], declared: dict[str, Reads],
                ctx: Context) -> dict[str, tuple[str, list]]:
    """For each cross-object rule that reads something of this file: a digest of what it reads,
    and the views its kinds do not say ([[object index, view]]: the rest follows from the
    skeletons, Reads.by_kind). Computed once per distinct declaration."""
    by_reads: dict[int, tuple[str, list] | None] = {}
    out = {}
    for rule_id, reads_ in declared.items():
        if id(reads_) not in by_reads:
            by_reads[id(reads_)] = _reads_of_file(docs, digests, skeleton_digests, reads_, ctx)
        if by_reads[id(reads_)] is not None:
            out[rule_id] = by_reads[id(reads_)]
    return out


def _reads_of_file(docs: list[Doc], digests: list[str], skeleton_digests: list[str], reads_: Reads,
                   ctx: Context) -> tuple[str, list] | None:
    chosen: list = []
    parts: list[str] = []
    asks = reads_.whole is not None or reads_.project is not None
    for i, doc in enumerate(docs):
        view = reads_.chosen(doc, ctx) if asks else None
        if view is not None:
            chosen.append([i, view])
        else:
            view = reads_.by_kind(doc.kind, i == 0)
            if view is None:
                continue
        part = digests[i] if view == WHOLE else skeleton_digests[i] if view == SKELETON else \
            _digest(json.dumps(view, separators=(",", ":")))
        parts.append(f"{doc.line}:{i}:{part}")
    return (_digest(";".join(parts)), chosen) if parts else None


def _whole(value: Any) -> CheckResult | None:
    """A whole result read back, or None when it does not have the shape written."""
    if value is None:
        return None
    try:
        findings = [_finding(row) for row in value["findings"]]
        suppressed = []
        for row, reason in value["suppressed"]:
            if not isinstance(reason, str):
                raise ValueError
            suppressed.append((_finding(row), reason))
        valid, invalid, errors, skipped, resources = value["kubeconform"]
        _kubeconform_part([valid, invalid, errors, resources])
        rules = []
        for data in value["rules"]:
            if not isinstance(data, dict):
                raise ValueError
            rules.append(Rule(**{**data, "kinds": tuple(data["kinds"])}))
        if type(value["objects"]) is not int or type(skipped) is not int:
            raise ValueError
        return CheckResult(findings, kubeconform.Result(valid, invalid, errors, skipped, resources), value["objects"],
                           rules, suppressed)
    except (KeyError, TypeError, ValueError):
        return None


def _cached_rules(store: Any, env: str) -> tuple[Rule, ...]:
    """load_rules, kept under the environment (which holds every rule file's bytes): reading and
    validating 71 rule files costs more than the rest of a one-file re-check."""
    value = store.get("rules", env)
    if isinstance(value, list) and value:
        try:
            rules = tuple(Rule(**{**data, "kinds": tuple(data["kinds"])}) for data in value)
            if all(isinstance(getattr(r, f), str) for r in rules for f in
                   ("id", "name", "severity", "category", "target", "rationale", "message", "fix", "scope")) \
                    and all(isinstance(r.schema, dict) != isinstance(r.check, str) for r in rules):
                return rules
        except (TypeError, KeyError):
            pass
        store.reject()
    rules = load_rules()
    store.put("rules", env, [{**r.__dict__, "kinds": list(r.kinds)} for r in rules])
    return rules


def _cached_pools(store: Any, env: str, where: Path) -> list[tuple[str, Any]]:
    """_described_pools, kept under the environment (which holds the bytes of every file under
    --cluster, else dist/nodes/, where ``where`` is): the NodePool descriptions are not parsed again."""
    value = store.get("pools", env)
    if isinstance(value, list) and all(isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
                                       and isinstance(v[1], dict) and v[1].get("kind") == pool_facts.KIND
                                       for v in value):
        return [(file, obj) for file, obj in value]
    if value is not None:
        store.reject()
    described = _described_pools(where)
    store.put("pools", env, [[file, obj] for file, obj in described])
    return described


def _split_verdict(result: kubeconform.Result, tallies: dict[str, int]) -> dict[str, tuple[int, int, int, list[dict]]] | None:
    """kubeconform's verdict on several files, per file; None when it does not add up (then
    nothing of it is kept)."""
    by_file: dict[str, list[dict]] = {file: [] for file in tallies}
    for res in result.resources:
        file = res.get("filename")
        if file not in by_file:
            return None
        by_file[file].append(res)
    parts = {}
    for file, resources in by_file.items():
        invalid = sum(r.get("status") == "statusInvalid" for r in resources)
        errors = sum(r.get("status") == "statusError" for r in resources)
        if invalid + errors != len(resources) or invalid + errors > tallies[file]:
            return None
        parts[file] = (tallies[file] - invalid - errors, invalid, errors, resources)
    if result.skipped or sum(p[0] for p in parts.values()) != result.valid or \
            sum(p[1] for p in parts.values()) != result.invalid or sum(p[2] for p in parts.values()) != result.errors:
        return None
    return parts


def _check_cached(paths: list[Path], config_path: Path | None, cluster: Path | None, timings: Timings | None,
                  exclude: tuple[str, ...], folder: Path, phase: Callable[[str], None], clock: list[float]) -> CheckResult:
    """:func:`check` through the verdict cache: the same result, computing only what changed."""
    from colocate import verdict_cache

    try:
        inputs = manifests.find(paths, exclude)
    except InputError:
        _load_config(config_path)  # a bad configuration is said first, as without the cache
        raise
    if not inputs.files:
        _load_config(config_path)
        hint = "".join(f"; {s.path}: {s.reason} ({s.hint})" for s in inputs.skipped)
        raise InputError(", ".join(map(str, paths)), "", f"no Kubernetes objects found{hint}")
    store = verdict_cache.Store(folder)
    # config.default_path(), without importing colocate.config (see _config_module).
    env = verdict_cache.environment(store, config_path or repository() / CONFIG_NAME, cluster, exclude)
    named = {str(p) for p in paths if not p.is_dir()}
    files = [str(f) for f in inputs.files]
    keys, previous = verdict_cache.file_keys(store, env, inputs.files, named, paths)
    key_of = dict(zip(files, keys))
    tree = verdict_cache.tree_key(env, keys, inputs.skipped)
    phase("cache: keys")
    if tree is not None:
        value = store.get("tree", tree)
        whole = _whole(value)
        if value is not None and whole is None:
            store.reject()
        if whole is not None:
            phase("cache: whole result")
            return replace(whole, cache=f"{folder}: unchanged, the whole result reused ({len(files)} files)")

    # The environment holds the configuration's bytes and colocate's code (its schema): a
    # configuration this environment loaded before needs no schema validation again.
    checked = store.get("config", env) == "valid"
    config_mod = _config_module()
    config = config_mod.load(config_path, schema_checked=checked) if config_path else \
        config_mod.load(schema_checked=checked)
    if not checked:
        store.put("config", env, "valid")
    entries: dict[str, _Entry] = {}
    with manifests.collector_paused():
        for file, key in zip(files, keys):
            value = store.get("file", key) if key else None
            entry = _entry(file, value)
            if entry is not None:
                entries[file] = entry
            elif value is not None:
                store.reject()
        gc.freeze()  # as _parse: what was read lives until the end, and has no cycles
    fresh = [f for f in inputs.files if str(f) not in entries]
    phase("cache: read file entries")

    validation = None
    by_file: dict[str, list[Doc]] = {}  # whole objects, of the files that have them in this run
    tallies: dict[str, int] = {}
    unusable: list[tuple[Path, InputError]] = []
    loaded: set[str] = set()

    def whole_docs(file: str) -> list[Doc]:
        """A reused file's objects: its docs entry, else the file parsed again (same bytes: its key)."""
        if file not in by_file:
            entry = entries[file]
            value = store.get("docs", key_of[file])
            docs = _docs_entry(file, value, len(entry.skeletons))
            if docs is None:
                if value is not None:
                    store.reject()
                docs = manifests.load_files([Path(file)], [], [])
                if len(docs) != len(entry.skeletons):
                    raise ColocateError(f"{file} changed while it was checked; check again")
            by_file[file] = docs
            loaded.add(file)
        return by_file[file]

    try:
        if fresh:
            validation = kubeconform.start(fresh, config.kubernetes_version)
        phase("start kubeconform")
        with manifests.collector_paused():
            for path in fresh:
                tally: list[int] = []
                bad: list[tuple[Path, InputError]] = []
                by_file[str(path)] = manifests.load_files([path], tally, bad)
                tallies[str(path)] = tally[0]
                if bad and str(path) in named:
                    raise bad[0][1]
                unusable += bad
        for path in inputs.files:
            entry = entries.get(str(path))
            if entry is not None and entry.unusable:
                unusable.append((path, InputError(str(path), *entry.unusable)))
        position = {f: i for i, f in enumerate(files)}
        unusable.sort(key=lambda u: position[str(u[0])])
        # Each object as kubeconform's findings, suppressions and the count need it: whole when
        # parsed in this run, else its skeleton; and the objects the context is made of.
        known_docs = [doc for file in files for doc in (by_file[file] if file in by_file else entries[file].skeletons)]
        if not known_docs:
            said = "".join(f"; {exc}" for _, exc in unusable[:3])
            raise InputError(", ".join(map(str, paths)), "", f"no Kubernetes objects found{said}")
        left_out = {str(p) for p, _ in unusable}
        if validation is not None and left_out & set(tallies):
            validation.kill()
            validation.wait()
            rest = [f for f in fresh if str(f) not in left_out]
            validation = kubeconform.start(rest, config.kubernetes_version) if rest else None
        for file in left_out:
            tallies.pop(file, None)
        phase("parse YAML")
        rules = _cached_rules(store, env)
        context_docs = [doc for file in files for doc in
                        ([d for d in by_file[file] if d.kind in _CONTEXT_KINDS] if file in by_file
                         else entries[file].context_docs)]
        ctx = _checked_context(config, context_docs, cluster, rules, lambda where: _cached_pools(store, env, where))
        context = verdict_cache.context_key(sorted(ctx.online_namespaces), sorted(ctx.offline_namespaces),
                                            ctx.min_argocd_version, ctx.registry_host, sorted(ctx.proxied_registries),
                                            ctx.pools, ctx.pools_source, ctx.shared_storage_class)
        alone = [r for r in rules if judges_alone(r)]
        joined = [r for r in rules if not judges_alone(r)]
        declared = {r.id: rule_reads(r) for r in joined}
        stale = [f for f in files if f not in entries or entries[f].local_context != context]
        phase("load rules and context")
        with manifests.collector_paused():
            for f in stale:
                whole_docs(f)
            gc.freeze()  # as _parse: the objects read live until the end, and have no cycles
        phase("cache: read objects")
        local: dict[str, list[Finding]] = {f: entries[f].local for f in files if f not in stale}
        encoded: dict[str, tuple[list[str], list[str]]] = {f: _encoded(by_file[f]) for f in stale}
        # A changed file's objects that are as they were (same line, same digest) keep the
        # per-object findings its previous entry holds, when judged in the same context.
        stale_docs: list[Doc] = []
        for f in stale:
            prior = _entry(f, store.get("file", previous[f])) if f in previous and f not in entries else None
            if prior is None or prior.local_context != context:
                stale_docs += by_file[f]
                local[f] = []
                continue
            before = set(zip((d.line for d in prior.skeletons), prior.digests))
            same = set()
            for doc, digest in zip(by_file[f], encoded[f][1]):
                if (doc.line, digest) in before:
                    same.add(doc.line)
                else:
                    stale_docs.append(doc)
            local[f] = [x for x in prior.local if x.line in same]
        for finding in evaluate(alone, Index(stale_docs, ctx), timings) if stale_docs else ():
            local[finding.file].append(finding)
        clock[0] = time.perf_counter()
        # What each cross-object rule reads of the files judged afresh, and its digest.
        views: dict[str, dict[str, tuple[str, list]]] = {}
        skeleton_rows: dict[str, list] = {}
        for f in stale:
            docs = by_file[f]
            parts, digests = encoded[f]
            skeletons = [skeleton(d) for d in docs]
            skeleton_rows[f] = [[d.line, s] for d, s in zip(docs, skeletons)]
            skeleton_digests = [_digest(json.dumps(s, separators=(",", ":"))) for s in skeletons]
            views[f] = _file_views(docs, digests, skeleton_digests, declared, ctx)
        for f in files:
            if f not in views:
                views[f] = entries[f].views
        phase("cache: what cross-object rules read")
        # A cross-object rule runs again only when what it reads changed (or the context did).
        rule_keys = {r.id: verdict_cache.rule_key(env, context, r.id, [(f, views[f][r.id][0]) for f in files
                                                                       if r.id in views[f]]) for r in joined}
        cross: list[Finding] = []
        rerun: list[Rule] = []
        for rule in joined:
            value = store.get("rule", rule_keys[rule.id])
            try:
                if not isinstance(value, list):
                    raise ValueError
                cross.extend([_finding(row) for row in value])
            except ValueError:
                if value is not None:
                    store.reject()
                rerun.append(rule)
        phase("cache: cross-object findings reused")
        viewed: dict[int, Index] = {}
        rerun_findings: dict[str, list[Finding]] = {}
        with manifests.collector_paused():
            for rule in rerun:
                reads_ = declared[rule.id]
                if id(reads_) in viewed:
                    continue
                seen: list[Doc] = []
                for f in files:
                    if rule.id not in views[f]:
                        continue
                    chosen = dict(views[f][rule.id][1])
                    kept = by_file[f] if f in by_file else entries[f].skeletons
                    rows = [(i, chosen[i] if i in chosen else reads_.by_kind(doc.kind, i == 0))
                            for i, doc in enumerate(kept)]
                    if f not in by_file and any(v == WHOLE for _, v in rows):
                        kept = whole_docs(f)
                    for i, view in rows:
                        if view is None:
                            continue
                        if f in by_file:  # as viewed_index makes them
                            seen.append(seen_as(kept[i], view))
                        elif view == SKELETON:
                            seen.append(kept[i])
                        else:
                            seen.append(seen_as(kept[i], view))
                viewed[id(reads_)] = Index(seen, ctx)
            gc.freeze()
        phase("cache: objects for cross-object rules")
        for rule in rerun:
            rerun_findings[rule.id] = evaluate([rule], Index([], ctx), timings, viewed)
            cross.extend(rerun_findings[rule.id])
        clock[0] = time.perf_counter()
        rule_findings = [f for file in files for f in local[file]] + cross
        parts: dict[str, tuple[int, int, int, list[dict]]] | None = {}
        if validation is not None:
            fresh_result = kubeconform.wait(validation)
            kubeconform.unjudged(fresh_result, sum(tallies.values()))
            parts = _split_verdict(fresh_result, tallies)
        phase("wait for kubeconform")
    finally:
        if validation is not None and validation.poll() is None:
            validation.kill()
            validation.wait()
    if parts is None:  # kubeconform's verdict could not be split by file: keep none of this run
        keep = False
        verdicts = [entries[f].kubeconform for f in files if f in entries and not entries[f].unusable]
        verdicts.append((fresh_result.valid, fresh_result.invalid, fresh_result.errors, fresh_result.resources))
    else:
        keep = True
        verdicts = [entries[f].kubeconform if f in entries else parts[f] for f in files
                    if f in parts or (f in entries and not entries[f].unusable)]
    schema_result = kubeconform.Result(sum(v[0] for v in verdicts), sum(v[1] for v in verdicts),
                                       sum(v[2] for v in verdicts), 0, [r for v in verdicts for r in v[3]])
    findings, suppressed = _suppress(_schema_result_findings(schema_result, known_docs, config.kubernetes_version)
                                     + rule_findings + _skipped_findings(inputs.skipped) + _unusable_findings(unusable),
                                     known_docs)
    known = {(f, line, name): at for f, entry in entries.items() for line, name, at in entry.lines}
    findings = _with_field_lines(findings, known)
    suppressed = sorted(zip(_with_field_lines([f for f, _ in suppressed], known), (reason for _, reason in suppressed)),
                        key=lambda s: (_order(s[0]), s[1]))
    findings.sort(key=_order)
    phase("field lines, suppressions, sort")
    result = CheckResult(findings, schema_result, len(known_docs), [r.filled(ctx.values) for r in rules], suppressed)

    if keep:
        # A file edited while it was checked: what was parsed (and what kubeconform read) may not
        # be the bytes its key was made from; then neither it nor the whole result is kept.
        moved = {str(f) for f, key in zip(inputs.files, keys) if str(f) not in entries and key is not None
                 and verdict_cache.file_key(env, f, str(f) in named) != key}
        keep = not moved
    if keep:
        new_lines: dict[str, list[tuple[int, str, int]]] = {}
        for (f, line, name), at in known.items():
            new_lines.setdefault(f, []).append((line, name, at))
        grew = {f for f, found in new_lines.items() if f in entries and len(found) != len(entries[f].lines)}
        unusable_by_file = {str(p): exc for p, exc in unusable}
        for file, key in zip(files, keys):
            if key is None or (file in entries and file not in stale and file not in grew):
                continue
            if file in entries and file not in stale:  # only more field lines
                store.put("file", key, {**entries[file].value, "lines": sorted(new_lines.get(file, ()))})
                continue
            exc = unusable_by_file.get(file)
            docs = by_file[file]
            if file not in entries:  # the objects, read back only when a rule must run on them again
                store.put_raw("docs", key, '{"docs":[' + ",".join(f"[{d.line},{text}]" for d, text
                                                                    in zip(docs, encoded[file][0]))
                              + '],"sizes":' + json.dumps([len(text) for text in encoded[file][0]]) + "}")
            store.put("file", key, {
                "tally": tallies.get(file, entries[file].tally if file in entries else 0),
                "unusable": [exc.where, exc.reason] if exc else None,
                "kubeconform": list(entries[file].kubeconform if file in entries else parts.get(file, (0, 0, 0, []))),
                "local": [context, [_row(f) for f in local[file]]],
                "lines": sorted(new_lines.get(file, ())),
                "skeletons": skeleton_rows[file],
                "context": [[d.line, d.obj] for d in docs if d.kind in _CONTEXT_KINDS],
                "views": {rule_id: list(v) for rule_id, v in views[file].items()},
                "digests": encoded[file][1],
            })
        for rule in rerun:
            store.put("rule", rule_keys[rule.id], [_row(f) for f in rerun_findings[rule.id]])
        if tree is not None:
            store.put("tree", tree, {
                "findings": [_row(f) for f in result.findings],
                "suppressed": [[_row(f), reason] for f, reason in result.suppressed],
                "kubeconform": [schema_result.valid, schema_result.invalid, schema_result.errors, schema_result.skipped,
                                schema_result.resources],
                "objects": result.objects,
                "rules": [{**r.__dict__, "kinds": list(r.kinds)} for r in result.rules],
            })
    phase("cache: write")
    stats = store.stats
    result.cache = (f"{folder}: {len(files) - len(fresh)} of {len(files)} files reused, {len(fresh)} read afresh; "
                    f"per-object rules on {len(stale)} files ({len(stale_docs)} objects judged), cross-object rules: {len(rerun)} of {len(joined)} run "
                    f"again ({len(loaded)} files' objects read back); "
                    f"{stats.ignored} entries ignored (corrupt or foreign), {stats.writes} written"
                    + (f", {stats.write_errors} not writable" if stats.write_errors else ""))
    return result
