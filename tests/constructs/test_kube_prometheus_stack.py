from __future__ import annotations

import pytest

from colocate.constructs.kube_prometheus_stack import (
    CommunityDashboard, KubePrometheusStack, KubePrometheusStackProps, prometheus_url, rendered_selector)
from colocate.model.names import kps_fullname as fullname
from colocate.model.pools import Taint
from colocate.errors import PropError

MONITORING_TAINT = Taint("monitoring", "true", "NoSchedule")


def props(**overrides) -> KubePrometheusStackProps:
    base = dict(release="kube-prometheus-stack", namespace="monitoring", grafana_admin_secret="grafana-admin",
                storage_class="monitoring-local", storage_size="100Gi", retention="15d",
                monitor_labels={"release": "kube-prometheus-stack"},
                pool_labels={"role": "monitoring", "colocate.io/pool": "monitoring"}, pool_taints=(MONITORING_TAINT,))
    return KubePrometheusStackProps(**{**base, **overrides})


def values(**overrides) -> dict:
    return KubePrometheusStack(props(**overrides)).values()


@pytest.mark.parametrize("release, name", [
    ("kube-prometheus-stack", "kube-prometheus-stack"),
    ("prometheus", "prometheus-kube-prometheus"),            # 26 characters exactly
    ("monitoring-kube-prometheus-stack-prod", "monitoring-kube-prometheus"),
    ("abcdefghi", "abcdefghi-kube-prometheus"),              # truncation leaves a trailing '-'
])
def test_fullname_follows_the_chart_helper_with_26_character_truncation(release, name):
    assert fullname(release) == name


def test_datasource_url_is_the_prometheus_service_of_this_release_and_namespace():
    assert prometheus_url("kube-prometheus-stack", "monitoring") == "http://kube-prometheus-stack-prometheus.monitoring:9090/"
    assert prometheus_url("prometheus", "obs") == "http://prometheus-kube-prometheus-prometheus.obs:9090/"
    assert values()["grafana"]["sidecar"]["datasources"]["url"] == "http://kube-prometheus-stack-prometheus.monitoring:9090/"


def test_grafana_admin_comes_from_the_existing_secret_and_no_password_is_set():
    grafana = values()["grafana"]
    assert grafana["admin"] == {"existingSecret": "grafana-admin", "userKey": "admin-user", "passwordKey": "admin-password"}
    assert "adminPassword" not in grafana


def test_prometheus_stores_on_the_monitoring_class_with_the_configured_size_and_retention():
    spec = values()["prometheus"]["prometheusSpec"]
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "monitoring-local" and claim["resources"]["requests"]["storage"] == "100Gi"
    assert claim["accessModes"] == ["ReadWriteOnce"] and spec["retention"] == "15d"


@pytest.mark.parametrize("size, retention_size", [("100Gi", "80GB"), ("50Gi", "40GB"), ("1Gi", "819MB"),
                                                  ("3Gi", "2457MB")])
def test_size_retention_stays_below_the_claim_in_prometheus_base_2_units(size, retention_size):
    assert values(storage_size=size)["prometheus"]["prometheusSpec"]["retentionSize"] == retention_size


def test_alertmanager_keeps_silences_on_its_own_claim():
    storage = values()["alertmanager"]["alertmanagerSpec"]["storage"]
    assert storage["volumeClaimTemplate"]["spec"] == {
        "storageClassName": "monitoring-local", "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}}


def test_every_monitoring_service_has_requests_and_a_memory_limit():
    v = values()
    placed = {"prometheus": v["prometheus"]["prometheusSpec"], "alertmanager": v["alertmanager"]["alertmanagerSpec"],
              "grafana": v["grafana"], "kube-state-metrics": v["kube-state-metrics"],
              "prometheusOperator": v["prometheusOperator"]}
    for component, at in placed.items():
        resources = at["resources"]
        assert set(resources["requests"]) == {"cpu", "memory"}, component
        assert set(resources["limits"]) == {"memory"}, component


def test_node_exporter_uses_the_host_network_and_tolerates_every_taint():
    node_exporter = values()["prometheus-node-exporter"]
    assert node_exporter["hostNetwork"] is True and node_exporter["tolerations"] == [{"operator": "Exists"}]


def test_prometheus_alertmanager_grafana_state_metrics_and_operator_are_pinned_to_the_monitoring_pool():
    v = values()
    pinned = [v["prometheus"]["prometheusSpec"], v["alertmanager"]["alertmanagerSpec"], v["grafana"],
              v["kube-state-metrics"], v["prometheusOperator"], v["prometheusOperator"]["admissionWebhooks"]["patch"]]
    for component in pinned:
        assert component["nodeSelector"] == {"role": "monitoring", "colocate.io/pool": "monitoring"}
        assert component["tolerations"] == [MONITORING_TAINT.toleration()]


@pytest.mark.parametrize("kind", ["ServiceMonitor", "PodMonitor", "PrometheusRule"])
def test_selectors_are_the_monitor_labels_in_every_namespace(kind):
    selector, namespaces = rendered_selector(values()["prometheus"]["prometheusSpec"], kind, "kube-prometheus-stack")
    assert selector == {"matchLabels": {"release": "kube-prometheus-stack"}} and namespaces == {}


def test_chart_default_selector_is_the_release_label_unless_turned_off():
    assert rendered_selector({}, "PrometheusRule", "prom") == ({"matchLabels": {"release": "prom"}}, {})
    assert rendered_selector({"ruleSelectorNilUsesHelmValues": False}, "PrometheusRule", "prom")[0] == {}


def test_dashboard_sidecar_watches_the_grafana_dashboard_label_in_all_namespaces():
    assert values()["grafana"]["sidecar"]["dashboards"] == {
        "enabled": True, "label": "grafana_dashboard", "labelValue": "1", "searchNamespace": "ALL"}


def test_kube_state_metrics_exports_the_training_job_and_app_name_labels_of_pods_and_the_pool_of_nodes():
    assert values()["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "pods=[training.kubeflow.org/job-name,training.kubeflow.org/replica-type,app.kubernetes.io/name]",
        "nodes=[colocate.io/pool]"]


def test_community_dashboards_are_pinned_revisions_with_the_prometheus_datasource():
    v = values(community_dashboards=(CommunityDashboard("node-exporter-full", 1860, 37),))
    assert v["grafana"]["dashboards"]["community"]["node-exporter-full"] == {
        "gnetId": 1860, "revision": 37, "datasource": "Prometheus"}
    provider = v["grafana"]["dashboardProviders"]["dashboardproviders.yaml"]["providers"][0]
    assert provider["name"] == "community" and provider["options"]["path"].endswith("/community")


def test_chart_images_keep_their_upstream_names_for_the_nodes_mirror():
    # global.imageRegistry would swap the registry host only: no Harbor proxy-cache project
    # serves <harbor>/prometheus/prometheus.
    assert "global" not in values()


def test_alertmanager_keeps_the_chart_config_unless_given_one_and_mounts_the_secrets():
    assert values()["alertmanager"] == {"alertmanagerSpec": values()["alertmanager"]["alertmanagerSpec"]}
    config = {"route": {"receiver": "x"}, "receivers": [{"name": "x"}]}
    alertmanager = values(alertmanager_config=config, alertmanager_secrets=("receivers",))["alertmanager"]
    assert alertmanager["config"] == config and alertmanager["alertmanagerSpec"]["secrets"] == ["receivers"]


@pytest.mark.parametrize("overrides, prop", [
    ({"monitor_labels": {}}, "monitor_labels"),
    ({"pool_labels": {}}, "pool_labels"),
    ({"storage_size": "lots"}, "storage_size"),
    ({"alertmanager_storage_size": "0"}, "alertmanager_storage_size"),
    ({"resources": {"thanos": {}}}, "resources"),
    ({"retention": "15 days"}, "retention"),
    ({"release": "Prom"}, "release"),
    ({"community_dashboards": (CommunityDashboard("x", 1860, 0),)}, "community_dashboards[0].revision"),
    ({"ksm_custom_resource_state": {"spec": {"resources": []}}}, "ksm_rbac_rules"),
    ({"alertmanager_secrets": ("receivers", "Receivers")}, "alertmanager_secrets[1]"),
])
def test_bad_props_are_refused_naming_the_prop(overrides, prop):
    with pytest.raises(PropError) as err:
        KubePrometheusStack(props(**overrides))
    assert err.value.prop == prop


def test_every_component_runs_above_the_workload_tiers():
    values = KubePrometheusStack(props()).values()
    cluster_critical = [values["prometheus"]["prometheusSpec"], values["alertmanager"]["alertmanagerSpec"],
                        values["prometheusOperator"], values["prometheusOperator"]["admissionWebhooks"]["patch"],
                        values["kube-state-metrics"], values["grafana"]]
    assert [c["priorityClassName"] for c in cluster_critical] == ["system-cluster-critical"] * 6
    assert values["prometheus-node-exporter"]["priorityClassName"] == "system-node-critical"


def test_custom_resource_state_is_off_unless_given():
    ksm = values()["kube-state-metrics"]
    assert "customResourceState" not in ksm and "rbac" not in ksm
