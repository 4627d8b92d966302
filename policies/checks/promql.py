"""PromQL checks: every query in a PrometheusRule or dashboard ConfigMap parses, reads metrics
the pinned exporters expose (policies/metrics/catalog.yaml), filters cAdvisor series right and
uses labels its metrics carry. The analysis lives in colocate/promql.py; each check only turns
its results into Violations. Cost: one pass over the objects to find the rule and dashboard
objects, then work per query; the catalog is loaded once, and only if there is a query.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterator, Mapping

import promql_parser as pp

from colocate import promql
from colocate.promql.parse import selector_of
from colocate.checker import Index, Rule, Violation, reads
from colocate.model.names import DASHBOARD_SIDECAR_LABEL, DASHBOARD_SIDECAR_LABEL_VALUE


def _reads_queries(doc) -> bool:
    """What the PromQL rules read: queries (recording and alerting rules, dashboards) and the
    metrics ServiceMonitors and PodMonitors declare."""
    return promql.is_rule_object(doc) or doc.kind in ("ServiceMonitor", "PodMonitor") or promql.is_dashboard(doc)


_QUERIES = reads(whole=_reads_queries)


def _parsed(index: Index) -> list[tuple[promql.Query, promql.Analysis]]:
    """Every query with its analysis, found and parsed once for all the PromQL rules."""
    return index.shared("promql.parsed", lambda: [(query, promql.analyse(query.expr))
                                                  for query in promql.queries(index.docs) if query.expr.strip()])


def _known(index: Index) -> Mapping[str, promql.Metric]:
    return index.shared("promql.known", lambda: {**promql.catalog().metrics, **promql.scraped_metrics(index.docs),
                                                 **promql.recorded_metrics(index.docs)})


@_QUERIES
def metrics_exist(index: Index, rule: Rule) -> Iterator[Violation]:
    """A syntax error, or a metric no pinned exporter exposes (or that Prometheus drops)."""
    known: Mapping[str, promql.Metric] | None = None
    explained: dict[str, str] = {}  # suggestions are costly: once per unknown name
    for query, analysis in _parsed(index):
        if analysis.error:
            yield Violation(query.doc, query.field, f"{query.where}: syntax error: {analysis.error}")
            continue
        known = known if known is not None else _known(index)
        names = dict.fromkeys(s.name for s in analysis.selectors if s.name and not promql.is_placeholder(s.name))
        fallbacks = None
        for name in names:
            metric = known.get(name)
            if metric is None or metric.absent:
                if name in promql.catalog().removed:
                    fallbacks = _or_fallbacks(analysis.ast) if fallbacks is None else fallbacks
                    if name in fallbacks:
                        continue
                if name not in explained:
                    explained[name] = promql.catalog().explain_unknown(name, known)
                yield Violation(query.doc, query.field, f"{query.where}: {explained[name]}")


def _or_fallbacks(ast) -> set[str]:
    """Removed names read only as the compatibility side of an ``or`` whose other side reads
    their replacement: ``sum(kubelet_running_pods) or sum(kubelet_running_pod_count)``, as
    kubernetes-mixin, CoreDNS and prometheus-mixin dashboards write for older releases. The
    ``or`` returns the replacement's series, so the query shows what the pinned stack exposes.
    A removed name also read outside such an ``or`` (or whose replacement is not read on the
    other side) is still reported."""
    removed = promql.catalog().removed

    def counts(node) -> dict[str, int]:
        found: dict[str, int] = {}

        def count(n) -> None:
            if isinstance(n, pp.VectorSelector):
                name = selector_of(n).name
                found[name] = found.get(name, 0) + 1
        pp.walk(node, count)
        return found

    def replacement(name: str) -> str:
        return removed[name].replacement.split("{", 1)[0].strip()

    covered: dict[str, int] = {}

    def visit(node) -> None:
        if isinstance(node, pp.BinaryExpr) and str(node.op) == "or":
            left, right = counts(node.lhs), counts(node.rhs)
            for side, other in ((left, right), (right, left)):
                for name, n in side.items():
                    if name in removed and replacement(name) in other:
                        covered[name] = covered.get(name, 0) + n

    pp.walk(ast, visit)
    total = counts(ast)
    return {name for name, n in covered.items() if n >= total.get(name, 0)}


def _cadvisor_container_selectors(index: Index) -> Iterator[tuple[promql.Query, promql.Selector, list]]:
    """(query, selector, for each ``container`` matcher: does it accept container=""?) for
    every selector of a cAdvisor series that has a ``container`` label. ``None`` = a regex
    Python cannot judge; the checks make no claim on it."""
    metrics = None
    for query, analysis in _parsed(index):
        metrics = metrics or promql.catalog().metrics
        for sel in analysis.selectors:
            metric = metrics.get(sel.name)
            if metric is not None and metric.exporter == "kubelet-cadvisor" and "container" in (metric.labels or ()):
                # The pod-level cgroup has container="" and image="" (no image of its own), so
                # kubernetes-mixin's image!="" drops it as container!="" does.
                yield query, sel, [promql.matches_empty(op, value) for label, op, value in sel.matchers
                                   if label in ("container", "image")]


def _network(name: str) -> bool:
    """cAdvisor's network series exist only on the pod-level cgroup (container="")."""
    return name.startswith("container_network_")


@_QUERIES
def cadvisor_container_filter(index: Index, rule: Rule) -> Iterator[Violation]:
    """container_* series without a matcher that drops container="" double-count every pod, unless
    the query joins them on ``container`` with a filtered cAdvisor selector: a vector match keeps
    only series whose container value the other side has, and it has no "" (kubernetes-mixin's
    CPUThrottlingHigh divides an unfiltered denominator by a filtered numerator that way)."""
    by_query: dict[int, list] = {}
    for query, sel, accepts_empty in _cadvisor_container_selectors(index):
        if not _network(sel.name):
            by_query.setdefault(id(query), []).append((query, sel, all(a is True for a in accepts_empty)))
    for selectors in by_query.values():
        filtered = any(not unfiltered for _, _, unfiltered in selectors)
        for query, sel, unfiltered in selectors:
            if unfiltered and not (filtered and _joins_on_container(query.expr)):
                yield Violation(query.doc, query.field, f"{query.where}: {sel} has no container filter")


@lru_cache(maxsize=8192)
def _joins_on_container(expr: str) -> bool:
    """Every binary operation between vectors in the expression matches on ``container``: no
    ``on (...)`` without it and no ``ignoring (container)``."""
    analysis = promql.analyse(expr)
    if analysis.ast is None:
        return False
    ok = [True]

    def visit(node) -> None:
        mod = getattr(node, "modifier", None)
        matching = getattr(mod, "matching", None) if node.__class__.__name__ == "BinaryExpr" else None
        if matching is not None:
            include = str(matching.type).endswith("Include")
            if include != ("container" in (matching.labels or ())):
                ok[0] = False

    pp.walk(analysis.ast, visit)
    return ok[0]


@_QUERIES
def cadvisor_network_filter(index: Index, rule: Rule) -> Iterator[Violation]:
    """container_network_* with a matcher that drops container="" selects nothing."""
    for query, sel, accepts_empty in _cadvisor_container_selectors(index):
        if _network(sel.name) and any(a is False for a in accepts_empty):
            yield Violation(query.doc, query.field, f"{query.where}: {sel} selects no series")


@_QUERIES
def labels_exist(index: Index, rule: Rule) -> Iterator[Violation]:
    """Matchers, ``by`` and ``on`` labels that the metrics read cannot carry."""
    known: Mapping[str, promql.Metric] | None = None
    # The same expression (a rule copied into many objects) has the same problems: judge it once.
    problems: dict[str, list[str]] = {}
    for query, analysis in _parsed(index):
        if analysis.ast is None:
            continue
        known = known if known is not None else _known(index)
        if query.expr not in problems:
            problems[query.expr] = list(dict.fromkeys(promql.label_problems(analysis.ast, known)))
        for problem in problems[query.expr]:
            yield Violation(query.doc, query.field, f"{query.where}: {problem}")


@reads(whole=promql.is_dashboard)
def dashboard_provisioned(index: Index, rule: Rule) -> Iterator[Violation]:
    """A ConfigMap of Grafana dashboard JSON that Grafana does not load: not selected by the
    sidecar's label and not mounted into a pod as a volume (kube-prometheus mounts its
    dashboards into Grafana's Deployment and points a file provider at them)."""
    mounted = _mounted_configmaps(index)
    for doc in index.of_kind("ConfigMap"):
        if promql.is_dashboard(doc) and not promql.is_provisioned(doc) and (doc.namespace, doc.name) not in mounted:
            keys = ", ".join(key for key, _ in promql.dashboard_documents(doc))
            value = doc.labels.get(DASHBOARD_SIDECAR_LABEL)
            label = (f'has {DASHBOARD_SIDECAR_LABEL}: "{value}", not "{DASHBOARD_SIDECAR_LABEL_VALUE}"' if value is not None
                     else f"has no {DASHBOARD_SIDECAR_LABEL} label")
            yield Violation(doc, "metadata.labels", f"holds dashboard JSON ({keys}) but {label}, and no pod mounts it, "
                                                    "so Grafana never loads it")


def _mounted_configmaps(index: Index) -> set[tuple[str, str]]:
    """(namespace, name) of every ConfigMap a pod template mounts, directly or projected."""
    def mapping(value) -> dict:
        return value if isinstance(value, dict) else {}

    out: set[tuple[str, str]] = set()
    for pod in index.pods():
        for volume in map(mapping, pod.spec.get("volumes") or []):
            projected = mapping(volume.get("projected")).get("sources")
            for source in [volume, *map(mapping, projected if isinstance(projected, list) else [])]:
                name = mapping(source.get("configMap")).get("name")
                if name:
                    out.add((pod.doc.namespace, str(name)))
    return out
