"""The online latency guard: P99 per service against its own baseline and objective, and the
training that shares the service's nodes, as recording rules and alerts.

Operators judge co-location by P99 staying flat (reference: 2.1 ms -> 2.3 ms) and acted when
P99 jitter passed 10% while batch work ran beside the service. So the regression alert needs
both: P99 above the baseline by the service's tolerated share, and Running training pods on a
node where one of the service's pods runs (kube-state-metrics pod-to-node info).
"""
from __future__ import annotations

from typing import Any

from colocate.mixin.config import Selectors, ServiceSlo, eq, ne, sel
from colocate.model.names import CRITICAL, WARNING

_P99 = 0.99
P99_RECORD = "service:latency_seconds:p99_rate5m"
BASELINE_RECORD = "service:latency_seconds:p99_baseline"
TRAINING_PODS_RECORD = "service:node_training_pods:count"
TRAINING_SHARE_RECORD = "service:node_offline_cpu_requests:ratio"


class LatencyGuard(Selectors):
    def p99(self, s: ServiceSlo, window: str = "5m", offset: str = "") -> str:
        shift = f" offset {offset}" if offset else ""
        return f"histogram_quantile({_P99}, sum by (le) (rate({s.buckets}[{window}]{shift})))"

    def baseline(self, s: ServiceSlo) -> str:
        """The mean of the hourly P99 at this time of day on each of the last ``baseline_days`` days
        that has data (each day gets its own ``day`` label, so a missing day drops out of the mean
        instead of emptying it)."""
        days = " or ".join(f'label_replace({self.p99(s, "1h", f"{d}d")}, "day", "{d}", "", "")'
                           for d in range(1, self.config.baseline_days + 1))
        return f"avg ({days})"

    def _service_nodes(self, s: ServiceSlo) -> str:
        """1 per node that runs a pod of the service."""
        c, ksm = self.config, self.ksm
        pods = sel("kube_pod_labels", ksm, eq("namespace", s.namespace), eq(c.service_pod_label, s.service))
        info = sel("kube_pod_info", ksm, eq("namespace", s.namespace), ne("node"))
        return f"max by (node) ({info} * on (namespace, pod) group_left () max by (namespace, pod) ({pods}))"

    def training_running(self) -> str:
        """1 per Running pod in the training namespace."""
        running = sel("kube_pod_status_phase", self.ksm, self.ns, eq("phase", "Running"))
        return f"(max by (namespace, pod) ({running}) == 1)"

    def training_pods_near(self, s: ServiceSlo) -> str:
        """Running training pods on the nodes of the service's pods."""
        info = sel("kube_pod_info", self.ksm, self.ns, ne("node"))
        per_node = (f"count by (node) (max by (namespace, pod, node) ({info})"
                    f" * on (namespace, pod) group_left () {self.training_running()})")
        return f"sum ({per_node} * on (node) group_left () {self._service_nodes(s)})"

    def training_share_near(self, s: ServiceSlo) -> str:
        """Offline CPU requests on the service's nodes over those nodes' allocatable CPU."""
        requests = sel("kube_pod_container_resource_requests", self.ksm, self.ns, eq("resource", "cpu"), ne("node"))
        offline = f"sum by (node) ({requests} * on (namespace, pod) group_left () {self.active_pods})"
        nodes = self._service_nodes(s)
        return (f"sum ({offline} * on (node) group_left () {nodes})"
                f" / sum ({self.allocatable('cpu')} * on (node) group_left () {nodes})")

    @property
    def training_gpus(self) -> str:
        """GPUs held by Running training pods."""
        gpus = sel("kube_pod_container_resource_requests", self.ksm, self.ns, eq("resource", "nvidia_com_gpu"))
        return f"sum ({gpus} * on (namespace, pod) group_left () {self.training_running()})"

    @property
    def latency_recording_rules(self) -> list[dict[str, Any]]:
        out = []
        for s in self.config.online_slos:
            labels = {"service": s.service, "namespace": s.namespace}
            out += [{"record": P99_RECORD, "expr": self.p99(s), "labels": labels},
                    {"record": BASELINE_RECORD, "expr": self.baseline(s), "labels": labels},
                    {"record": TRAINING_PODS_RECORD, "expr": self.training_pods_near(s), "labels": labels},
                    {"record": TRAINING_SHARE_RECORD, "expr": self.training_share_near(s), "labels": labels}]
        return out

    @property
    def latency_alerts(self) -> list[dict[str, Any]]:
        c, out = self.config, []
        for s in c.online_slos:
            share = f"{s.slo.regression:.0%}"
            labels = {"service": s.service, "namespace": s.namespace}
            out.append({
                "alert": "ColocateOnlineP99Regression",
                "expr": f"({self.p99(s)} > {1 + s.slo.regression:g} * {self.baseline(s)})"
                        f" and on () ({self.training_pods_near(s)} > 0)",
                "for": c.latency_for, "labels": {"severity": WARNING, **labels},
                "annotations": {
                    "summary": f"P99 of {s.service} more than {share} above its baseline while training shares its nodes.",
                    "description": f"P99 of {s.namespace}/{s.service} is {{{{ $value | humanizeDuration }}}}, more than "
                                   f"{share} above the mean of the same hour over the last {c.baseline_days} days, "
                                   f"for {c.latency_for}, with training pods on its nodes.",
                    "hint": "Follow docs/runbook-latency.md: check CPU steal and pressure of the service's nodes on "
                            "the Colocation dashboard, then pause the batch load with `colocate offline pause`."}})
            out.append({
                "alert": "ColocateOnlineP99ObjectiveBreached",
                "expr": f"{self.p99(s)} > {s.slo.objective_seconds:g}",
                "for": c.latency_for, "labels": {"severity": CRITICAL, **labels},
                "annotations": {
                    "summary": f"P99 of {s.service} above its {s.slo.objective_seconds * 1000:g} ms objective.",
                    "description": f"P99 of {s.namespace}/{s.service} is {{{{ $value | humanizeDuration }}}} for "
                                   f"{c.latency_for}, above the objective of {s.slo.objective_seconds:g}s.",
                    "hint": "Follow docs/runbook-latency.md; if training shares the service's nodes, pause it with "
                            "`colocate offline pause`, else scale the service."}})
        return out
