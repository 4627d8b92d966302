"""Verdicts on the COL200/COL202 findings the rendered kube-prometheus-stack 55.5.1 objects had
(apps/kube-prometheus-stack/): each row names the object, the rule, the metric or label, how it
was resolved (``values: <key>`` = a true fault switched off or fixed through our chart values;
``catalog: <source>`` = a false alarm, the pinned exporter does expose it; ``rule: ...`` = a
false alarm of the check itself) and why, and asserts the finding is gone from a check of the
committed tree (suppressed findings included). One check per module."""
from __future__ import annotations

from pathlib import Path

import pytest

from colocate import app, checker

KPS = "apps/kube-prometheus-stack/"

VERDICTS = [
    # (object file stem under apps/kube-prometheus-stack/, rule, metric or label, verdict, reason)
    ("configmap.monitoring.kube-prometheus-stack-nodes-darwin", "COL200", "node_memory_wired_bytes",
     "values: nodeExporter.operatingSystems.darwin.enabled", "no macOS Kubernetes nodes; the dashboard's own switch"),
    ("configmap.monitoring.kube-prometheus-stack-nodes-darwin", "COL200", "node_memory_total_bytes",
     "values: nodeExporter.operatingSystems.darwin.enabled", "same dashboard"),
    ("prometheusrule.monitoring.kube-prometheus-stack-etcd", "COL200", "grpc_server_handling_seconds_bucket",
     "values: defaultRules.disabled.etcdGRPCRequestsSlow", "etcd --metrics=basic (default) has no handling histogram"),
    ("prometheusrule.monitoring.kube-prometheus-stack-kubernetes-system-kubelet", "COL200",
     "kubelet_certificate_manager_server_ttl_seconds",
     "values: defaultRules.disabled.KubeletServerCertificateExpiration", "registered only with serverTLSBootstrap"),
    ("prometheusrule.monitoring.kube-prometheus-stack-node-exporter", "COL200", "node_systemd_unit_state",
     "values: defaultRules.disabled.NodeSystemdServiceFailed", "systemd collector is off by default"),
    ("prometheusrule.monitoring.kube-prometheus-stack-kubernetes-resources", "COL202", "job",
     "values: defaultRules.disabled.KubeCPUOvercommit", "the record it reads has no job label: never fires"),
    ("prometheusrule.monitoring.kube-prometheus-stack-kube-scheduler.rules", "COL200",
     "scheduler_e2e_scheduling_duration_seconds_bucket", "values: defaultRules.rules.kubeSchedulerRecording",
     "removed in kube-scheduler 1.28; the group's other records are read by nothing"),
    ("prometheusrule.monitoring.kube-prometheus-stack-kube-scheduler.rules", "COL200",
     "scheduler_binding_duration_seconds_bucket", "values: defaultRules.rules.kubeSchedulerRecording", "same"),
    ("prometheusrule.monitoring.kube-prometheus-stack-kube-state-metrics", "COL200", "kube_state_metrics_list_total",
     "values: kube-state-metrics.selfMonitor.enabled", "scrape KSM's telemetry port so its alerts see list errors"),
    ("prometheusrule.monitoring.kube-prometheus-stack-kube-state-metrics", "COL200", "kube_state_metrics_watch_total",
     "values: kube-state-metrics.selfMonitor.enabled", "same"),
    ("prometheusrule.monitoring.kube-prometheus-stack-kube-state-metrics", "COL200", "kube_state_metrics_total_shards",
     "values: kube-state-metrics.selfMonitor.enabled", "same"),
    ("prometheusrule.monitoring.kube-prometheus-stack-kube-state-metrics", "COL200", "kube_state_metrics_shard_ordinal",
     "values: kube-state-metrics.selfMonitor.enabled", "same"),
    ("configmap.monitoring.kube-prometheus-stack-cluster-total", "COL200", "node_netstat_Tcp_RetransSegs",
     "catalog: prometheus/node_exporter collector/netstat_linux.go@v1.7.0", "in the default netstat fields"),
    ("configmap.monitoring.kube-prometheus-stack-cluster-total", "COL200", "node_netstat_Tcp_OutSegs",
     "catalog: prometheus/node_exporter collector/netstat_linux.go@v1.7.0", "in the default netstat fields"),
    ("configmap.monitoring.kube-prometheus-stack-cluster-total", "COL200", "node_netstat_TcpExt_TCPSynRetrans",
     "catalog: prometheus/node_exporter collector/netstat_linux.go@v1.7.0", "in the default netstat fields"),
    ("prometheusrule.monitoring.kube-prometheus-stack-node-exporter", "COL200", "node_bonding_slaves",
     "catalog: prometheus/node_exporter collector/bonding_linux.go@v1.7.0", "bonding collector defaultEnabled"),
    ("prometheusrule.monitoring.kube-prometheus-stack-node-exporter", "COL200", "node_bonding_active",
     "catalog: prometheus/node_exporter collector/bonding_linux.go@v1.7.0", "bonding collector defaultEnabled"),
    ("configmap.monitoring.kube-prometheus-stack-etcd", "COL200", "etcd_network_peer_round_trip_time_seconds_bucket",
     "catalog: go.etcd.io/etcd/server/v3@v3.5.15 etcdserver/api/rafthttp/metrics.go",
     "peer metrics: a single-member scrape has no series"),
    ("configmap.monitoring.kube-prometheus-stack-etcd", "COL200", "etcd_network_peer_received_bytes_total",
     "catalog: go.etcd.io/etcd/server/v3@v3.5.15 etcdserver/api/rafthttp/metrics.go", "same"),
    ("configmap.monitoring.kube-prometheus-stack-etcd", "COL200", "etcd_network_peer_sent_bytes_total",
     "catalog: go.etcd.io/etcd/server/v3@v3.5.15 etcdserver/api/rafthttp/metrics.go", "same"),
    ("prometheusrule.monitoring.kube-prometheus-stack-etcd", "COL200", "etcd_network_peer_sent_failures_total",
     "catalog: go.etcd.io/etcd/server/v3@v3.5.15 etcdserver/api/rafthttp/metrics.go", "same"),
    ("prometheusrule.monitoring.kube-prometheus-stack-etcd", "COL200", "etcd_network_peer_round_trip_time_seconds_bucket",
     "catalog: go.etcd.io/etcd/server/v3@v3.5.15 etcdserver/api/rafthttp/metrics.go", "same"),
    ("configmap.monitoring.kube-prometheus-stack-grafana-overview", "COL200", "grafana_build_info",
     "catalog: grafana/grafana pkg/infra/metrics/metrics.go (stored revision 002d6e95)", "build info gauge"),
    ("configmap.monitoring.kube-prometheus-stack-kubelet", "COL200", "storage_operation_duration_seconds_count",
     "catalog: k8s.io/kubernetes@v1.28.15 pkg/volume/util/metrics.go", "kubelet legacy registry"),
    ("configmap.monitoring.kube-prometheus-stack-kubelet", "COL200", "storage_operation_duration_seconds_bucket",
     "catalog: k8s.io/kubernetes@v1.28.15 pkg/volume/util/metrics.go", "kubelet legacy registry"),
    ("configmap.monitoring.kube-prometheus-stack-kubelet", "COL200", "volume_manager_total_volumes",
     "catalog: k8s.io/kubernetes@v1.28.15 pkg/kubelet/volumemanager/metrics/metrics.go", "kubelet collector"),
    ("configmap.monitoring.kube-prometheus-stack-kubelet", "COL202", "metrics_path",
     "catalog: k8s.io/component-base@v0.28.15 metrics/prometheus/restclient/metrics.go",
     "the kubelet serves rest_client_* (cmd/kubelet/kubelet.go imports clientgo): its job gives metrics_path"),
    ("configmap.monitoring.kube-prometheus-stack-kubelet", "COL200", "kubelet_running_pod_count",
     "rule: removed name in an `or` whose other side reads its replacement", "sum(kubelet_running_pods) OR ..."),
    ("configmap.monitoring.kube-prometheus-stack-kubelet", "COL200", "kubelet_running_container_count",
     "rule: removed name in an `or` whose other side reads its replacement", "same"),
    ("configmap.monitoring.kube-prometheus-stack-k8s-coredns", "COL200", "coredns_dns_request_count_total",
     "rule: removed name in an `or` whose other side reads its replacement", "... or coredns_dns_requests_total"),
    ("configmap.monitoring.kube-prometheus-stack-k8s-coredns", "COL200", "coredns_cache_size",
     "rule: removed name in an `or` whose other side reads its replacement", "... or coredns_cache_entries"),
    ("configmap.monitoring.kube-prometheus-stack-k8s-coredns", "COL200", "coredns_dns_request_type_count_total",
     "rule: removed name in an `or` whose other side reads its replacement", "same"),
    ("configmap.monitoring.kube-prometheus-stack-k8s-coredns", "COL200", "coredns_dns_request_do_count_total",
     "rule: removed name in an `or` whose other side reads its replacement", "same"),
    ("configmap.monitoring.kube-prometheus-stack-k8s-coredns", "COL200", "coredns_dns_response_rcode_count_total",
     "rule: removed name in an `or` whose other side reads its replacement", "same"),
    ("prometheusrule.monitoring.kube-prometheus-stack-prometheus", "COL200", "prometheus_remote_storage_failed_samples_total",
     "rule: removed name in an `or` whose other side reads its replacement", "... or prometheus_remote_storage_samples_failed_total"),
    ("prometheusrule.monitoring.kube-prometheus-stack-prometheus", "COL200",
     "prometheus_remote_storage_succeeded_samples_total",
     "rule: removed name in an `or` whose other side reads its replacement", "same"),
]


@pytest.fixture(scope="module")
def findings() -> list:
    """COL200/COL202 findings on the committed rendered objects, the suppressed ones included: a
    resolved finding must be gone, not silenced (tests/test_upstream_verdicts.py lists those)."""
    result = checker.check([app.DIST])
    every = result.findings + [f for f, _ in result.suppressed]
    return [f for f in every if f.rule in ("COL200", "COL202") and KPS in str(f.file).replace("\\", "/")]


@pytest.mark.parametrize("obj, rule, what, verdict, reason", VERDICTS,
                         ids=[f"{r}-{o.rsplit('-', 1)[-1]}-{w}" for o, r, w, _, _ in VERDICTS])
def test_resolved_finding_is_gone(findings, obj, rule, what, verdict, reason):
    assert verdict.split(":", 1)[0] in ("values", "catalog", "rule") and reason
    hits = [f.message for f in findings if f.rule == rule and Path(str(f.file)).stem == obj
            and (f'"{what}"' in f.message if rule == "COL202" else f"{what} " in f.message)]
    assert not hits, hits


def test_the_check_still_sees_the_accepted_findings(findings):
    """The filter above reads real findings: an accepted one (a dead kubelet panel) is there."""
    assert any(f.rule == "COL200" and "kubelet_node_config_error " in f.message for f in findings)
