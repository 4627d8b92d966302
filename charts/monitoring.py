"""Monitoring: kube-prometheus-stack and the DCGM exporter, rendered from their vendored charts
into folders of their own (charts/upstream.py), plus ``apps/monitoring`` with what we add to them
(the generated DCGM counters CSV).

Re-modelling the charts would copy thousands of lines that upstream maintains; their values are
generated here, so every cluster fact (pools, taints, release label, storage, registry mirror)
has one source.
"""
from __future__ import annotations

from typing import Sequence

from constructs import Construct

from colocate.model.cluster import Cluster
from colocate.config import Config
from colocate.charts._base import ColocateChart
from colocate.charts.upstream import Rendered
from colocate.constructs import dcgm_exporter as dcgm, kube_prometheus_stack as kps
from colocate.synth.vendor_render import HelmSource
from colocate.mixin import tfjob_state
from colocate.mixin.colocation import ColocationMixin
from colocate.mixin.config import MixinConfig
from colocate.mixin.routing import ReceiverSecret
from colocate.constructs.node_pool import NodePool
from colocate.model.names import IGNORE_ANNOTATION, KPS_CHART, PROTECTED_ANNOTATIONS, SKIP_DRY_RUN, SYNC_OPTIONS

KPS_SYNC_WAVE = -8
DCGM_SYNC_WAVE = -6


#: Default alerts of the chart that can never fire on this cluster, by the fact that kills them
#: (each read at the pinned version; the COL200/COL202 finding that found it is in
#: tests/test_upstream_promql_verdicts.py). Switched off with ``defaultRules.disabled``.
DEAD_DEFAULT_RULES: dict[str, str] = {
    # etcd serves grpc_server_handling_seconds only with --metrics=extensive; the default is
    # "basic" (go.etcd.io/etcd/server/v3@v3.5.15 embed/config.go NewConfig, embed/etcd.go
    # serveMetrics) and kubeadm passes no --metrics.
    "etcdGRPCRequestsSlow": "grpc_server_handling_seconds_bucket: etcd --metrics=basic (default)",
    # kubelet_certificate_manager_server_ttl_seconds is registered only with serverTLSBootstrap
    # (catalog: off_by_default), which kubeadm and our KubeletConfiguration leave false.
    "KubeletServerCertificateExpiration": "kubelet_certificate_manager_server_ttl_seconds: serverTLSBootstrap false",
    # The systemd collector is defaultDisabled in node-exporter 1.7.0 and the chart does not
    # enable it (catalog: off_by_default).
    "NodeSystemdServiceFailed": "node_systemd_unit_state: systemd collector off",
    # It reads namespace_cpu:kube_pod_container_resource_requests:sum{job="kube-state-metrics"},
    # but that record is a sum by (namespace, cluster) (k8s.rules.container_resource.yaml at
    # the tag): no job label, so the matcher selects nothing and the alert never fires. (Its
    # memory twin, KubeMemoryOvercommit, has no job matcher and works.)
    "KubeCPUOvercommit": "namespace_cpu:kube_pod_container_resource_requests:sum has no job label",
}
#: Rule groups of the chart whose records are dead here (``defaultRules.rules.<group>: false``).
DEAD_RULE_GROUPS: dict[str, str] = {
    # Six of its nine records read scheduler_e2e_scheduling_duration_seconds and
    # scheduler_binding_duration_seconds, gone from kube-scheduler 1.28 (catalog `removed`); the
    # other three (scheduler_scheduling_algorithm_duration_seconds quantiles) are read by no
    # dashboard or rule we ship.
    "kubeSchedulerRecording": "scheduler_e2e_scheduling_duration_seconds, scheduler_binding_duration_seconds removed in 1.28",
}


#: Findings of COL200/COL202 on the chart's own dashboards and rules that no value of chart 55.5.1
#: can fix and that leave the object useful: each accepted, by its object, with the reason
#: (a ``colocate.io/ignore`` annotation added after rendering; tests/test_upstream_verdicts.py
#: holds the same list as the record of the verdicts).
_URL_LEGEND = ("COL202: client-go's rest_client metrics carry host, not url, so the panel draws one series per verb "
               "with an empty url in its legend, and chart 55.5.1 cannot switch this dashboard off alone")
ACCEPTED_FINDINGS: dict[str, str] = {
    "ConfigMap/kube-prometheus-stack-controller-manager": _URL_LEGEND,
    "ConfigMap/kube-prometheus-stack-proxy": _URL_LEGEND,
    "ConfigMap/kube-prometheus-stack-scheduler": _URL_LEGEND + "; COL200: the Scheduling Rate and latency queries A, B "
        "and D read scheduler_e2e_*, binding and volume-scheduling metrics gone by kube-scheduler 1.28, query C works "
        "and the scheduler is scraped",
    "ConfigMap/kube-prometheus-stack-kubelet": _URL_LEGEND + "; COL200: two dead panels of a live dashboard, "
        "storage_operation_errors_total and kubelet_node_config_error (Dynamic Kubelet Config) are gone by 1.28",
    "ConfigMap/kube-prometheus-stack-k8s-coredns": "COL202: the Cache (hitrate) panel groups coredns_cache_misses_total "
        "by type, which it does not carry, so the misses line has no type in its legend",
    "ConfigMap/kube-prometheus-stack-k8s-resources-namespace": "COL200: the chart's own cAdvisor relabeling drops "
        "container_memory_swap, so one column of the Memory Quota table stays empty",
    "ConfigMap/kube-prometheus-stack-k8s-resources-pod": "COL200: the chart's own cAdvisor relabeling drops "
        "container_memory_swap, so one column of the Memory Quota table stays empty",
    "PrometheusRule/kube-prometheus-stack-k8s.rules.container-memory-swap": "COL200: the chart's own cAdvisor "
        "relabeling drops container_memory_swap, and switching the group off would move the finding to the node "
        "dashboard that reads this record",
    "ConfigMap/kube-prometheus-stack-grafana-overview": "COL200: grafana_alerting_result_total counts legacy alerting, "
        "off by default in Grafana 10, so the Firing Alerts panel shows nothing",
    "PrometheusRule/kube-prometheus-stack-node.rules": "COL202: node-exporter series carry no node label, so "
        "node:node_cpu_utilization:ratio_rate5m groups by cluster only (a relabeling that adds node is a follow-up)",
}


def gpu_pools(pools: dict[str, NodePool]) -> list[dcgm.GpuPool]:
    """Every pool with GPUs, with the taints the exporter has to tolerate."""
    return [dcgm.GpuPool(p.name, tuple(p.props.taints)) for p in pools.values() if p.props.gpus > 0]


def stack(cluster: Cluster, config: Config, pools: dict[str, NodePool]) -> kps.KubePrometheusStack:
    """kube-prometheus-stack for this cluster: pinned to the monitoring pool, selecting our monitors."""
    m = config.monitoring
    monitoring = pools[cluster.monitoring_pool]
    s = m.alertmanager_secret
    receivers = ReceiverSecret(s.name, s.paging_url_key, s.chat_url_key, s.chat_token_key, s.heartbeat_url_key)
    mixin_config = MixinConfig.from_cluster(cluster)
    return kps.KubePrometheusStack(kps.KubePrometheusStackProps(
        release=cluster.prometheus_release, namespace=cluster.monitoring_namespace,
        grafana_admin_secret=m.grafana_admin_secret, storage_class=m.storage_class,
        storage_size=m.storage_size, retention=m.retention, monitor_labels=cluster.monitor_labels,
        pool_labels=monitoring.labels, pool_taints=tuple(monitoring.props.taints),
        # No community dashboards: Grafana downloads them from grafana.com, which this
        # offline cluster cannot reach (docs/monitoring.md, "Community dashboards").
        # TFJob conditions for the TFJob-failed alert and the job-state panel.
        ksm_custom_resource_state=tfjob_state.ksm_config(), ksm_rbac_rules=tfjob_state.ksm_rbac_rules(),
        # It fires on training pods Pending for 15 minutes (preemption makes that normal);
        # the mixin's ColocatePodNotReady is the same alert minus the training namespace.
        # Its DaemonSet alerts fire on the pre-pull DaemonSet whenever training fills a node;
        # the mixin's ColocateDaemonSet* are the same alerts minus its namespace.
        # And the ones that can never fire here (DEAD_DEFAULT_RULES).
        disabled_default_rules=("KubePodNotReady", *(name for name, _ in mixin_config.daemonset_alerts),
                                *DEAD_DEFAULT_RULES),
        disabled_rule_groups=tuple(DEAD_RULE_GROUPS),
        # Routed by the severities the mixin's alerts carry (colocate/mixin/routing.py).
        alertmanager_config=ColocationMixin(mixin_config).alertmanager_config(receivers),
        alertmanager_secrets=(s.name,),
    ))


class MonitoringChart(ColocateChart):
    """``apps/monitoring``: the DCGM counters ConfigMap. The rendered charts are its ``rendered``
    rows; this folder syncs with kube-prometheus-stack, before the exporter."""

    sync_wave = KPS_SYNC_WAVE

    def __init__(self, scope: Construct, cluster: Cluster, config: Config, pools: dict[str, NodePool],
                 dcgm_used_fields: Sequence[str]):
        super().__init__(scope, "monitoring", folder="apps/monitoring")
        self.cluster = cluster
        self.stack = stack(cluster, config, pools)
        self.upstream_images.update(kps.CHART_IMAGES)
        self.dcgm = dcgm.DcgmExporter(self, "dcgm-exporter", dcgm.DcgmExporterProps(
            namespace=cluster.monitoring_namespace, gpu_pools=gpu_pools(pools), used_fields=tuple(dcgm_used_fields),
            monitor_labels=cluster.monitor_labels, image=self.mirrored(config, dcgm.IMAGE),
        ))

    def rendered(self, config: Config) -> list[Rendered]:
        """kube-prometheus-stack and the DCGM exporter, rendered from vendor/ with the values
        generated here."""
        ns = self.cluster.monitoring_namespace
        release, exporter = self.cluster.prometheus_release, self.dcgm.props.release
        return [
            Rendered(release, release, HelmSource(KPS_CHART, release, ns, self.stack.values(),
                                                 annotate={"CustomResourceDefinition": PROTECTED_ANNOTATIONS,
                                                           **{key: {IGNORE_ANNOTATION: why}
                                                              for key, why in ACCEPTED_FINDINGS.items()}}),
                     version=self.stack.props.chart_version, wave=KPS_SYNC_WAVE, destination_namespace=ns,
                     # The prometheuses CRD is 345,787 bytes of JSON, over the 262,144-byte last-applied
                     # annotation client-side apply writes (docs/gitops.md).
                     sync_options=("ServerSideApply=true", "ApplyOutOfSyncOnly=true", "PruneLast=true"),
                     # Deleting the Application must not delete the CRDs, and with them every
                     # ServiceMonitor and PrometheusRule in the cluster.
                     cascade_delete=False),
            Rendered(exporter, exporter, HelmSource(dcgm.CHART, exporter, ns, self.dcgm.values(),
                                                 # Its ServiceMonitor's CRD comes from kube-prometheus-stack, another
                                                 # Application; gitops-engine reads this option only on the object
                                                 # (pkg/sync/sync_context.go), and chart 3.3.0 offers no annotations value.
                                                 annotate={"ServiceMonitor": {SYNC_OPTIONS: SKIP_DRY_RUN}}),
                     version=dcgm.CHART_VERSION, wave=DCGM_SYNC_WAVE, destination_namespace=ns,
                     sync_options=("PruneLast=true",)),
        ]
