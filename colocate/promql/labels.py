"""Label flow: which labels a PromQL expression's result carries (recording rules are metrics
too), and which matched, grouped or joined labels cannot be there.

``by`` keeps the listed labels, ``without`` drops them, one-to-one ``on`` keeps the matching
labels, function calls keep their vector argument's labels (plus the target label of
``label_replace``); when the approximation cannot tell (an unknown metric inside), the label
set is left open.
"""
from __future__ import annotations

from typing import Any, Mapping

import promql_parser as pp

from colocate.model.objects import ObjectView
from colocate.promql.catalog import Metric, catalog, expand
from colocate.model.names import SCRAPED_METRICS_ANNOTATION
from colocate.promql.parse import analyse, matches_empty, selector_of
from colocate.promql.grafana import as_written, is_placeholder
from colocate.promql.queries import is_rule_object, rule_entries

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
        sel = selector_of(node)
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
            # a by() label the input lacks stays absent in the output (its value is "")
            kept = frozenset(mod.labels) if inner is None else frozenset(mod.labels) & inner
            return kept | extra
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
                return frozenset(label for label, op, _ in selector_of(sel).matchers if op == "=")
            return frozenset()
        if name == "histogram_quantile":
            inner = output_labels(node.args[1], known)
            return None if inner is None else inner - {"le"}
        if not vectors:
            return frozenset()
        return output_labels(vectors[0], known)
    return None


def recorded_metrics(docs: list[ObjectView]) -> dict[str, Metric]:
    """The series that recording rules in ``docs`` create, with the labels they keep.

    A rule may read another rule's output, so the labels are resolved in a second pass
    against the catalog plus every recorded name (open label set where still unknown).
    """
    rules = [(rule["record"], str(rule.get("expr", "")), tuple((rule.get("labels") or {})))
             for doc in docs if is_rule_object(doc) for _, rule in rule_entries(doc) if rule.get("record")]
    # Copies of a rule are judged once; the last definition of a name still decides its labels.
    rules = list(dict.fromkeys(reversed(rules)))[::-1]
    known: dict[str, Metric] = dict(catalog().metrics)
    recorded = {name: Metric(name, "recording rule", None) for name, _, _ in rules}
    for _ in range(2):
        known.update(recorded)
        for name, expr, extra in rules:
            ast = analyse(expr).ast
            labels = output_labels(ast, known) if ast is not None else None
            recorded[name] = Metric(name, "recording rule", None if labels is None else labels | set(extra))
    return recorded


def scraped_metrics(docs: list[ObjectView]) -> dict[str, Metric]:
    """Application metrics that a ServiceMonitor or PodMonitor in ``docs`` declares it scrapes,
    in its ``colocate.io/metrics`` annotation: ``name:type`` pairs, comma-separated (type
    ``histogram`` and ``summary`` expand to their series). Their labels are the application's:
    an open set."""
    out: dict[str, Metric] = {}
    for doc in docs:
        if doc.kind not in ("ServiceMonitor", "PodMonitor"):
            continue
        declared = str((doc.metadata.get("annotations") or {}).get(SCRAPED_METRICS_ANNOTATION) or "")
        for item in filter(None, (part.strip() for part in declared.split(","))):
            name, _, kind = item.partition(":")
            for series, _labels in expand(name.strip(), {"type": kind.strip()}, None):
                out[series] = Metric(series, f"{doc.kind} {doc.namespace}/{doc.name}", None)
    return out


def label_problems(ast: Any, known: Mapping[str, Metric]) -> list[str]:
    """Label names the expression matches, groups or joins on that none of its input series
    can carry, each with what PromQL then does.

    The semantics are Prometheus v2.48's: a series without a label has the value "" for it
    (tsdb/querier.go PostingsForMatchers for matchers; promql/engine.go signatureFunc for
    ``on``, generateGroupingKey for ``by``, resultMetric for ``group_left/right``). So a label
    that neither side of ``on (...)`` carries matches everywhere and is not reported. Skipped
    when the input's labels are not known (an unknown metric, a dynamic label set), for
    placeholder label names, and for the catalog's ``grouping_labels`` in ``by``, ``on`` and in
    matchers whose value is a Grafana variable (kubernetes-mixin's ``cluster="$cluster"``: the
    variable takes the label's values, "" when no series has it).
    ``without``/``ignoring`` are never wrong, only useless, so they are not reported.
    """
    problems: list[str] = []

    grouping = catalog().grouping_labels

    def missing(labels: Any, have: frozenset[str] | None) -> list[str]:
        if have is None:
            return []
        return [label for label in labels if label not in have and not is_placeholder(label) and label not in grouping]

    def visit(node: Any) -> None:
        if isinstance(node, pp.VectorSelector):
            sel = selector_of(node)
            metric = known.get(sel.name)
            if metric is None:
                return
            for label, op, value in sel.matchers:
                if metric.has_label(label) or is_placeholder(label):
                    continue
                if is_placeholder(value):
                    if label in grouping:
                        continue  # kubernetes-mixin's $cluster takes the values of cluster: "" here
                    effect = 'keeps every series when the variable\'s value matches "", and none otherwise'
                else:
                    effect = {True: "keeps every series (it filters nothing)", False: "selects nothing",
                              None: "compares every series' empty value"}[matches_empty(op, value)]
                problems.append(f'no series of {sel.name} carries label "{label}"{_renamed(label)}, so the '
                                f'matcher {label}{op}"{as_written(value)}" {effect}')
        elif isinstance(node, pp.AggregateExpr) and node.modifier and node.modifier.type == pp.AggModifierType.By:
            have = output_labels(node.expr, known)
            for label in missing(node.modifier.labels, have):
                problems.append(f'{node.op} by ({", ".join(node.modifier.labels)}): no series of its input carries '
                                f'label "{label}"{_renamed(label)} (they carry {", ".join(sorted(have))}), so it '
                                f'groups as if "{label}" were not listed and the result has no "{label}"')
        elif isinstance(node, pp.BinaryExpr) and node.modifier and not (_scalar(node.lhs) or _scalar(node.rhs)):
            mod = node.modifier
            sides = {"left": output_labels(node.lhs, known), "right": output_labels(node.rhs, known)}
            if mod.matching is not None and mod.matching.type == pp.LabelModifierType.Include:
                # A label neither side carries is "" on both and matches; only a label one side
                # carries and the other cannot leaves just the carrier's series without it.
                for side, other in (("left", "right"), ("right", "left")):
                    for label in missing(mod.matching.labels, sides[side]):
                        if sides[other] is not None and label in sides[other]:
                            problems.append(f'{node.op} on ({", ".join(mod.matching.labels)}): no series of the '
                                            f'{side} side carries label "{label}"{_renamed(label)} but the {other} '
                                            f'side\'s do, so only {other} series without "{label}" can match')
            for card, side in ((pp.VectorMatchCardinality.ManyToOne, "right"),
                               (pp.VectorMatchCardinality.OneToMany, "left")):
                if mod.card == card:
                    for label in missing(mod.group_labels or (), sides[side]):
                        problems.append(f'group_{"left" if side == "right" else "right"} ({label}): no series of '
                                        f'the {side} side carries label "{label}", so there is nothing to copy and '
                                        f'the result has no "{label}"')

    pp.walk(ast, visit)
    return problems


def _renamed(label: str) -> str:
    renamed = catalog().removed_labels.get(label)
    return f" (use {renamed})" if renamed else ""
