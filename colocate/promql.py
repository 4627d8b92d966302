"""PromQL in our manifests, held against the catalog of metrics the pinned exporters expose.

Three parts, used by the policy checks in ``policies/checks/promql.py``:

* :func:`catalog` loads ``policies/metrics/catalog.yaml`` once: every series name on the wire
  (histograms and summaries expanded as the catalog header says), its labels, and the
  ``removed`` / ``not_in_pinned_versions`` / ``dropped`` facts used to explain an unknown name.
* :func:`queries` finds every PromQL expression in PrometheusRule objects and in Grafana
  dashboard ConfigMaps (panels, nested row panels, templating queries), substituting Grafana
  variables first so that ``$node`` or ``[$__rate_interval]`` are not syntax errors.
* :func:`analyse` parses one expression with ``promql_parser`` (a Rust port of the Prometheus
  parser) and returns its selectors and AST; :func:`label_problems` walks the AST for labels
  that are matched, grouped or joined on but cannot be there.

Recording rules defined in the checked objects are metrics too (:func:`recorded_metrics`).
Their labels are approximated from the expression (:func:`output_labels`): ``by`` keeps the
listed labels, ``without`` drops them, one-to-one ``on`` keeps the matching labels, function
calls keep their vector argument's labels (plus the target label of ``label_replace``); when
the approximation cannot tell (an unknown metric inside), the label set is left open.
"""
from __future__ import annotations

import difflib
import fnmatch
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

import promql_parser as pp
import yaml

from colocate.resources import data_path
from colocate.errors import InputError
from colocate.model.names import DASHBOARD_SIDECAR_LABEL
from colocate.manifests import Doc

CATALOG_PATH = data_path("colocate.policies", "metrics", "catalog.yaml")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


#: Which scrape job(s) an exporter's series come from (the keys of the catalog's target_labels).
_EXPORTER_JOBS = {"kubelet-cadvisor": ("kubelet",), "kubelet": ("kubelet",)}
#: Labels every scraped series carries.
_SCRAPE_LABELS = frozenset({"job", "instance"})
_SUFFIXES = {"histogram": (("_bucket", "le"), ("_sum", None), ("_count", None)),
             "summary": (("", "quantile"), ("_sum", None), ("_count", None))}


# --------------------------------------------------------------------------------------------
# The catalog
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Metric:
    """One series name as Prometheus stores it."""

    name: str
    exporter: str
    #: Label names the series can carry; ``None`` when any label may appear (ALERTS).
    labels: frozenset[str] | None
    #: Prefixes of generated label names (``label_`` for kube_pod_labels' allow-listed keys).
    label_prefixes: tuple[str, ...] = ()
    #: Why Prometheus never stores it although the exporter emits it ("" = stored).
    dropped: str = ""

    def has_label(self, label: str) -> bool:
        return self.labels is None or label in self.labels or label.startswith(self.label_prefixes)


@dataclass(frozen=True)
class Removed:
    """An old name people still write, and what replaced it."""

    replacement: str
    removed_in: str


@dataclass(frozen=True)
class Catalog:
    """policies/metrics/catalog.yaml, as the checks use it."""

    metrics: Mapping[str, Metric]
    removed: Mapping[str, Removed]
    #: ``kube_hpa_*``-style entries: (glob, Removed with a ``*`` in its replacement).
    removed_patterns: tuple[tuple[str, Removed], ...]
    #: name -> why it is absent from the pinned versions.
    newer: Mapping[str, str]
    #: label -> what to use instead, for labels the pinned exporters no longer set.
    removed_labels: Mapping[str, str]

    def explain_unknown(self, name: str, known: Mapping[str, Metric]) -> str:
        """Why ``name`` returns nothing, and the name to use instead."""
        metric = known.get(name)
        if metric is not None and metric.dropped:
            return f"{name} is emitted by {metric.exporter} but never stored: {metric.dropped}"
        if name in self.removed:
            r = self.removed[name]
            return f"{name} was removed in {r.removed_in}; use {r.replacement}"
        for pattern, r in self.removed_patterns:
            if fnmatch.fnmatchcase(name, pattern):
                new = r.replacement.replace("*", name[len(pattern.rstrip("*")):], 1)
                return f"{name} was removed in {r.removed_in}; use {new}"
        if name in self.newer:
            return f"{name} is not in the pinned exporter versions ({self.newer[name]})"
        if f"{name}_bucket" in known:
            return f"{name} is a histogram; query {name}_bucket, {name}_sum or {name}_count"
        stored = [n for n, m in known.items() if not m.dropped]
        close = difflib.get_close_matches(name, stored, n=1, cutoff=0.6)
        hint = f"; closest catalog name: {close[0]}" if close else "; no similar name in the catalog"
        return f"{name} is not exposed by any pinned exporter{hint}"


def _job_labels(target_labels: dict[str, Any]) -> dict[str, frozenset[str]]:
    return {job: frozenset(spec.get("labels") or ()) | _SCRAPE_LABELS for job, spec in target_labels.items()}


def _dynamic_prefixes(entry: dict[str, Any]) -> tuple[str, ...]:
    """``label_<sanitized key> ...`` -> ("label_",); "every label of the alert" -> open set."""
    return tuple(sorted(set(re.findall(r"\b([a-z]+_)<", str(entry.get("dynamic_labels") or "")))))


def _metric_labels(entry: dict[str, Any], jobs: dict[str, frozenset[str]]) -> frozenset[str] | None:
    if entry.get("dynamic_labels") and not _dynamic_prefixes(entry):
        return None
    own = frozenset(entry.get("labels") or ()) | frozenset(entry.get("optional_labels") or ())
    exporter = entry["exporter"]
    if entry.get("includes_target_labels"):
        names = tuple(jobs)
    else:
        names = tuple(entry.get("jobs") or _EXPORTER_JOBS.get(exporter, (exporter,)))
    target: frozenset[str] = frozenset().union(*(jobs.get(j, _SCRAPE_LABELS) for j in names))
    return own | target


def _expand(name: str, entry: dict[str, Any], labels: frozenset[str] | None) -> Iterator[tuple[str, frozenset[str] | None]]:
    """The series names of one catalog entry: histogram/summary families become their parts."""
    suffixes = _SUFFIXES.get(entry.get("type", ""))
    if not suffixes:
        yield name, labels
        return
    base = None if labels is None else labels - {"le", "quantile"}
    for suffix, extra in suffixes:
        yield name + suffix, (None if base is None else base | ({extra} if extra else set()))


@lru_cache(maxsize=None)
def catalog_document(path: Path = CATALOG_PATH) -> dict[str, Any]:
    """The metric catalog file as data, read once per process (the checker and the DCGM
    exporter's field list both read it here)."""
    try:
        return yaml.load(path.read_text(), Loader=_Loader)  # C loader: 10x faster on 3,500 lines
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(str(path), "", f"cannot read the metric catalog: {exc}") from None


@lru_cache(maxsize=None)
def catalog(path: Path = CATALOG_PATH) -> Catalog:
    """The metric catalog, read once per process."""
    data = catalog_document(path)
    jobs = _job_labels(data.get("target_labels") or {})
    metrics: dict[str, Metric] = {}
    for name, entry in (data.get("metrics") or {}).items():
        prefixes = _dynamic_prefixes(entry)
        dropped = entry.get("dropped_by", "dropped by relabeling") if entry.get("dropped") else ""
        for series, labels in _expand(name, entry, _metric_labels(entry, jobs)):
            metrics[series] = Metric(series, entry["exporter"], labels, prefixes, dropped)
    removed, patterns = {}, []
    for name, entry in (data.get("removed") or {}).items():
        r = Removed(entry["replacement"], entry.get("removed_in", "an earlier release"))
        if entry.get("pattern"):
            patterns.append((name, r))
        else:
            removed[name] = r
    newer = {name: e.get("why", "newer release") for name, e in (data.get("not_in_pinned_versions") or {}).items()}
    removed_labels = {}
    for key, entry in (data.get("removed_labels") or {}).items():
        for label in re.split(r"\s*/\s*", key):
            removed_labels[label] = str(entry.get("replacement", ""))
    return Catalog(metrics, removed, tuple(patterns), newer, removed_labels)


# --------------------------------------------------------------------------------------------
# Finding the queries
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Query:
    """One PromQL expression and where it lives."""

    doc: Doc
    #: Field path inside the object, e.g. ``spec.groups[0].rules[3].expr`` or
    #: ``data.colocation.json panels[4] "GPU utilisation" targets[A].expr``.
    field: str
    #: Who reads it, for messages: ``alert "NodeCPUHigh"`` or ``panel "GPU utilisation"``.
    where: str
    #: The expression as written.
    text: str
    #: The expression to parse (Grafana variables substituted); "" = nothing to check.
    expr: str


def is_dashboard(doc: Doc) -> bool:
    return doc.kind == "ConfigMap" and DASHBOARD_SIDECAR_LABEL in (doc.metadata.get("labels") or {})


def is_rule_object(doc: Doc) -> bool:
    return doc.kind == "PrometheusRule" and doc.group == "monitoring.coreos.com"


def _rules(doc: Doc) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, rule) for every rule of a PrometheusRule."""
    spec = doc.obj.get("spec")
    groups = spec.get("groups") if isinstance(spec, dict) else None
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        rules = group.get("rules") if isinstance(group, dict) else None
        for r, rule in enumerate(rules if isinstance(rules, list) else []):
            if isinstance(rule, dict):
                yield f"spec.groups[{g}].rules[{r}]", rule


def _rule_queries(doc: Doc) -> Iterator[Query]:
    for path, rule in _rules(doc):
        expr = rule.get("expr")
        if expr is None:
            continue
        text = str(expr)
        what = f'alert "{rule["alert"]}"' if rule.get("alert") else f'record "{rule.get("record", "?")}"'
        yield Query(doc, f"{path}.expr", what, text, text)


# Grafana's variable syntaxes: $var, ${var}, ${var:format}, [[var]], [[var:format]].
VARIABLE = re.compile(r"\$\{(\w+)(?:[.:][^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)")
#: Global variables that stand for a duration, or for a number (ms, s, epoch).
_DURATION_VARS = {"__interval", "__rate_interval", "__range", "__auto_interval"}
_NUMBER_VARS = re.compile(r"__(interval_ms|range_ms|range_s|rate_interval_ms|from|to)$")
#: A bare variable (label name, metric name) becomes this identifier, which the checks skip.
VARIABLE_MARK = "__grafana_var_"
_SAMPLE_DURATION = "5m"


def substitute_variables(expr: str) -> str:
    """Replace Grafana variables with values that keep the query valid PromQL.

    Durations (``$__rate_interval``, anything inside ``[...]``) become 5m; numeric globals
    (``$__range_s``) a number; inside a string a variable becomes its name (a valid regex
    and label value); elsewhere (``by ($label)``) an identifier starting with VARIABLE_MARK.
    """
    out, i, quote, brackets = [], 0, "", 0
    while i < len(expr):
        ch = expr[i]
        match = VARIABLE.match(expr, i) if ch in "$[" else None
        if match:
            name = next(g for g in match.groups() if g)
            if _NUMBER_VARS.match(name):
                value = "300000" if name.endswith("ms") or name in ("__from", "__to") else "300"
            elif quote:
                value = name
            elif name in _DURATION_VARS or name.startswith("__auto_interval") or brackets:
                value = _SAMPLE_DURATION
            else:
                value = VARIABLE_MARK + name
            out.append(value)
            i = match.end()
            continue
        if quote:
            if ch == "\\" and quote != "`":
                out.append(expr[i:i + 2])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch == "[":
            brackets += 1
        elif ch == "]":
            brackets = max(0, brackets - 1)
        out.append(ch)
        i += 1
    return "".join(out)


_LABEL_VALUES = re.compile(r"^\s*label_values\s*\((.*),\s*([A-Za-z_$][\w${}]*)\s*\)\s*$", re.S)
_QUERY_RESULT = re.compile(r"^\s*query_result\s*\((.*)\)\s*$", re.S)
_NO_PROMQL = re.compile(r"^\s*(label_values\s*\(\s*[\w$]+\s*\)|label_names\s*\(.*\)|metrics\s*\(.*\))\s*$", re.S)


def variable_query(query: str) -> str:
    """The PromQL inside a Grafana Prometheus variable query ("" when it has none).

    ``label_values(m{...}, l)`` becomes ``count by (l) (m{...})``, so the metric and the
    label are checked like any other query; ``query_result(e)`` becomes ``e``;
    ``label_values(l)``, ``label_names()`` and ``metrics(re)`` read no series by name.
    """
    if _NO_PROMQL.match(query):
        return ""
    match = _LABEL_VALUES.match(query)
    if match:
        return f"count by ({match.group(2)}) ({match.group(1)})"
    match = _QUERY_RESULT.match(query)
    return match.group(1) if match else query


def _prometheus(datasource: Any) -> bool:
    """Only Prometheus targets hold PromQL; a datasource variable or a bare uid is assumed to be."""
    return not (isinstance(datasource, dict) and datasource.get("type") not in (None, "", "prometheus", "datasource"))


def _panels(container: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every panel with its path: top-level, inside (collapsed) rows, and legacy ``rows[]``."""
    for key in ("panels", "rows"):
        items = container.get(key)
        for i, panel in enumerate(items if isinstance(items, list) else []):
            if isinstance(panel, dict):
                here = f"{path}.{key}[{i}]" if path else f"{key}[{i}]"
                yield here, panel
                yield from _panels(panel, here)


def _dashboard_queries(doc: Doc) -> Iterator[Query]:
    data = doc.obj.get("data")
    for key in sorted(data) if isinstance(data, dict) else ():
        try:
            dashboard = json.loads(data[key])
        except (TypeError, ValueError):
            continue
        if not isinstance(dashboard, dict):
            continue
        base = f"data.{key}"
        title = dashboard.get("title", key)
        for path, panel in _panels(dashboard, ""):
            targets = panel.get("targets")
            if not _prometheus(panel.get("datasource")) or not isinstance(targets, list):
                continue
            name = str(panel.get("title", ""))
            for t, target in enumerate(targets):
                if not isinstance(target, dict) or not target.get("expr") or not _prometheus(target.get("datasource", {})):
                    continue
                text = str(target["expr"])
                ref = target.get("refId") or t
                yield Query(doc, f'{base} {path} "{name}" targets[{ref}].expr',
                            f'dashboard "{title}" panel "{name}" query {ref}', text, substitute_variables(text))
        variables = (dashboard.get("templating") or {}).get("list")
        for v, variable in enumerate(variables if isinstance(variables, list) else []):
            if not isinstance(variable, dict) or variable.get("type") != "query" or not _prometheus(variable.get("datasource")):
                continue
            query = variable.get("query")
            text = str(query.get("query", "") if isinstance(query, dict) else query or "")
            name = str(variable.get("name", ""))
            yield Query(doc, f'{base} templating.list[{v}] "{name}" query',
                        f'dashboard "{title}" variable "{name}"', text, substitute_variables(variable_query(text)))


def queries(docs: list[Doc]) -> Iterator[Query]:
    """Every PromQL expression in the PrometheusRules and dashboard ConfigMaps among ``docs``."""
    for doc in docs:
        if is_rule_object(doc):
            yield from _rule_queries(doc)
        elif is_dashboard(doc):
            yield from _dashboard_queries(doc)


# --------------------------------------------------------------------------------------------
# Parsing and analysis
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Selector:
    """A vector selector: its metric name ("" when chosen by regex) and its matchers."""

    name: str
    #: (label, op, value) with op one of = != =~ !~.
    matchers: tuple[tuple[str, str, str], ...]

    def __str__(self) -> str:
        inner = ",".join(f'{label}{op}"{value}"' for label, op, value in self.matchers)
        return f"{self.name}{{{inner}}}" if inner else self.name


@dataclass(frozen=True)
class Analysis:
    """What one expression reads. ``error`` is the parser's message when it does not parse."""

    error: str = ""
    selectors: tuple[Selector, ...] = ()
    ast: Any = None


# promql_parser's enums are unhashable; key by their str() ("MatchOp.Equal").
_OPS = {str(pp.MatchOp.Equal): "=", str(pp.MatchOp.NotEqual): "!=", str(pp.MatchOp.Re): "=~",
        str(pp.MatchOp.NotRe): "!~"}


def _selector(node: pp.VectorSelector) -> Selector:
    matchers = tuple((m.name, _OPS[str(m.op)], m.value) for m in node.matchers.matchers)
    name = node.name or next((v for label, op, v in matchers if label == "__name__" and op == "="), "")
    return Selector(name, tuple(m for m in matchers if m[0] != "__name__"))


@lru_cache(maxsize=8192)
def analyse(expr: str) -> Analysis:
    """Parse one expression (cached: the same query is analysed once per process)."""
    try:
        ast = pp.parse(expr)
    except ValueError as exc:
        return Analysis(error=str(exc))
    selectors: list[Selector] = []
    error = ""

    def visit(node: Any) -> None:
        nonlocal error
        if isinstance(node, pp.VectorSelector):
            if node.matchers.or_matchers:
                error = "'or' inside a label selector needs Prometheus 3; the pinned Prometheus is 2.48"
            selectors.append(_selector(node))

    pp.walk(ast, visit)
    return Analysis(error, tuple(selectors), ast)


def is_placeholder(name: str) -> bool:
    """A name that a Grafana variable stands for, known only at view time."""
    return name.startswith(VARIABLE_MARK)


def matches_empty(op: str, value: str) -> bool | None:
    """Does the matcher ``label<op>"value"`` accept a series that lacks the label (value "")?
    ``None`` when the regex is not one Python can judge (then no claim is made)."""
    if op in ("=", "!="):
        return (value == "") == (op == "=")
    try:
        full = re.fullmatch(value, "") is not None
    except re.error:
        return None
    return full == (op == "=~")


# --------------------------------------------------------------------------------------------
# Label flow (for recording rules and label checks)
# --------------------------------------------------------------------------------------------

def _scalar(node: Any) -> bool:
    if isinstance(node, (pp.NumberLiteral, pp.StringLiteral)):
        return True
    if isinstance(node, pp.Call):
        return node.func.return_type == pp.ValueType.Scalar
    if isinstance(node, (pp.ParenExpr, pp.UnaryExpr)):
        return _scalar(node.expr)
    if isinstance(node, pp.BinaryExpr):
        return _scalar(node.lhs) and _scalar(node.rhs)
    return False


def output_labels(node: Any, known: Mapping[str, Metric]) -> frozenset[str] | None:
    """The label names of the expression's result series; ``None`` when not known.

    A deliberate approximation of Prometheus' rules (see the module docstring): good enough
    to know which labels a recording rule keeps and which a ``by`` clause can group on.
    """
    if isinstance(node, pp.MatrixSelector):
        node = node.vector_selector
    if isinstance(node, pp.VectorSelector):
        sel = _selector(node)
        metric = known.get(sel.name)
        if metric is None or metric.labels is None or metric.label_prefixes:
            return None
        return metric.labels
    if _scalar(node):
        return frozenset()
    if isinstance(node, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr)):
        return output_labels(node.expr, known)
    if isinstance(node, pp.AggregateExpr):
        inner = output_labels(node.expr, known)
        op = str(node.op)
        if op in ("topk", "bottomk", "limitk", "limit_ratio"):
            return inner
        extra = {node.param.val} if op == "count_values" and isinstance(node.param, pp.StringLiteral) else set()
        mod = node.modifier
        if mod is None:
            return frozenset(extra)
        if mod.type == pp.AggModifierType.By:
            return frozenset(mod.labels) | extra
        return None if inner is None else inner - set(mod.labels) | extra
    if isinstance(node, pp.BinaryExpr):
        lhs, rhs = output_labels(node.lhs, known), output_labels(node.rhs, known)
        if _scalar(node.lhs):
            return rhs
        if _scalar(node.rhs):
            return lhs
        op, mod = str(node.op), node.modifier
        if op == "or":
            return None if lhs is None or rhs is None else lhs | rhs
        if op in ("and", "unless"):
            return lhs
        card = mod.card if mod else pp.VectorMatchCardinality.OneToOne
        matching = mod.matching if mod else None
        if card == pp.VectorMatchCardinality.OneToMany:
            lhs, rhs = rhs, lhs
        if card in (pp.VectorMatchCardinality.ManyToOne, pp.VectorMatchCardinality.OneToMany):
            return None if lhs is None else lhs | frozenset(mod.group_labels or ())
        if matching is not None and matching.type == pp.LabelModifierType.Include:
            return frozenset(matching.labels)
        if matching is not None:
            return None if lhs is None else lhs - set(matching.labels)
        return lhs
    if isinstance(node, pp.Call):
        name = node.func.name
        vectors = [a for a in node.args if not _scalar(a)]
        if name in ("label_replace", "label_join"):
            inner = output_labels(node.args[0], known)
            return None if inner is None else inner | {node.args[1].val}
        if name in ("absent", "absent_over_time"):
            sel = node.args[0].vector_selector if isinstance(node.args[0], pp.MatrixSelector) else node.args[0]
            if isinstance(sel, pp.VectorSelector):
                return frozenset(label for label, op, _ in _selector(sel).matchers if op == "=")
            return frozenset()
        if name == "histogram_quantile":
            inner = output_labels(node.args[1], known)
            return None if inner is None else inner - {"le"}
        if not vectors:
            return frozenset()
        return output_labels(vectors[0], known)
    return None


def recorded_metrics(docs: list[Doc]) -> dict[str, Metric]:
    """The series that recording rules in ``docs`` create, with the labels they keep.

    A rule may read another rule's output, so the labels are resolved in a second pass
    against the catalog plus every recorded name (open label set where still unknown).
    """
    rules = [(rule["record"], str(rule.get("expr", "")), tuple((rule.get("labels") or {})))
             for doc in docs if is_rule_object(doc) for _, rule in _rules(doc) if rule.get("record")]
    known: dict[str, Metric] = dict(catalog().metrics)
    recorded = {name: Metric(name, "recording rule", None) for name, _, _ in rules}
    for _ in range(2):
        known.update(recorded)
        for name, expr, extra in rules:
            ast = analyse(expr).ast
            labels = output_labels(ast, known) if ast is not None else None
            recorded[name] = Metric(name, "recording rule", None if labels is None else labels | set(extra))
    return recorded


def label_problems(ast: Any, known: Mapping[str, Metric]) -> list[str]:
    """Label names the expression matches, groups or joins on that its input cannot carry.

    Checked: selector matchers, ``by (...)`` of aggregations, ``on (...)`` and
    ``group_left/right (...)`` of binary operations. Skipped when the input's labels are not
    known (an unknown metric, a dynamic label set) and for Grafana variable placeholders.
    ``without``/``ignoring`` are never wrong, only useless, so they are not reported.
    """
    problems: list[str] = []

    def missing(labels: Any, have: frozenset[str] | None) -> list[str]:
        if have is None:
            return []
        return [l for l in labels if l not in have and not is_placeholder(l)]

    def visit(node: Any) -> None:
        if isinstance(node, pp.VectorSelector):
            sel = _selector(node)
            metric = known.get(sel.name)
            if metric is None:
                return
            for label, op, value in sel.matchers:
                if not metric.has_label(label) and not is_placeholder(label):
                    problems.append(f'{sel.name} has no label "{label}"{_renamed(label)} (matcher {label}{op}"{value}")')
        elif isinstance(node, pp.AggregateExpr) and node.modifier and node.modifier.type == pp.AggModifierType.By:
            have = output_labels(node.expr, known)
            for label in missing(node.modifier.labels, have):
                problems.append(f'{node.op} by ({", ".join(node.modifier.labels)}): its input has no label '
                                f'"{label}"{_renamed(label)} (it has {", ".join(sorted(have))})')
        elif isinstance(node, pp.BinaryExpr) and node.modifier and not (_scalar(node.lhs) or _scalar(node.rhs)):
            mod = node.modifier
            sides = {"left": output_labels(node.lhs, known), "right": output_labels(node.rhs, known)}
            if mod.matching is not None and mod.matching.type == pp.LabelModifierType.Include:
                for side, have in sides.items():
                    for label in missing(mod.matching.labels, have):
                        problems.append(f'{node.op} on ({", ".join(mod.matching.labels)}): the {side} side has '
                                        f'no label "{label}"{_renamed(label)}, so nothing matches')
            for card, side in ((pp.VectorMatchCardinality.ManyToOne, "right"),
                               (pp.VectorMatchCardinality.OneToMany, "left")):
                if mod.card == card:
                    for label in missing(mod.group_labels or (), sides[side]):
                        problems.append(f'group_{"left" if side == "right" else "right"} ({label}): the {side} '
                                        f'side has no label "{label}" to copy')

    pp.walk(ast, visit)
    return problems


def _renamed(label: str) -> str:
    renamed = catalog().removed_labels.get(label)
    return f" (use {renamed})" if renamed else ""
