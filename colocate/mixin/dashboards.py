"""The Colocation dashboard (grafana-foundation-sdk), and the grid layout its panels use."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Iterable

from grafana_foundation_sdk.builders import common as gc
from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import prometheus as gp
from grafana_foundation_sdk.builders import statetimeline, timeseries
from grafana_foundation_sdk.models import common as mc
from grafana_foundation_sdk.models import dashboard as md

from colocate.mixin.config import eq, re_, sel
from colocate.mixin import slo
from colocate.mixin.slo import LatencyGuard
from colocate.model.names import GRAFANA_SCHEMA_VERSION
from colocate.mixin import records


@dataclass(frozen=True)
class Query:
    """One panel target."""

    expr: str
    legend: str


def dashboards(guard: LatencyGuard) -> list[md.Dashboard]:
    return [_colocation_dashboard(guard)]


def _colocation_dashboard(guard: LatencyGuard) -> md.Dashboard:
    c, ksm = guard.config, guard.ksm
    node = re_("node", "$node")
    layout = _Layout()
    dashboard = (gd.Dashboard(c.dashboard_title).uid(dashboard_uid(c.dashboard_key)).tags(["colocate"])
                 .description("Online inference and offline TensorFlow training sharing nodes.")
                 .time("now-6h", "now").refresh("1m").timezone("browser")
                 .with_variable(gd.DatasourceVariable("datasource").label("Data source").type("prometheus"))
                 .with_variable(_query_variable("pool", "Pool", f"label_values({sel('kube_node_labels', ksm)}, {c.pool_label})",
                                                current=c.mixed_pool))
                 .with_variable(_query_variable("node", "Node", f"label_values({sel('kube_node_labels', ksm, re_(c.pool_label, '$pool'))}, node)",
                                                multi=True)))

    _node_rows(dashboard, layout, node)
    _training_row(guard, dashboard, layout)
    _share_row(guard, dashboard, layout)
    _latency_rows(guard, dashboard, layout)
    _utilisation_rows(guard, dashboard, layout, node)
    board = dashboard.build()
    # The SDK writes schemaVersion 36 (and has no builder for it), which Grafana 10.2 migrates
    # on every load (37: legend.showLegend, 38: table cellOptions); the JSON is already in the 38 shape.
    board.schema_version = GRAFANA_SCHEMA_VERSION
    return board


def _node_rows(dashboard: gd.Dashboard, layout: "_Layout", node: str) -> None:
    """The selected nodes' requests beside their use, then their GPUs."""
    dashboard.with_row(layout.row("Nodes of pool $pool"))
    requests = records.NODE_REQUESTS
    per_node = _timeseries(layout, "Node $node: requested vs used (share of allocatable)", [
        Query(sel(requests, eq("resource", "cpu"), node), "CPU requested"),
        Query(sel(records.NODE_CPU_USED, node), "CPU used (containers)"),
        Query(sel(requests, eq("resource", "memory"), node), "memory requested"),
        Query(sel(records.NODE_MEMORY_USED, node), "memory used (working set)"),
    ], unit="percentunit", width=8,
        description="Scheduled (requests of Pending/Running pods / allocatable) beside real use (cAdvisor, "
                    "containers only), for CPU and memory; one panel per selected node.")
    dashboard.with_panel(per_node.repeat("node").repeat_direction("h"))

    dashboard.with_row(layout.row("GPUs"))
    gpu_util = (statetimeline.Panel().title("GPU utilisation per device")
                .description("DCGM_FI_DEV_GPU_UTIL per GPU: green 0%, red 100%.")
                .unit("percent").min(0).max(100)
                .color_scheme(gd.FieldColor().mode(md.FieldColorModeId.CONTINUOUS_GR_YL_RD))
                .thresholds(gd.ThresholdsConfig().mode(md.ThresholdsMode.ABSOLUTE).steps([
                    md.Threshold(value=None, color="green"), md.Threshold(value=50, color="yellow"),
                    md.Threshold(value=90, color="red")]))
                .show_value(mc.VisibilityMode.NEVER).merge_values(False).row_height(0.9).fill_opacity(80)
                .line_width(0))
    dashboard.with_panel(layout.add(gpu_util, [
        Query(sel(records.GPU_UTILISATION, node), "{{node}} gpu{{gpu}}")], 24, 8))
    dashboard.with_panel(_timeseries(layout, "GPU memory used", [
        Query(sel(records.GPU_MEMORY_USED, node), "{{node}} gpu{{gpu}}")], unit="bytes",
        description="DCGM_FI_DEV_FB_USED (reported in MiB) per GPU."))


def _training_row(guard: LatencyGuard, dashboard: gd.Dashboard, layout: "_Layout") -> None:
    """Training's pods, TFJobs, queue, resubmissions and CPU."""
    c, ksm, ns = guard.config, guard.ksm, guard.ns
    dashboard.with_row(layout.row("Training"))
    phases = sel("kube_pod_status_phase", ksm, ns)
    operator = (eq("job", c.training_operator_job), eq("framework", "tensorflow"),
                eq("job_namespace", c.training_namespace))
    tf_cpu = sel("container_cpu_usage_seconds_total", c.cadvisor_selector, ns, eq("container", c.training_container))
    dashboard.with_panel(_timeseries(layout, "Training pods by phase", [
        Query(f"sum by (phase) ({phases})", "{{phase}}")], stack=True,
        description=f"Pods in namespace {c.training_namespace} (kube-state-metrics)."))
    dashboard.with_panel(_timeseries(layout, "TFJobs by state", [
        Query(f"count by ({c.tfjob_condition_label}) ({guard.tfjob_states})", f"{{{{{c.tfjob_condition_label}}}}}")],
        stack=True,
        description="Each TFJob once, in its current state from its conditions (kube-state-metrics "
                    "custom-resource-state): Failed, else Succeeded, else Running, Restarting or Suspended, "
                    "else Created."))
    dashboard.with_panel(_timeseries(layout, "TFJob starts and restarts per hour (training-operator)", [
        Query(f"sum(increase({sel(f'training_operator_jobs_{event}_total', *operator)}[1h]))", label)
        for event, label in (("created", "created"), ("successful", "succeeded"), ("restarted", "restarted"))],
        description="training_operator_jobs_*_total counters, framework tensorflow. No failed line: v1.7.0 "
                    "does not count failures through the backoff limit; TFJobs by state shows them."))
    queue = (eq("job", c.kueue_job), eq("cluster_queue", c.training_queue))
    dashboard.with_panel(_timeseries(layout, "Training queue: jobs waiting, and admission wait (p90)", [
        Query(f"sum by (status) ({sel('kueue_pending_workloads', *queue)})", "waiting: {{status}}"),
        Query(f"histogram_quantile(0.9, sum by (le) (rate({sel('kueue_admission_wait_time_seconds_bucket', *queue)}[1h]))) / 3600",
              "p90 wait (hours)")],
        description="Kueue's ClusterQueue of the training namespaces (docs/queue.md): jobs waiting "
                    "(inadmissible while the day holds the queue), and how long the jobs admitted in the "
                    "last hour waited, created or requeued to admitted."))
    resubmissions = sel(c.resubmissions_metric, eq("job", c.resubmitter_job), ns)
    dashboard.with_panel(_timeseries(layout, "TFJob resubmissions per hour by disruption, and jobs given up", [
        Query(f"sum by ({c.resubmission_reason_label}) (increase({resubmissions}[1h]))",
              f"resubmitted: {{{{{c.resubmission_reason_label}}}}}"),
        Query(f"count({guard.tfjobs_given_up}) or vector(0)", "given up")],
        description="TFJobs the resubmitter re-created after a disruption failed them (by the pod's "
                    "DisruptionTarget reason), and how many it gave up on at their cap "
                    "(docs/resubmission.md)."))
    dashboard.with_panel(_timeseries(layout, f"CPU used by {c.training_container} containers", [
        Query(f"sum by (pod) (rate({tf_cpu}[$__rate_interval]))", "{{pod}}")],
        description="cAdvisor, filtered to the training container, in cores."))


def _share_row(guard: LatencyGuard, dashboard: gd.Dashboard, layout: "_Layout") -> None:
    """Each pool's requests by PriorityClass: how much of it online and offline hold."""
    c = guard.config
    dashboard.with_row(layout.row("Offline vs online share of each pool"))
    for resource, title in (("cpu", "CPU"), ("memory", "Memory")):
        panel = _timeseries(layout, f"{title} requests by priority class (share of pool allocatable)", [
            Query(sel(records.POOL_REQUESTS, eq("resource", resource)),
                  "{{pool}} {{priority_class}}")], unit="percentunit", stack=True,
            description="Requests of Pending/Running pods per PriorityClass over the pool's allocatable.")
        for cls, color in ((c.online_priority_class, "blue"), (c.offline_priority_class, "green")):
            panel.override_by_regexp(f".* {re.escape(cls)}$", [md.DynamicConfigValue(
                id_val="color", value={"mode": "fixed", "fixedColor": color})])
        dashboard.with_panel(panel)


def _latency_rows(guard: LatencyGuard, dashboard: gd.Dashboard, layout: "_Layout") -> None:
    """Per service: P99 against its baseline and objective, the training beside it below."""
    c = guard.config
    if not c.online_slos:
        return
    dashboard.with_row(layout.row("Online latency against baseline"))
    for s in c.online_slos:
        service = (eq("service", s.service), eq("namespace", s.namespace))
        dashboard.with_panel(_timeseries(layout, f"{s.service}: P99 against baseline", [
            Query(sel(slo.P99_RECORD, *service), "P99"),
            Query(sel(slo.BASELINE_RECORD, *service), f"baseline (same hour, last {c.baseline_days} days)"),
            Query(f"{sel(slo.BASELINE_RECORD, *service)} * {1 + s.slo.regression:g}",
                  f"baseline + {s.slo.regression:.0%}"),
            Query(f"vector({s.slo.objective_seconds:g})", "objective")], unit="s", width=24,
            description="P99 from the service's histogram (5m rate); the regression alert fires above "
                        f"baseline + {s.slo.regression:.0%} for {c.latency_for} while training shares its nodes."))
        beside = _timeseries(layout, f"{s.service}: training on its nodes", [
            Query(sel(slo.TRAINING_SHARE_RECORD, *service), "offline CPU requests / allocatable"),
            Query(sel(slo.TRAINING_PODS_RECORD, *service), "training pods")], unit="percentunit",
            width=24, height=6,
            description=f"Offline ({c.training_namespace}) CPU requests on the nodes that run {s.service}'s "
                        "pods, over those nodes' allocatable CPU; and how many training pods run there (right axis).")
        beside.override_by_regexp("^training pods$", [
            md.DynamicConfigValue(id_val="custom.axisPlacement", value="right"),
            md.DynamicConfigValue(id_val="unit", value="short")])
        dashboard.with_panel(beside)


def _utilisation_rows(guard: LatencyGuard, dashboard: gd.Dashboard, layout: "_Layout", node: str) -> None:
    """Requested and used share of each pool, hourly, against the 30% and 70% target lines; steal
    and CPU pressure per node of the selected pool."""
    c = guard.config
    dashboard.with_row(layout.row("Utilisation per pool by hour"))
    for resource, title, used in (("cpu", "CPU", records.POOL_CPU_USED),
                                  ("memory", "Memory", records.POOL_MEMORY_USED),
                                  ("nvidia_com_gpu", "GPU", records.POOL_GPU_USED)):
        requested = sel(records.POOL_REQUESTS, eq("resource", resource))
        panel = _timeseries(layout, f"{title} by pool: requested and used (hourly mean)", [
            Query(f"sum by (pool) (avg_over_time({requested}[1h]))", "{{pool}} requested"),
            Query(f"sum by (pool) (avg_over_time({used}[1h]))", "{{pool}} used")], unit="percentunit", width=8,
            description=f"Share of each pool's allocatable {title}, all PriorityClasses; the lines mark the "
                        f"targets: {c.utilisation_low:.0%} (before co-location) and {c.utilisation_high:.0%} (after).")
        panel.interval("1h").thresholds(gd.ThresholdsConfig().mode(md.ThresholdsMode.ABSOLUTE).steps([
            md.Threshold(value=None, color="red"), md.Threshold(value=c.utilisation_low, color="orange"),
            md.Threshold(value=c.utilisation_high, color="green")])).thresholds_style(
            gc.GraphThresholdsStyleConfig().mode(mc.GraphTresholdsStyleMode.DASHED))
        dashboard.with_panel(panel)
    dashboard.with_row(layout.row("Contention on nodes of pool $pool"))
    dashboard.with_panel(_timeseries(layout, "CPU steal per node", [
        Query(sel(records.NODE_CPU_STEAL, node), "{{node}}")], unit="percentunit",
        description="Share of CPU time the hypervisor gave to other guests (node-exporter mode=steal)."))
    dashboard.with_panel(_timeseries(layout, "CPU pressure per node (some tasks waiting)", [
        Query(sel(records.NODE_CPU_PRESSURE, node), "{{node}}")], unit="percentunit",
        description="PSI cpu 'some': share of time at least one runnable task waited for a CPU "
                    "(node-exporter pressure collector; needs kernel >= 4.20)."))


def dashboard_uid(key: str) -> str:
    """Stable Grafana uid from a key that never changes with the title (at most 40 characters)."""
    slug = re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")
    return f"colocate-{slug}"[:31] + "-" + hashlib.sha256(key.encode()).hexdigest()[:8]


DATASOURCE = md.DataSourceRef(type_val="prometheus", uid="${datasource}")


class _Layout:
    """Panel ids and grid positions: rows and panels left to right, top to bottom (24 columns)."""

    def __init__(self) -> None:
        self._id = 0
        self.x = self.y = self.line_h = 0

    def next_id(self) -> int:
        self._id += 1
        return self._id

    def _newline(self) -> None:
        self.x, self.y, self.line_h = 0, self.y + self.line_h, 0

    def row(self, title: str) -> gd.Row:
        self._newline()
        row = gd.Row(title).id(self.next_id()).grid_pos(md.GridPos(h=1, w=24, x=0, y=self.y))
        self.y += 1
        return row

    def add(self, panel: Any, queries: Iterable[Query], width: int, height: int) -> Any:
        if self.x + width > 24:
            self._newline()
        panel.id(self.next_id()).datasource(DATASOURCE).grid_pos(md.GridPos(h=height, w=width, x=self.x, y=self.y))
        for ref, q in zip("ABCDEFGHIJ", queries):
            panel.with_target(gp.Dataquery().expr(q.expr).legend_format(q.legend).ref_id(ref).range())
        self.x += width
        self.line_h = max(self.line_h, height)
        return panel


def _timeseries(layout: _Layout, title: str, queries: list[Query], *, unit: str = "short", stack: bool = False,
                width: int = 12, height: int = 8, description: str = "") -> timeseries.Panel:
    panel = (timeseries.Panel().title(title).description(description).unit(unit).min(0)
             .line_width(1).fill_opacity(30 if stack else 10)
             .legend(gc.VizLegendOptions().show_legend(True).display_mode(mc.LegendDisplayMode.LIST)
                     .placement(mc.LegendPlacement.BOTTOM)))
    if stack:
        panel.stacking(gc.StackingConfig().mode(mc.StackingMode.NORMAL))
    return layout.add(panel, queries, width, height)


def _query_variable(name: str, label: str, query: str, *, current: str | None = None,
                    multi: bool = False) -> gd.QueryVariable:
    var = (gd.QueryVariable(name).label(label).datasource(DATASOURCE).query(query)
           .refresh(md.VariableRefresh.ON_TIME_RANGE_CHANGED).sort(md.VariableSort.ALPHABETICAL_ASC))
    if current:
        var.current(md.VariableOption(selected=True, text=current, value=current))
    if multi:
        var.multi(True).include_all(True).current(md.VariableOption(selected=True, text="All", value="$__all"))
    return var
