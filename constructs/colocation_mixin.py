"""The colocation mixin: alerts, recording rules and dashboards from ONE object.

Like kubernetes-mixin (STYLE.md section 3): every job selector, label name, threshold and
namespace is configured once in ``MixinConfig`` and interpolated everywhere; consumers read
``alerts``, ``recording_rules``, ``rule_groups``, ``dashboards`` and ``dcgm_fields()``.

Every metric and label used here is in ``policies/metrics/catalog.yaml`` (the pinned
exporters). Joins the catalog forces on us:

* node-exporter has no ``node`` label: its target ``namespace``/``pod`` are the exporter pod,
  which ``kube_pod_info`` places on a node.
* kube-state-metrics is scraped with ``honorLabels``; ``kube_node_*`` series still carry the
  KSM pod's ``namespace``/``pod``, so node series are always reduced ``by (node, ...)``.
* DCGM names the node in ``Hostname`` (the chart sets it from ``spec.nodeName``); it is copied
  into ``node`` with ``label_replace`` to join with kube-state-metrics.
* Pools come from ``kube_node_labels{label_colocate_io_pool}``: kube-state-metrics exports it
  only with ``metricLabelsAllowlist: [nodes=[colocate.io/pool]]`` in the KPS values.
* No recording rule reads another recording rule, so each can be backfilled on its own
  (``promtool tsdb create-blocks-from rules`` does not chain them).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from grafana_foundation_sdk.builders import common as gc
from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import prometheus as gp
from grafana_foundation_sdk.builders import statetimeline, timeseries
from grafana_foundation_sdk.models import common as mc
from grafana_foundation_sdk.models import dashboard as md

from colocate import promql
from colocate.constructs.grafana_dashboard import dashboard_json
from colocate.grafana import expand_variables, panel_queries
from colocate.model.names import POOL_LABEL

#: Grafana template variables in panel queries, and values that make them parseable PromQL.
#: ``$__rate_interval`` follows Grafana: at least four scrape intervals.
PARSE_VALUES = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "datasource": ""}
_MIB = 1024 * 1024


def sanitize_label(key: str) -> str:
    """kube-state-metrics' ``label_<key>`` name for an allow-listed object label."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def metric_names(expr: str) -> set[str]:
    """Every metric name a PromQL expression selects, from the parsed AST."""
    analysis = promql.analyse(expr)
    if analysis.error:
        raise ValueError(f"{expr!r}: {analysis.error}")
    return {s.name for s in analysis.selectors if s.name}


def _sel(metric: str, *matchers: str) -> str:
    return metric + "{" + ", ".join(matchers) + "}"


def _eq(label: str, value: str) -> str:
    return f'{label}="{value}"'


def _re(label: str, value: str) -> str:
    return f'{label}=~"{value}"'


def _ne(label: str) -> str:
    return f'{label}!=""'


@dataclass(frozen=True)
class MixinConfig:
    """Everything the rules and dashboards select on, each once."""

    #: Namespace TFJobs run in (``cluster.training_namespace``).
    training_namespace: str
    #: Pool where online and offline work share nodes (``cluster.mixed_pool``).
    mixed_pool: str
    #: PriorityClass of online pods; coloured apart on the pool-share panels.
    online_priority_class: str
    #: PriorityClass of offline pods.
    offline_priority_class: str
    #: kube-state-metrics as KPS 55.5.1 scrapes it.
    ksm_selector: str = 'job="kube-state-metrics"'
    #: node-exporter: KPS sets the job label to ``node-exporter``.
    node_exporter_selector: str = 'job="node-exporter"'
    #: cAdvisor through the kubelet ServiceMonitor of KPS (the kubelet job has three paths).
    cadvisor_selector: str = 'job="kubelet", metrics_path="/metrics/cadvisor"'
    #: Drops the pod-level cgroup (``container=""``) and dockershim's pause container, which
    #: would double every per-pod sum.
    container_filter: str = 'container!="", container!="POD"'
    #: dcgm-exporter chart 3.3.0: no jobLabel, so job = Service name = fullname; release
    #: ``dcgm-exporter`` gives ``dcgm-exporter``.
    dcgm_job: str = "dcgm-exporter"
    #: Our ServiceMonitor on Service ``training-operator`` in kubeflow (job = Service name).
    training_operator_job: str = "training-operator"
    #: The container the training-operator runs TensorFlow in.
    training_container: str = "tensorflow"
    #: kube-state-metrics label of the ``colocate.io/pool`` node label (needs the allowlist).
    pool_label: str = sanitize_label(POOL_LABEL)
    #: Node CPU busy ratio that is too high, and for how long.
    cpu_high_ratio: float = 0.85
    cpu_high_for: str = "5m"
    #: How long a training pod may stay Pending: preempted offline pods are briefly Pending
    #: by design, so this is long.
    pending_for: str = "30m"
    #: GPU utilisation (percent, 5-minute average) below which a GPU counts as idle, and for how long.
    gpu_idle_percent: int = 10
    gpu_idle_for: str = "15m"
    #: Restarts within ``restart_window`` that count as restarting repeatedly.
    restarts: int = 3
    restart_window: str = "30m"
    #: An event alert (OOM kill, failed TFJob) fires for this long after the event.
    event_window: str = "10m"
    #: How long a scrape target may be down before alerting.
    target_down_for: str = "5m"

    @classmethod
    def from_cluster(cls, cluster: Any) -> "MixinConfig":
        return cls(training_namespace=cluster.training_namespace, mixed_pool=cluster.mixed_pool,
                   online_priority_class=cluster.tier("online").name,
                   offline_priority_class=cluster.tier("offline").name)


@dataclass(frozen=True)
class Query:
    """One panel target."""

    expr: str
    legend: str


class ColocationMixin:
    """Alerts, recording rules and dashboards of the co-located cluster."""

    def __init__(self, config: MixinConfig):
        self.config = config
        c = config
        self._ksm = c.ksm_selector
        self._ns = f'namespace="{c.training_namespace}"'
        self._cadvisor = f"{c.cadvisor_selector}, {c.container_filter}"
        self._dcgm = f'job="{c.dcgm_job}"'

    # -- shared sub-expressions -------------------------------------------------------

    @property
    def _active_pods(self) -> str:
        """1 per pod that holds its requests: Succeeded/Failed pods (TFJob cleanPodPolicy None
        keeps them) still have request series in kube-state-metrics."""
        phase = _sel("kube_pod_status_phase", self._ksm, _re("phase", "Pending|Running"))
        return f"max by (namespace, pod) ({phase} == 1)"

    def _allocatable(self, resources: str) -> str:
        alloc = _sel("kube_node_status_allocatable", self._ksm, _re("resource", resources))
        return f"max by (node, resource) ({alloc})"

    @property
    def _node_pool(self) -> str:
        """1 per node, with its pool as label ``pool``."""
        lbl = self.config.pool_label
        labels = _sel("kube_node_labels", self._ksm, _ne(lbl))
        return f'max by (node, pool) (label_replace({labels}, "pool", "$1", "{lbl}", "(.*)"))'

    def _per_gpu(self, inner: str) -> str:
        """One series per GPU with ``node`` = DCGM's ``Hostname``; ``max`` drops the pod labels,
        which change whenever the GPU is handed to another pod."""
        return f'max by (node, gpu, UUID, modelName) (label_replace({inner}, "node", "$1", "Hostname", "(.*)"))'

    @property
    def node_cpu_utilisation(self) -> str:
        """Busy CPU share per node from node-exporter, mapped to the node name."""
        pod_info = _sel("kube_pod_info", self._ksm, _ne("node"))
        idle = _sel("node_cpu_seconds_total", self.config.node_exporter_selector, _eq("mode", "idle"))
        return (f"1 - avg by (node) (rate({idle}[5m])"
                f" * on (namespace, pod) group_left (node) topk by (namespace, pod) (1, {pod_info}))")

    # -- recording rules --------------------------------------------------------------

    @property
    def recording_rules(self) -> list[dict[str, Any]]:
        ksm = self._ksm
        node_requests = _sel("kube_pod_container_resource_requests", ksm, _re("resource", "cpu|memory|nvidia_com_gpu"),
                             _ne("node"))
        requests = f"sum by (node, resource) ({node_requests} * on (namespace, pod) group_left () {self._active_pods})"
        pod_info = _sel("kube_pod_info", ksm, _ne("node"))
        pod_requests = (f'sum by (node, namespace, pod, resource) ({_sel("kube_pod_container_resource_requests", ksm, _re("resource", "cpu|memory"), _ne("node"))})'
                        f" * on (namespace, pod) group_left () {self._active_pods}"
                        f" * on (namespace, pod) group_left (priority_class) max by (namespace, pod, priority_class) ({pod_info})")
        pool_requests = f"sum by (pool, priority_class, resource) ({pod_requests} * on (node) group_left (pool) {self._node_pool})"
        pool_allocatable = f'sum by (pool, resource) ({self._allocatable("cpu|memory")} * on (node) group_left (pool) {self._node_pool})'
        cpu_alloc = _sel("kube_node_status_allocatable", ksm, _eq("resource", "cpu"))
        mem_alloc = _sel("kube_node_status_allocatable", ksm, _eq("resource", "memory"))
        return [
            {"record": "node:node_cpu_utilisation:rate5m", "expr": self.node_cpu_utilisation},
            {"record": "node_resource:kube_pod_container_resource_requests:ratio",
             "expr": f'{requests} / on (node, resource) {self._allocatable("cpu|memory|nvidia_com_gpu")}'},
            {"record": "node:container_cpu_usage_seconds:ratio_rate5m",
             "expr": f'sum by (node) (rate({_sel("container_cpu_usage_seconds_total", self._cadvisor)}[5m]))'
                     f" / on (node) max by (node) ({cpu_alloc})"},
            {"record": "node:container_memory_working_set_bytes:ratio",
             "expr": f'sum by (node) ({_sel("container_memory_working_set_bytes", self._cadvisor)})'
                     f" / on (node) max by (node) ({mem_alloc})"},
            {"record": "node_gpu:dcgm_gpu_utilisation:percent",
             "expr": self._per_gpu(_sel("DCGM_FI_DEV_GPU_UTIL", self._dcgm))},
            # DCGM reports framebuffer memory in MiB.
            {"record": "node_gpu:dcgm_fb_used:bytes",
             "expr": f'{self._per_gpu(_sel("DCGM_FI_DEV_FB_USED", self._dcgm))} * {_MIB}'},
            {"record": "pool_priority_class:kube_pod_container_resource_requests:ratio",
             "expr": f"{pool_requests} / on (pool, resource) group_left () {pool_allocatable}"},
        ]

    # -- alerts -----------------------------------------------------------------------

    @property
    def alerts(self) -> list[dict[str, Any]]:
        c, ksm, ns = self.config, self._ksm, self._ns
        restarts = _sel("kube_pod_container_status_restarts_total", ksm, ns)
        last_oom = _sel("kube_pod_container_status_last_terminated_reason", ksm, ns, _eq("reason", "OOMKilled"))
        now_oom = _sel("kube_pod_container_status_terminated_reason", ksm, ns, _eq("reason", "OOMKilled"))
        failed = _sel("training_operator_jobs_failed_total", _eq("job", c.training_operator_job),
                      _eq("framework", "tensorflow"), _eq("job_namespace", c.training_namespace))
        pending = _sel("kube_pod_status_phase", ksm, ns, _eq("phase", "Pending"))
        gpu_util = _sel("DCGM_FI_DEV_GPU_UTIL", self._dcgm)
        idle_gpus = self._per_gpu(f"avg_over_time({gpu_util}[5m])")
        mixed_nodes = f'max by (node) ({_sel("kube_node_labels", ksm, _eq(c.pool_label, c.mixed_pool))})'
        gpu_requests = _sel("kube_pod_container_resource_requests", ksm, ns, _eq("resource", "nvidia_com_gpu"))
        waiting_gpu_pods = (f"count(max by (namespace, pod) ({gpu_requests} > 0)"
                            f" * on (namespace, pod) max by (namespace, pod) ({pending} == 1))")
        return [
            _alert("ColocateNodeCPUHigh", f"{self.node_cpu_utilisation} > {c.cpu_high_ratio}", c.cpu_high_for,
                   summary=f"Node CPU above {c.cpu_high_ratio:.0%} for {c.cpu_high_for}.",
                   description="Node {{ $labels.node }} is {{ $value | humanizePercentage }} busy "
                               "(node-exporter, all processes).",
                   hint="Compare the node's CPU requests with its real use on the Colocation dashboard; if online "
                        "pods are squeezed, lower the training quota or move TFJobs off the node."),
            _alert("ColocateTrainingPodPending", f"max by (namespace, pod) ({pending}) == 1", c.pending_for,
                   summary=f"Training pod Pending for {c.pending_for}.",
                   description="Pod {{ $labels.namespace }}/{{ $labels.pod }} has been Pending for "
                               f"{c.pending_for}; preempted pods are only briefly Pending.",
                   hint="kubectl describe pod shows the scheduler's reason: usually the training ResourceQuota, "
                        "no free GPU on the mixed pool, or a PVC that cannot bind."),
            # Restarted containers keep the reason in lastState; with restartPolicy Never (the
            # TFJob default) the container stays terminated with the reason in its current state.
            _alert("ColocateTrainingPodOOMKilled",
                   f"(max by (namespace, pod, container) ({last_oom} == 1)"
                   f" and on (namespace, pod, container) increase({restarts}[{c.event_window}]) > 0)"
                   f" or max by (namespace, pod, container) ({now_oom} == 1 unless {now_oom} offset {c.event_window} == 1)",
                   "0m",
                   summary="Training container OOMKilled.",
                   description="Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} was "
                               "killed for exceeding its memory limit.",
                   hint="Raise the container's memory request and limit (equal in training) or lower the batch "
                        "size; memory is not compressible."),
            _alert("ColocateTrainingPodRestarting",
                   f"max by (namespace, pod, container) (increase({restarts}[{c.restart_window}])) >= {c.restarts}", "5m",
                   summary=f"Training container restarted {c.restarts} or more times in {c.restart_window}.",
                   description="Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} "
                               "keeps restarting.",
                   hint="kubectl logs --previous shows the last crash; TFJob replicas with restartPolicy OnFailure "
                        "or ExitCode restart until backoffLimit."),
            # The operator's counter appears at 1 on the first failure, where increase() sees
            # nothing; the second branch catches a series that did not exist a window ago.
            _alert("ColocateTFJobFailed",
                   f"sum by (job_namespace) (increase({failed}[{c.event_window}])) > 0"
                   f" or sum by (job_namespace) ({failed} unless {failed} offset {c.event_window}) > 0",
                   "0m",
                   summary="TFJob failed.",
                   description="The training-operator marked a TFJob in namespace {{ $labels.job_namespace }} "
                               f"Failed in the last {c.event_window}.",
                   hint="kubectl describe tfjob shows which replica failed; its pods are kept (cleanPodPolicy "
                        "None) for kubectl logs."),
            _alert("ColocateMixedGPUsIdleWhileTFJobsWait",
                   f"count by (node) (({idle_gpus} < {c.gpu_idle_percent}) * on (node) group_left () {mixed_nodes})"
                   f" and on () ({waiting_gpu_pods} > 0)",
                   c.gpu_idle_for,
                   summary="Mixed-pool GPUs idle while training pods wait for GPUs.",
                   description="{{ $value }} GPU(s) on mixed node {{ $labels.node }} averaged under "
                               f"{c.gpu_idle_percent}% while pods in {c.training_namespace} requesting "
                               "nvidia.com/gpu are Pending.",
                   hint="The idle GPU is either allocated to a pod that does not use it, or free while the waiting "
                        "pod lacks CPU or memory on that node; the Colocation dashboard shows both."),
            self._target_down("ColocateDCGMExporterDown", c.dcgm_job, "GPU panels and GPU alerts are blind.",
                              "Check the dcgm-exporter DaemonSet in the monitoring namespace: it must tolerate the "
                              "online taint and run on every GPU node."),
            self._target_down("ColocateTrainingOperatorDown", c.training_operator_job,
                              "TFJob metrics are missing and TFJobs may not be reconciled.",
                              "Check the training-operator Deployment in kubeflow and its ServiceMonitor "
                              "(port monitoring-port)."),
        ]

    def _target_down(self, name: str, job: str, impact: str, hint: str) -> dict[str, Any]:
        up = _sel("up", _eq("job", job))
        return _alert(name, f"{up} == 0 or absent({up})", self.config.target_down_for,
                      summary=f"Prometheus cannot scrape {job}.",
                      description=f"Job {job}{{{{ with $labels.instance }}}} target {{{{ . }}}}{{{{ end }}}} has been "
                                  f"down or absent for {self.config.target_down_for}. {impact}",
                      hint=hint)

    @property
    def rule_groups(self) -> list[dict[str, Any]]:
        return [{"name": "colocate.rules", "rules": self.recording_rules},
                {"name": "colocate.alerts", "rules": self.alerts}]

    # -- dashboards -------------------------------------------------------------------

    @property
    def dashboards(self) -> list[md.Dashboard]:
        return [self._colocation_dashboard()]

    def _colocation_dashboard(self) -> md.Dashboard:
        c, ksm, ns = self.config, self._ksm, self._ns
        node = _re("node", "$node")
        layout = _Layout()
        dashboard = (gd.Dashboard("Colocation").uid(dashboard_uid("Colocation")).tags(["colocate"])
                     .description("Online inference and offline TensorFlow training sharing nodes.")
                     .time("now-6h", "now").refresh("1m").timezone("browser")
                     .with_variable(gd.DatasourceVariable("datasource").label("Data source").type("prometheus"))
                     .with_variable(_query_variable("pool", "Pool", f"label_values({_sel('kube_node_labels', ksm)}, {c.pool_label})",
                                                    current=c.mixed_pool))
                     .with_variable(_query_variable("node", "Node", f"label_values({_sel('kube_node_labels', ksm, _re(c.pool_label, '$pool'))}, node)",
                                                    multi=True)))

        dashboard.with_row(layout.row("Nodes of pool $pool"))
        requests = "node_resource:kube_pod_container_resource_requests:ratio"
        per_node = _timeseries(layout, "Node $node: requested vs used (share of allocatable)", [
            Query(_sel(requests, _eq("resource", "cpu"), node), "CPU requested"),
            Query(_sel("node:container_cpu_usage_seconds:ratio_rate5m", node), "CPU used (containers)"),
            Query(_sel(requests, _eq("resource", "memory"), node), "memory requested"),
            Query(_sel("node:container_memory_working_set_bytes:ratio", node), "memory used (working set)"),
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
            Query(_sel("node_gpu:dcgm_gpu_utilisation:percent", node), "{{node}} gpu{{gpu}}")], 24, 8))
        dashboard.with_panel(_timeseries(layout, "GPU memory used", [
            Query(_sel("node_gpu:dcgm_fb_used:bytes", node), "{{node}} gpu{{gpu}}")], unit="bytes",
            description="DCGM_FI_DEV_FB_USED (reported in MiB) per GPU."))

        dashboard.with_row(layout.row("Training"))
        phases = _sel("kube_pod_status_phase", ksm, ns)
        tfjob_pods = f'max by (namespace, pod, owner_name) ({_sel("kube_pod_owner", ksm, ns, _eq("owner_kind", "TFJob"))})'
        operator = (_eq("job", c.training_operator_job), _eq("framework", "tensorflow"),
                    _eq("job_namespace", c.training_namespace))
        tf_cpu = _sel("container_cpu_usage_seconds_total", c.cadvisor_selector, ns, _eq("container", c.training_container))
        dashboard.with_panel(_timeseries(layout, "Training pods by phase", [
            Query(f"sum by (phase) ({phases})", "{{phase}}")], stack=True,
            description=f"Pods in namespace {c.training_namespace} (kube-state-metrics)."))
        dashboard.with_panel(_timeseries(layout, "TFJobs by state (from their pods)", [
            Query(f"count by (phase) (max by (owner_name, phase) (({phases} == 1)"
                  f" * on (namespace, pod) group_left (owner_name) {tfjob_pods}))", "{{phase}}")], stack=True,
            description="TFJobs with at least one pod in each phase (pods owned by a TFJob, kube_pod_owner); "
                        "kube-state-metrics has no TFJob state of its own."))
        dashboard.with_panel(_timeseries(layout, "TFJob outcomes per hour (training-operator)", [
            Query(f"sum(increase({_sel(f'training_operator_jobs_{event}_total', *operator)}[1h]))", label)
            for event, label in (("created", "created"), ("successful", "succeeded"), ("failed", "failed"),
                                 ("restarted", "restarted"))],
            description="training_operator_jobs_*_total counters, framework tensorflow."))
        dashboard.with_panel(_timeseries(layout, f"CPU used by {c.training_container} containers", [
            Query(f"sum by (pod) (rate({tf_cpu}[$__rate_interval]))", "{{pod}}")],
            description="cAdvisor, filtered to the training container, in cores."))

        dashboard.with_row(layout.row("Offline vs online share of each pool"))
        for resource, title in (("cpu", "CPU"), ("memory", "Memory")):
            panel = _timeseries(layout, f"{title} requests by priority class (share of pool allocatable)", [
                Query(_sel("pool_priority_class:kube_pod_container_resource_requests:ratio", _eq("resource", resource)),
                      "{{pool}} {{priority_class}}")], unit="percentunit", stack=True,
                description="Requests of Pending/Running pods per PriorityClass over the pool's allocatable.")
            for cls, color in ((c.online_priority_class, "blue"), (c.offline_priority_class, "green")):
                panel.override_by_regexp(f".* {re.escape(cls)}$", [md.DynamicConfigValue(
                    id_val="color", value={"mode": "fixed", "fixedColor": color})])
            dashboard.with_panel(panel)
        return dashboard.build()

    # -- derived ----------------------------------------------------------------------

    def expressions(self) -> Iterator[str]:
        """Every PromQL expression the mixin ships, dashboard variables expanded."""
        for group in self.rule_groups:
            for rule in group["rules"]:
                yield rule["expr"]
        values = {**PARSE_VALUES, "pool": self.config.mixed_pool, "node": ".*"}
        for board in self.dashboards:
            for _, expr in panel_queries(dashboard_json(board)):
                yield expand_variables(expr, values)

    def dcgm_fields(self) -> list[str]:
        """Every ``DCGM_FI_*`` field the rules and dashboards read (the exporter must collect them)."""
        return sorted({n for e in self.expressions() for n in metric_names(e) if n.startswith("DCGM_FI_")})


def dcgm_fields(cluster: Any) -> list[str]:
    """DCGM fields the reference mixin of ``cluster`` uses; for the DCGM exporter's CSV."""
    return ColocationMixin(MixinConfig.from_cluster(cluster)).dcgm_fields()


def dashboard_uid(title: str) -> str:
    """Stable Grafana uid from the title (Grafana allows 40 characters)."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return f"colocate-{slug}"[:31] + "-" + hashlib.sha256(title.encode()).hexdigest()[:8]


def _alert(name: str, expr: str, for_: str, *, summary: str, description: str, hint: str,
           severity: str = "warning") -> dict[str, Any]:
    return {"alert": name, "expr": expr, "for": for_, "labels": {"severity": severity},
            "annotations": {"summary": summary, "description": description, "hint": hint}}


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
