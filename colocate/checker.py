"""`colocate check`: kubeconform plus the policy rules, over one index of every object.

Rules live in ``policies/rules/<id>.yaml``: metadata, message and fix, and either a JSON
Schema (single-object rules, Polaris style) or a Python check ``<module>.<function>`` in
``policies/checks/<module>.py`` (rules that read more than one field or join objects).
"""
from __future__ import annotations

import gc
import importlib
import json
import re
import string
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import jsonschema

from colocate import config as config_mod, kubeconform, manifests
from colocate.model.cluster import Cluster, reference
from colocate.model.names import IGNORE_ANNOTATION, TIER_LABEL
from colocate.errors import ColocateError, InputError
from colocate.resources import data_path, repository
from colocate.model import pool_facts
from colocate.model.pool_facts import PoolFacts
from colocate.manifests import Doc, PodSpec

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
        data = config_mod.load_yaml_file(path)
        config_mod.validate(data, _RULE_SCHEMA, str(path))
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


#: The rule that reports a suppression without a reason; it cannot itself be suppressed.
SUPPRESSION_RULE_ID = "COL010"

_REQUIRED = re.compile(r"^'([^']+)' is a required property")


def _schema_findings(rule: Rule, ctx: Context, index: Index) -> Iterator[Violation]:
    validator = jsonschema.Draft202012Validator(_fill(rule.schema, ctx.values))
    if rule.target == "PodSpec":
        targets: Iterable[tuple[Doc, str, Any]] = ((p.doc, p.path, p.spec) for p in index.pods(rule.scope))
    else:
        targets = ((d, "", d.obj) for d in index.docs if not rule.kinds or d.kind in rule.kinds)
    for doc, base, value in targets:
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


def evaluate(rules: Iterable[Rule], index: Index, timings: Timings | None = None) -> list[Finding]:
    findings = []
    values = index.ctx.values
    for rule in rules:
        start = time.perf_counter()
        try:
            findings.extend(_judge(rule, index, values))
        except ColocateError:
            raise
        except Exception as exc:
            findings.extend(_unjudged(rule, index, values, exc))
        if timings is not None:
            timings.append((rule.id, time.perf_counter() - start))
    return findings


_KUBECONFORM_PREFIX = re.compile(r"problem validating schema\. Check JSON formatting: jsonschema validation failed "
                                 r"with '[^']*' - ")


def _schema_message(res: dict, doc: Doc | None, kubernetes_version: str) -> str:
    """kubeconform's message without its cache paths, and a kind whose apiVersion the Kubernetes
    version does not serve said so, with the versions it does serve."""
    message = _KUBECONFORM_PREFIX.sub("", str(res.get("msg", "")))
    message = re.sub(r"\s+- at ", "; at ", message)
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


def _with_field_lines(findings: list[Finding]) -> list[Finding]:
    """Each finding with the line of its field, reading again only the files that have findings."""
    wanted: dict[str, list[int]] = {}
    for i, f in enumerate(findings):
        if f.field and f.line:
            wanted.setdefault(f.file, []).append(i)
    out = list(findings)
    for file, indexes in wanted.items():
        lines = manifests.field_lines(Path(file), [(findings[i].line, findings[i].field) for i in indexes])
        for i, line in zip(indexes, lines):
            out[i] = replace(findings[i], field_line=line)
    return out


def cluster_pools(docs: list[Doc], cluster: Path | None) -> tuple[tuple[PoolFacts, ...], str]:
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
        described = [(d.file, d.obj) for d in manifests.load([where]) if d.kind == pool_facts.KIND]
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


def described_rules(config_path: Path | None = None) -> tuple[Rule, ...]:
    """Every rule with its placeholders filled from the configuration, for ``colocate rules``
    and ``--explain`` (no objects: the namespace tiers are the configuration's). Outside a
    repository, with no --config, the rules as written (``${name}`` placeholders)."""
    if config_path is None and not config_mod.default_path().is_file():
        return load_rules()
    config = config_mod.load(config_path) if config_path else config_mod.load()
    ctx = _context(reference(config), [], config.gitops.min_argocd_version, config.registry_host,
                   config.registry_proxy_projects)
    return tuple(rule.filled(ctx.values) for rule in load_rules())


def check(paths: list[Path], config_path: Path | None = None, cluster: Path | None = None,
          timings: Timings | None = None, exclude: Iterable[str] = ()) -> CheckResult:
    """Validate manifests. Raises ColocateError for unusable input (exit 2). ``timings``, when
    given, receives the seconds of each phase and rule (``check --timings``)."""
    clock = [time.perf_counter()]

    def phase(name: str) -> None:
        now = time.perf_counter()
        if timings is not None:
            timings.append((name, now - clock[0]))
        clock[0] = now

    config = config_mod.load(config_path) if config_path else config_mod.load()
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
        ctx = _context(reference(config), docs, config.gitops.min_argocd_version,
                       config.registry_host, config.registry_proxy_projects, config.shared_storage_class)
        ctx.pools, ctx.pools_source = cluster_pools(docs, cluster)
        ctx.rules = tuple(rules)
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
    suppressed = list(zip(_with_field_lines([f for f, _ in suppressed]), (reason for _, reason in suppressed)))
    findings.sort(key=lambda f: (f.file, f.line, f.field_line, f.rule, f.field))
    phase("field lines, suppressions, sort")
    gc.unfreeze()
    return CheckResult(findings, schema_result, len(docs), [r.filled(ctx.values) for r in rules], suppressed)


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
    if unusable is None:
        docs = manifests.load_files(files, tally)
    else:
        docs = manifests.load_files(files, tally, unusable)
        for path, exc in unusable:
            if str(path) in named:
                raise exc
    gc.freeze()
    return docs
