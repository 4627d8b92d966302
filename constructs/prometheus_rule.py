"""PrometheusRule: alert and recording rule groups for the Prometheus operator.

The CRD comes with kube-prometheus-stack (another Argo CD Application), so the object skips
Argo CD's dry run until it exists. Prometheus only loads rules carrying every label of its
``ruleSelector``; kube-prometheus-stack selects ``release: <release>`` (docs/gitops.md).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import promql_parser
from constructs import Construct

from colocate.errors import PropError
from colocate.constructs._k8s import emit
from colocate.model.validate import check_dns_label, check_required_labels
from colocate.model.names import SEVERITIES, SYNC_OPTIONS

#: Annotations every alert carries: what, the details, and what to do about it.
REQUIRED_ANNOTATIONS = ("summary", "description", "hint")
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_ALERT_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_ZERO = re.compile(r"^0[smh]$")


@dataclass(frozen=True)
class PrometheusRuleProps:
    """Props of a PrometheusRule."""

    #: Object name.
    name: str
    #: Namespace (the monitoring namespace).
    namespace: str
    #: Rule groups as Prometheus reads them: ``[{"name": ..., "rules": [...]}]``.
    groups: Sequence[Mapping[str, Any]]
    #: Labels Prometheus' ruleSelector needs, e.g. ``cluster.monitor_labels``. Required.
    labels: Mapping[str, str] = field(default_factory=dict)


class PrometheusRule(Construct):
    """A monitoring.coreos.com/v1 PrometheusRule, validated rule by rule."""

    def __init__(self, scope: Construct, id: str, props: PrometheusRuleProps):
        super().__init__(scope, id)
        self.props = props
        self._validate()
        emit(self, "rule", {
            "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": props.name, "namespace": props.namespace, "labels": dict(props.labels),
                         "annotations": {SYNC_OPTIONS: "SkipDryRunOnMissingResource=true"}},
            "spec": {"groups": [{"name": g["name"], "rules": [dict(r) for r in g["rules"]]} for g in props.groups]},
        })

    def _validate(self) -> None:
        p, where = self.props, f"PrometheusRule {self.props.name!r}"
        check_dns_label(where, "name", p.name)
        check_dns_label(where, "namespace", p.namespace)
        check_required_labels(where, "labels", p.labels, "Prometheus only loads rules matching its ruleSelector, "
                              "pass cluster.monitor_labels")
        if not p.groups:
            raise PropError(where, "groups", "no rule groups")
        group_names: set[str] = set()
        names: set[str] = set()
        for g, group in enumerate(p.groups):
            if not group.get("name") or group["name"] in group_names:
                raise PropError(where, f"groups[{g}].name", f"{group.get('name')!r} must be set and unique")
            group_names.add(group["name"])
            if not group.get("rules"):
                raise PropError(where, f"groups[{g}].rules", "empty group")
            for r, rule in enumerate(group["rules"]):
                _check_rule(where, f"groups[{g}].rules[{r}]", rule, names)


def _check_rule(where: str, path: str, rule: Mapping[str, Any], names: set[str]) -> None:
    is_alert = "alert" in rule
    if is_alert == ("record" in rule):
        raise PropError(where, path, "set exactly one of 'alert' and 'record'")
    name = rule["alert" if is_alert else "record"]
    path = f"{path} ({name})"
    pattern = _ALERT_NAME if is_alert else _METRIC_NAME
    if not isinstance(name, str) or not pattern.match(name):
        raise PropError(where, path, "alert names are CamelCase, record names valid metric names")
    if name in names:
        raise PropError(where, path, f"{name!r} is defined twice; names must be unique")
    names.add(name)
    try:
        promql_parser.parse(rule.get("expr") or "")
    except Exception as err:  # the parser raises plain ValueError/RuntimeError variants
        raise PropError(where, f"{path}.expr", f"is not valid PromQL: {err}") from None
    if not is_alert:
        return
    duration = rule.get("for")
    try:
        if not (isinstance(duration, str) and _ZERO.match(duration)):
            promql_parser.parse_duration(duration or "")
    except Exception:
        raise PropError(where, f"{path}.for", f"{rule.get('for')!r} must be an explicit duration such as '5m' "
                        "('0m' to fire at once)") from None
    severity = (rule.get("labels") or {}).get("severity")
    if severity not in SEVERITIES:
        raise PropError(where, f"{path}.labels.severity", f"{severity!r} must be one of {', '.join(SEVERITIES)}")
    annotations = rule.get("annotations") or {}
    for key in REQUIRED_ANNOTATIONS:
        if not annotations.get(key):
            raise PropError(where, f"{path}.annotations.{key}", "missing; every alert says what fired "
                            "(summary), the details (description) and what to do (hint)")


def rules_file(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A PrometheusRule object's ``spec`` as a plain Prometheus rules file (``groups:``), the
    form promtool and pint read; neither reads the CRD wrapper (prometheus/prometheus#9195)."""
    return {"groups": obj["spec"]["groups"]}
