"""Grafana dashboards as data: one panel walker and one variable expander, shared by the
dashboard constructs, the mixin and the checker (no cdk8s, no SDK import)."""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Iterator, Mapping

# Grafana's variable syntaxes: $var, ${var}, ${var:format}, [[var]], [[var:format]].
VARIABLE = re.compile(r"\$\{(\w+)(?:[.:][^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)")
#: Global variables that stand for a duration, or for a number (ms, s, epoch).
_DURATION_VARS = {"__interval", "__rate_interval", "__range", "__auto_interval"}
_NUMBER_VARS = re.compile(r"__(interval_ms|range_ms|range_s|rate_interval_ms|from|to)$")
#: A bare variable (label name, metric name) becomes this identifier, which the checks skip.
VARIABLE_MARK = "__grafana_var_"
_SAMPLE_DURATION = "5m"


@lru_cache(maxsize=8192)  # the same panels recur across dashboards and copies of them
def substitute_variables(expr: str) -> str:
    """Replace Grafana variables with values that keep the query valid PromQL.

    Durations (``$__rate_interval``, anything inside ``[...]``) become 5m; numeric globals
    (``$__range_s``) a number; any other variable becomes an identifier starting with
    VARIABLE_MARK, a valid label name, label value and regex, which the checks recognise as
    known only at view time (``node=~"$node"`` -> ``node=~"__grafana_var_node"``).
    """
    out, i, quote, brackets = [], 0, "", 0
    while i < len(expr):
        ch = expr[i]
        match = VARIABLE.match(expr, i) if ch in "$[" else None
        if match:
            name = next(g for g in match.groups() if g)
            if _NUMBER_VARS.match(name):
                value = "300000" if name.endswith("ms") or name in ("__from", "__to") else "300"
            elif not quote and (name in _DURATION_VARS or name.startswith("__auto_interval") or brackets):
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


def dashboard_json(dashboard: Any) -> dict[str, Any]:
    """A grafana-foundation-sdk dashboard model (or its JSON dict) as a plain dict."""
    if isinstance(dashboard, Mapping):
        return json.loads(json.dumps(dashboard))
    from grafana_foundation_sdk.cog.encoder import JSONEncoder  # here: check reads JSON dashboards only

    return json.loads(JSONEncoder(sort_keys=True).encode(dashboard))


def walk_panels(container: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every panel with its field path: top-level, rows and the panels inside (collapsed)
    rows, and legacy ``rows[]``."""
    for key in ("panels", "rows"):
        items = container.get(key)
        for i, panel in enumerate(items if isinstance(items, list) else []):
            if isinstance(panel, dict):
                here = f"{path}.{key}[{i}]" if path else f"{key}[{i}]"
                yield here, panel
                yield from walk_panels(panel, here)


def panels(board: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those nested in rows; rows themselves excluded."""
    return (panel for _, panel in walk_panels(board) if panel.get("type") != "row")


def panel_queries(board: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel."""
    for panel in panels(board):
        for target in panel.get("targets") or []:
            if target.get("expr"):
                yield panel.get("title", ""), target["expr"]


def expand_variables(expr: str, values: Mapping[str, str]) -> str:
    """Substitute Grafana variables with the given values; an unknown one raises KeyError."""
    return VARIABLE.sub(lambda m: values[next(g for g in m.groups() if g)], expr)


def as_written(text: str) -> str:
    """``text`` with the identifiers substitute_variables made shown as the variables again."""
    return re.sub(VARIABLE_MARK + r"(\w+)", r"$\1", text)


def is_placeholder(text: str) -> bool:
    """A name or label value that a Grafana variable stands for, or is built from: known only
    at view time."""
    return VARIABLE_MARK in text
