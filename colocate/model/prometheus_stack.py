"""How kube-prometheus-stack selects monitors: which kinds Prometheus picks up and with which
selectors. The generator writes the values (constructs/kube_prometheus_stack.py) and the checker
judges them (policies/checks/monitoring_stack.py), both from here."""
from __future__ import annotations

from typing import Any, Mapping

#: The three monitor kinds Prometheus selects, by the prefix of their prometheusSpec keys.
MONITOR_KINDS = {"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor", "PrometheusRule": "rule"}


def monitor_selectors(labels: Mapping[str, str]) -> dict[str, Any]:
    """prometheusSpec keys that make Prometheus pick up every ServiceMonitor, PodMonitor and
    PrometheusRule carrying ``labels``, in any namespace (``{}`` namespace selector = all)."""
    out: dict[str, Any] = {}
    for prefix in MONITOR_KINDS.values():
        out[f"{prefix}Selector"] = {"matchLabels": dict(labels)}
        out[f"{prefix}NamespaceSelector"] = {}
    return out


def rendered_selector(prometheus_spec: Mapping[str, Any], kind: str, release: str) -> tuple[dict, dict | None]:
    """(label selector, namespace selector) the chart renders into the Prometheus object for
    ``kind``, from ``prometheus.prometheusSpec`` values (templates/prometheus/prometheus.yaml):
    an explicit selector wins; else ``*SelectorNilUsesHelmValues`` (default true) gives
    ``release: <release>``; else ``{}``. A namespace selector of None means the Prometheus'
    own namespace only; ``{}`` means every namespace (the chart's default)."""
    prefix = MONITOR_KINDS[kind]
    selector = prometheus_spec.get(f"{prefix}Selector")
    if not selector:
        nil_uses_helm = prometheus_spec.get(f"{prefix}SelectorNilUsesHelmValues", True)
        selector = {"matchLabels": {"release": release}} if nil_uses_helm else {}
    return dict(selector), prometheus_spec.get(f"{prefix}NamespaceSelector", {})
