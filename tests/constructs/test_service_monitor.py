from __future__ import annotations

import cdk8s
import pytest

from colocate.constructs.service_monitor import ServiceMonitor, ServiceMonitorProps
from colocate.errors import PropError


def _props(**overrides) -> ServiceMonitorProps:
    base = dict(name="training-operator", namespace="kubeflow", service_labels={"app": "training-operator"},
                port="monitoring-port", monitor_labels={"release": "kube-prometheus-stack"})
    return ServiceMonitorProps(**{**base, **overrides})


def test_a_service_monitor_scrapes_one_named_port_in_its_own_namespace():
    chart = cdk8s.Testing.chart()
    ServiceMonitor(chart, "sm", _props())
    [obj] = cdk8s.Testing.synth(chart)
    assert obj["metadata"]["labels"] == {"release": "kube-prometheus-stack"}
    assert obj["metadata"]["annotations"] == {"argocd.argoproj.io/sync-options": "SkipDryRunOnMissingResource=true"}
    assert obj["spec"] == {"selector": {"matchLabels": {"app": "training-operator"}},
                           "namespaceSelector": {"matchNames": ["kubeflow"]},
                           "endpoints": [{"port": "monitoring-port", "path": "/metrics", "interval": "30s"}]}


def test_honor_labels_keeps_the_series_own_namespace_label():
    chart = cdk8s.Testing.chart()
    ServiceMonitor(chart, "sm", _props(honor_labels=True))
    [obj] = cdk8s.Testing.synth(chart)
    assert obj["spec"]["endpoints"] == [{"port": "monitoring-port", "path": "/metrics", "interval": "30s",
                                         "honorLabels": True}]


@pytest.mark.parametrize("prop, message", [
    ("service_labels", "it would scrape every Service in the namespace"),
    ("monitor_labels", "Prometheus would not select the ServiceMonitor"),
])
def test_empty_selectors_are_refused(prop, message):
    with pytest.raises(PropError, match=f"prop '{prop}': is empty: {message}"):
        ServiceMonitor(cdk8s.Testing.chart(), "sm", _props(**{prop: {}}))


@pytest.mark.parametrize("metrics", [{"latency": "histo"}, {"a,b": "gauge"}, {"": "counter"}])
def test_declared_metrics_need_a_name_and_a_type(metrics):
    with pytest.raises(PropError) as err:
        ServiceMonitor(cdk8s.Testing.chart(), "sm", _props(metrics=metrics))
    assert err.value.prop.startswith("metrics[")
