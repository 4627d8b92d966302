"""COL200 on rule expressions written like kube-prometheus's (excerpts written for this test): the
names the pinned exporters do expose pass; the true findings stay, each with its reason."""
from __future__ import annotations

import pytest
import yaml

from colocate import checker


def _rule(tmp_path, expr: str):
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": "excerpt", "namespace": "monitoring", "labels": {"release": "kube-prometheus-stack"}},
        "spec": {"groups": [{"name": "g", "rules": [{"alert": "Excerpt", "expr": expr, "for": "15m",
                                                       "labels": {"severity": "warning"},
                                                       "annotations": {"summary": "s", "description": "d", "hint": "h"}}]}]}}))
    return [f for f in checker.check([path]).findings if f.rule == "COL200"]


@pytest.mark.parametrize("expr", [
    # kube-state-metrics 2.10.1 families the catalog used to lack
    'kube_horizontalpodautoscaler_status_desired_replicas{job="kube-state-metrics"}'
    ' != kube_horizontalpodautoscaler_status_current_replicas{job="kube-state-metrics"}',
    'kube_horizontalpodautoscaler_spec_max_replicas{job="kube-state-metrics"} > 0',
    'kube_statefulset_status_replicas_ready{job="kube-state-metrics"} != kube_statefulset_replicas{job="kube-state-metrics"}',
    'kube_statefulset_status_current_revision{job="kube-state-metrics"} > 0',
    'kube_persistentvolume_status_phase{phase=~"Failed|Pending", job="kube-state-metrics"} > 0',
    # node-exporter 1.7.0 default collectors: timex, mdadm, conntrack
    'abs(node_timex_offset_seconds{job="node-exporter"}) > 0.05',
    'min_over_time(node_timex_sync_status{job="node-exporter"}[5m]) == 0 and node_timex_maxerror_seconds{job="node-exporter"} >= 16',
    'node_md_disks_required{job="node-exporter"} - ignoring (state) (node_md_disks{state="active", job="node-exporter"}) > 0',
    '(node_nf_conntrack_entries{job="node-exporter"} / node_nf_conntrack_entries_limit) > 0.75',
])
def test_names_the_pinned_exporters_expose_pass(tmp_path, expr):
    assert _rule(tmp_path, expr) == []


@pytest.mark.parametrize("expr", [
    # Kubernetes v1.28.15 control plane and etcd v3.5.15, scraped from the binaries (catalog_import_scrape.py)
    'sum by (code) (rate(apiserver_request_total{job="apiserver", verb=~"LIST|GET"}[5m])) > 0',
    'histogram_quantile(0.99, sum by (le, resource) (rate(apiserver_request_sli_duration_seconds_bucket{job="apiserver"}[5m]))) > 1',
    'sum by (name, reason) (rate(aggregator_unavailable_apiservice_total{job="apiserver"}[10m])) > 4',
    'sum by (controller, namespace) (rate(prometheus_operator_reconcile_errors_total[5m]))'
    ' / sum by (controller, namespace) (rate(prometheus_operator_reconcile_operations_total[5m])) > 0.1',
    'min by (controller, namespace) (max_over_time(prometheus_operator_ready[5m]) == 0)',
    'sum(rate(apiserver_request_terminations_total{job="apiserver"}[10m])) > 0',
    'histogram_quantile(0.99, sum by (le) (rate(scheduler_scheduling_attempt_duration_seconds_bucket{job="kube-scheduler"}[5m]))) > 1',
    'rate(workqueue_adds_total{job="kube-controller-manager"}[5m]) > 0',
    'etcd_server_has_leader{job="kube-etcd"} == 0',
    # Alertmanager v0.26.0 and Prometheus v2.48.1, scraped the same way
    'max_over_time(alertmanager_config_last_reload_successful{job="kube-prometheus-stack-alertmanager"}[5m]) == 0',
    'rate(alertmanager_notifications_failed_total{integration="webhook"}[5m]) / rate(alertmanager_notifications_total[5m]) > 0.01',
    'max_over_time(prometheus_config_last_reload_successful{job="kube-prometheus-stack-prometheus"}[5m]) == 0',
    'increase(prometheus_rule_evaluation_failures_total[5m]) > 0',
    'prometheus_notifications_queue_length / prometheus_notifications_queue_capacity > 0.95',
    'increase(prometheus_tsdb_compactions_failed_total[3h]) > 0',
    # CoreDNS v1.10.1 and kube-proxy v1.28.15 (read at their tags), Grafana (stored revisions)
    'sum by (rcode) (rate(coredns_dns_responses_total{job="coredns", rcode="SERVFAIL"}[5m])) / sum(rate(coredns_dns_requests_total{job="coredns"}[5m])) > 0.01',
    'histogram_quantile(0.99, sum by (le, server, zone) (rate(coredns_dns_request_duration_seconds_bucket{job="coredns"}[5m]))) > 0.5',
    'sum by (to) (rate(coredns_forward_healthcheck_failures_total{job="coredns"}[5m])) > 0',
    'histogram_quantile(0.99, sum by (le, instance) (rate(kubeproxy_sync_proxy_rules_duration_seconds_bucket{job="kube-proxy"}[5m]))) > 1',
    'sum by (table) (kubeproxy_sync_proxy_rules_iptables_total{job="kube-proxy"}) > 20000',
    'sum by (handler) (rate(grafana_http_request_duration_seconds_count{status_code=~"5.."}[5m])) > 0',
])
def test_families_of_the_components_the_stack_scrapes_pass(tmp_path, expr):
    assert _rule(tmp_path, expr) == []


@pytest.mark.parametrize("expr, words", [
    ('container_memory_swap{job="kubelet", metrics_path="/metrics/cadvisor", container!=""} > 0',
     "never stored: dropped by KPS 55.5.1 default kubelet.serviceMonitor.cAdvisorMetricRelabelings"),
    ('histogram_quantile(0.99, sum by (le) (rate(scheduler_e2e_scheduling_duration_seconds_bucket[5m]))) > 1',
     "was removed in Kubernetes 1.28 at the latest"),
    ('node_systemd_unit_state{job="node-exporter", state="failed"} == 1',
     "its collector is off by default: the systemd collector is registered defaultDisabled"),
    ('histogram_quantile(0.99, sum by (le) (rate(apiserver_request_slo_duration_seconds_bucket{job="apiserver"}[5m]))) > 1',
     "hidden in Kubernetes 1.28"),
    ('histogram_quantile(0.99, sum by (le) (rate(scheduler_binding_duration_seconds_bucket{job="kube-scheduler"}[5m]))) > 1',
     'use scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Bind"}'),
    ('kubelet_certificate_manager_server_ttl_seconds < 86400',
     "registers it only with serverTLSBootstrap: true"),
    ('sum(rate(coredns_dns_request_count_total{job="coredns"}[5m])) > 1000',
     "coredns_dns_requests_total"),
    ('coredns_cache_size{job="coredns"} > 10000', "coredns_cache_entries"),
])
def test_true_findings_stay_and_say_why(tmp_path, expr, words):
    (finding,) = _rule(tmp_path, expr)
    assert words in finding.message, finding.message


def _findings(tmp_path, expr: str, rule: str):
    _rule(tmp_path, expr)
    return [f for f in checker.check([tmp_path / "rule.yaml"]).findings if f.rule == rule]


def test_on_cluster_with_neither_side_carrying_it_is_not_a_mismatch(tmp_path):
    expr = ('kube_pod_container_resource_limits{resource="cpu", job="kube-state-metrics"} * on (namespace, pod, cluster) '
            'group_left () max by (namespace, pod, cluster) (kube_pod_status_phase{phase=~"Pending|Running"} == 1)')
    assert _findings(tmp_path, expr, "COL202") == []


def test_on_a_label_only_one_side_carries_is_reported_as_such(tmp_path):
    expr = 'node_load1{job="node-exporter"} * on (node) group_left () max by (node) (kube_pod_info{job="kube-state-metrics"})'
    (finding,) = _findings(tmp_path, expr, "COL202")
    assert ('no series of the left side carries label "node" but the right side\'s do, so only right series '
            'without "node" can match') in finding.message


def test_image_filter_and_a_join_on_container_count_as_container_filters(tmp_path):
    assert _findings(tmp_path, 'container_memory_rss{job="kubelet", metrics_path="/metrics/cadvisor", image!=""} > 0', "COL201") == []
    throttling = ('sum(increase(container_cpu_cfs_throttled_periods_total{container!=""}[5m])) by (container, pod, namespace) '
                  '/ sum(increase(container_cpu_cfs_periods_total{}[5m])) by (container, pod, namespace) > 0.25')
    assert _findings(tmp_path, throttling, "COL201") == []
