"""The observability Application: our PrometheusRules and Grafana dashboards, from the mixin."""
from __future__ import annotations

from constructs import Construct

from colocate.model.cluster import Cluster
from colocate.charts._base import ColocateChart
from colocate.mixin.colocation import ColocationMixin
from colocate.mixin.config import MixinConfig
from colocate.constructs.grafana_dashboard import GrafanaDashboard, GrafanaDashboardProps
from colocate.constructs.prometheus_rule import PrometheusRule, PrometheusRuleProps


class ObservabilityChart(ColocateChart):
    """After kube-prometheus-stack (its CRDs, Grafana) and the exporters it watches."""

    sync_wave = -4

    def __init__(self, scope: Construct, cluster: Cluster):
        super().__init__(scope, "observability", folder="apps/observability")
        self.mixin = ColocationMixin(MixinConfig.from_cluster(cluster))
        PrometheusRule(self, "rules", PrometheusRuleProps(
            name="colocate", namespace=cluster.monitoring_namespace, groups=self.mixin.rule_groups,
            labels=cluster.monitor_labels))
        for board in self.mixin.dashboards:
            GrafanaDashboard(self, f"dashboard-{board.uid}", GrafanaDashboardProps(
                dashboard=board, namespace=cluster.monitoring_namespace))
