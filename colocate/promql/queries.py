"""Every PromQL expression in PrometheusRule objects and Grafana dashboard ConfigMaps (panels,
nested row panels, templating queries), with Grafana variables substituted so that ``$node`` or
``[$__rate_interval]`` are not syntax errors."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

from colocate.promql.grafana import substitute_variables, variable_query, walk_panels
from colocate.model.objects import ObjectView
from colocate.model.names import DASHBOARD_SIDECAR_LABEL, DASHBOARD_SIDECAR_LABEL_VALUE

@dataclass(frozen=True)
class Query:
    """One PromQL expression and where it lives."""

    doc: ObjectView
    #: Field path inside the object, e.g. ``spec.groups[0].rules[3].expr`` or
    #: ``data.colocation.json panels[4] "GPU utilisation" targets[A].expr``.
    field: str
    #: Who reads it, for messages: ``alert "NodeCPUHigh"`` or ``panel "GPU utilisation"``.
    where: str
    #: The expression as written.
    text: str
    #: The expression to parse (Grafana variables substituted); "" = nothing to check.
    expr: str


def is_dashboard(doc: ObjectView) -> bool:
    """A ConfigMap holding Grafana dashboard JSON, labelled for the sidecar or not (an unlabelled
    one is still checked, and rule COL221 says Grafana will not load it)."""
    known = doc.__dict__.get("is_dashboard")  # asked by several rules and their declarations (Reads)
    if known is None:
        known = doc.__dict__["is_dashboard"] = doc.kind == "ConfigMap" and any(True for _ in dashboard_documents(doc))
    return known


def is_provisioned(doc: ObjectView) -> bool:
    """Carries the label, with the value, that kube-prometheus-stack's Grafana sidecar selects
    dashboard ConfigMaps by (k8s-sidecar 1.25.2 src/resources.py: label_selector label=value)."""
    return str(doc.labels.get(DASHBOARD_SIDECAR_LABEL)) == DASHBOARD_SIDECAR_LABEL_VALUE


def dashboard_documents(doc: ObjectView) -> Iterator[tuple[str, dict[str, Any]]]:
    """(data key, dashboard) for every ``*.json`` value of a ConfigMap that is a Grafana
    dashboard (a JSON object with panels or rows)."""
    data = doc.obj.get("data")
    for key in sorted(data) if isinstance(data, dict) else ():
        if not str(key).endswith(".json"):
            continue
        try:
            dashboard = json.loads(data[key])
        except (TypeError, ValueError):
            continue
        if isinstance(dashboard, dict) and ("panels" in dashboard or "rows" in dashboard):
            yield key, dashboard


def is_rule_object(doc: ObjectView) -> bool:
    return doc.kind == "PrometheusRule" and doc.group == "monitoring.coreos.com"


def rule_entries(doc: ObjectView) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, rule) for every rule of a PrometheusRule."""
    spec = doc.obj.get("spec")
    groups = spec.get("groups") if isinstance(spec, dict) else None
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        rules = group.get("rules") if isinstance(group, dict) else None
        for r, rule in enumerate(rules if isinstance(rules, list) else []):
            if isinstance(rule, dict):
                yield f"spec.groups[{g}].rules[{r}]", rule


def _rule_queries(doc: ObjectView) -> Iterator[Query]:
    for path, rule in rule_entries(doc):
        expr = rule.get("expr")
        if expr is None:
            continue
        text = str(expr)
        what = f'alert "{rule["alert"]}"' if rule.get("alert") else f'record "{rule.get("record", "?")}"'
        yield Query(doc, f"{path}.expr", what, text, text)


def _prometheus(datasource: Any) -> bool:
    """Only Prometheus targets hold PromQL; a datasource variable or a bare uid is assumed to be."""
    return not (isinstance(datasource, dict) and datasource.get("type") not in (None, "", "prometheus", "datasource"))


def _dashboard_queries(doc: ObjectView) -> Iterator[Query]:
    for key, dashboard in dashboard_documents(doc):
        base = f"data.{key}"
        title = dashboard.get("title", key)
        for path, panel in walk_panels(dashboard):
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


def queries(docs: list[ObjectView]) -> Iterator[Query]:
    """Every PromQL expression in the PrometheusRules and dashboard ConfigMaps among ``docs``."""
    for doc in docs:
        if is_rule_object(doc):
            yield from _rule_queries(doc)
        elif is_dashboard(doc):
            yield from _dashboard_queries(doc)
