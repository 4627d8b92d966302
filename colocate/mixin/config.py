"""The mixin's one config (kubernetes-mixin's ``_config``): every selector, job name, label name
and threshold, set once; and the sub-expressions the rules, alerts and dashboards share.

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
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from colocate import promql
from colocate.model.slo import LatencySlo
from colocate.model.names import (BLOCKED_METRIC, DISRUPTION_ANNOTATION, TFJOB_ANNOTATION_LABEL, TFJOB_ANNOTATION_METRIC, DCGM_EXPORTER_JOB,
                                  GIVEN_UP_METRIC, JOB_NAME_LABEL, KUEUE_JOB, MAX_MEMORY_BURST, NAME_LABEL, POOL_LABEL,
                                  RESUBMISSIONS_METRIC, RESUBMITTER, TF_CONTAINER, TFJOB_CONDITION_LABEL,
                                  TFJOB_CONDITION_METRIC, TFJOB_NAME_METRIC_LABEL, TRAINING_OPERATOR_JOB)

#: Grafana template variables in panel queries, and values that make them parseable PromQL.
#: ``$__rate_interval`` follows Grafana: at least four scrape intervals.
PARSE_VALUES = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "datasource": ""}


def sanitize_label(key: str) -> str:
    """kube-state-metrics' ``label_<key>`` name for an allow-listed object label."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def metric_names(expr: str) -> set[str]:
    """Every metric name a PromQL expression selects, from the parsed AST."""
    analysis = promql.analyse(expr)
    if analysis.error:
        raise ValueError(f"{expr!r}: {analysis.error}")
    return {s.name for s in analysis.selectors if s.name}


def sel(metric: str, *matchers: str) -> str:
    return metric + "{" + ", ".join(matchers) + "}"


def eq(label: str, value: str) -> str:
    return f'{label}="{value}"'


def re_(label: str, value: str) -> str:
    return f'{label}=~"{value}"'


def ne_value(label: str, value: str) -> str:
    return f'{label}!="{value}"'


def nre(label: str, value: str) -> str:
    return f'{label}!~"{value}"'


def ne(label: str) -> str:
    return f'{label}!=""'


@dataclass(frozen=True)
class ServiceSlo:
    """An online service and its latency SLO."""

    service: str
    namespace: str
    slo: LatencySlo

    @property
    def buckets(self) -> str:
        label, value = self.slo.selector(self.service)
        return sel(f"{self.slo.metric}_bucket", eq(label, value))


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
    #: Namespace of the training-image pre-pull DaemonSet (``cluster.prepull_namespace``): its
    #: pods run at the lowest priority, so the first preemption victims, Pending by design.
    prepull_namespace: str = "image-prepull"
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
    dcgm_job: str = DCGM_EXPORTER_JOB
    #: Our ServiceMonitor on Service ``training-operator`` in kubeflow (job = Service name).
    training_operator_job: str = TRAINING_OPERATOR_JOB
    #: Kueue's manager (job = its metrics Service's name) and the training ClusterQueue.
    kueue_job: str = KUEUE_JOB
    training_queue: str = "training"
    #: A queue with jobs waiting that admitted none for this long has not moved for a whole night
    #: (the day's hold lasts at most the peak, which is shorter than a day).
    queue_stalled_window: str = "24h"
    queue_stalled_for: str = "30m"
    #: The resubmitter (charts/training_control.py), scraped through its Service of this name with
    #: honorLabels, so ``namespace`` is the TFJob's; its counter of re-creations (label
    #: ``reason``: the disruption) and its gauge of TFJobs given up at the cap (label ``tfjob``).
    resubmitter_job: str = RESUBMITTER
    resubmissions_metric: str = RESUBMISSIONS_METRIC
    resubmission_reason_label: str = "reason"
    given_up_metric: str = GIVEN_UP_METRIC
    #: Its gauge of resubmissions held by pods that stay terminating (a lost node), and how long
    #: before that pages: the taint manager's eviction is 5 minutes after the node went silent.
    blocked_metric: str = BLOCKED_METRIC
    resubmission_blocked_for: str = "10m"
    #: How long a TFJob failed by a disruption may stay Failed before it pages: twice the
    #: resubmitter's longest backoff (--max-backoff-seconds, 900).
    resubmission_pending_for: str = "30m"
    #: The container the training-operator runs TensorFlow in.
    training_container: str = TF_CONTAINER
    #: TFJob conditions from kube-state-metrics (colocate/mixin/tfjob_state.py) and its labels.
    tfjob_condition_metric: str = TFJOB_CONDITION_METRIC
    tfjob_label: str = TFJOB_NAME_METRIC_LABEL
    tfjob_condition_label: str = TFJOB_CONDITION_LABEL
    #: TFJob annotation keys from kube-state-metrics, and the key the resubmitter writes when a
    #: disruption takes a job's pod (docs/resubmission.md).
    tfjob_annotation_metric: str = TFJOB_ANNOTATION_METRIC
    tfjob_annotation_label: str = TFJOB_ANNOTATION_LABEL
    disruption_annotation: str = DISRUPTION_ANNOTATION
    #: How far a training memory limit may exceed the request (the TFJob construct's bound).
    max_memory_burst: int = MAX_MEMORY_BURST
    #: kube-state-metrics label of the ``colocate.io/pool`` node label (needs the allowlist).
    pool_label: str = sanitize_label(POOL_LABEL)
    #: Node CPU busy ratio that is too high, and for how long.
    cpu_high_ratio: float = 0.85
    cpu_high_for: str = "5m"
    #: How long a training pod may stay Pending: preempted offline pods are briefly Pending
    #: by design, so this is long.
    pending_for: str = "30m"
    #: How long any other pod may stay not ready (kube-prometheus-stack's KubePodNotReady, which
    #: we replace because it would fire on training pods at 15 minutes).
    not_ready_for: str = "15m"
    #: kube-prometheus-stack 55.5.1's DaemonSet alerts (rules-1.14/kubernetes-apps.yaml), which we
    #: replace because they would fire on the pre-pull DaemonSet whenever training fills a node:
    #: (chart alert, its ``for``).
    daemonset_alerts: tuple[tuple[str, str], ...] = (("KubeDaemonSetRolloutStuck", "15m"),
                                                      ("KubeDaemonSetNotScheduled", "10m"))
    #: GPU utilisation (percent, 5-minute average) below which a GPU counts as idle, and for how long.
    gpu_idle_percent: int = 10
    gpu_idle_for: str = "15m"
    #: A running TFJob hangs when every GPU it holds averages under this (percent, 5 minutes) for
    #: this long: progress, not a deadline (training-operator v1.7.0 restarts status.startTime on
    #: every resume, so activeDeadlineSeconds bounds one night's run, docs/training.md).
    hang_gpu_percent: int = 1
    hang_for: str = "1h"
    #: kube-state-metrics label of the pods' TFJob name label (needs the allowlist).
    job_pod_label: str = sanitize_label(JOB_NAME_LABEL)
    #: Restarts within ``restart_window`` that count as restarting repeatedly.
    restarts: int = 3
    restart_window: str = "30m"
    #: An event alert (OOM kill, failed TFJob) fires for this long after the event.
    event_window: str = "10m"
    #: The dashboard's title, and the key its uid is derived from: the uid (and the ConfigMap
    #: name) stays when the title is reworded, so links and bookmarks keep working.
    dashboard_title: str = "Colocation"
    dashboard_key: str = "colocation"
    #: How long a scrape target may be down before alerting.
    target_down_for: str = "5m"
    #: Alertmanager sends one notification per group of these labels (routing.py): per alert and
    #: namespace, and per scrape ``job`` (the chart's TargetDown fires once per job and service).
    group_by: tuple[str, ...] = ("alertname", "namespace", "job")
    #: Alertmanager's timings: wait before a new group's first notification, between updates of
    #: a group, and before repeating an unchanged one. kube-prometheus-stack 55.5.1's defaults.
    group_wait: str = "30s"
    group_interval: str = "5m"
    repeat_interval: str = "12h"

    #: Online services with a latency SLO (the guard's rules, alerts and dashboard rows).
    online_slos: tuple[ServiceSlo, ...] = ()
    #: kube-state-metrics label of the pod name label online services carry (needs the allowlist).
    service_pod_label: str = sanitize_label(NAME_LABEL)
    #: How long P99 may stay above the baseline or the objective before alerting.
    latency_for: str = "10m"
    #: Days the latency baseline averages, each at the same hour of day.
    baseline_days: int = 7
    #: Target utilisation lines: idle below 30% before co-location, over 70% after.
    utilisation_low: float = 0.30
    utilisation_high: float = 0.70

    @classmethod
    def from_cluster(cls, cluster: Any) -> "MixinConfig":
        return cls(training_namespace=cluster.training_namespace, mixed_pool=cluster.mixed_pool,
                   training_queue=cluster.training_queue,
                   prepull_namespace=cluster.prepull_namespace,
                   online_priority_class=cluster.tier("online").name,
                   offline_priority_class=cluster.tier("offline").name,
                   online_slos=tuple(ServiceSlo(s.name, cluster.online_namespace, s.slo)
                                     for s in cluster.online_services if s.slo))


class Selectors:
    """The config's selectors and the sub-expressions shared by rules, alerts and dashboards."""

    def __init__(self, config: MixinConfig):
        self.config = config
        c = config
        self.ksm = c.ksm_selector
        self.ns = f'namespace="{c.training_namespace}"'
        self.cadvisor = f"{c.cadvisor_selector}, {c.container_filter}"
        self.dcgm = f'job="{c.dcgm_job}"'

    # -- shared sub-expressions -------------------------------------------------------

    @property
    def tfjobs_given_up(self) -> str:
        """1 per TFJob the resubmitter gave up on; ``max`` merges its replicas' series."""
        c = self.config
        gauge = sel(c.given_up_metric, eq("job", c.resubmitter_job), self.ns)
        return f"max by (namespace, {c.tfjob_label}) ({gauge}) == 1"

    @property
    def tfjobs_blocked(self) -> str:
        """1 per TFJob whose resubmission waits for old pods that stay terminating."""
        c = self.config
        gauge = sel(c.blocked_metric, eq("job", c.resubmitter_job), self.ns)
        return f"max by (namespace, {c.tfjob_label}) ({gauge}) == 1"

    @property
    def active_pods(self) -> str:
        """1 per pod that holds its requests: Succeeded/Failed pods (a TFJob's until the operator
        cleans them up, or any other pod's) still have request series in kube-state-metrics."""
        phase = sel("kube_pod_status_phase", self.ksm, re_("phase", "Pending|Running"))
        return f"max by (namespace, pod) ({phase} == 1)"

    def tfjob_condition(self, matcher: str) -> str:
        """1 per TFJob in the training namespace whose condition matching ``matcher`` is True."""
        c = self.config
        cond = sel(c.tfjob_condition_metric, self.ksm, self.ns, matcher)
        return f"max by (namespace, {c.tfjob_label}, {c.tfjob_condition_label}) ({cond}) == 1"

    @property
    def tfjob_states(self) -> str:
        """1 per TFJob, labelled by its one current state. Conditions accumulate (Created stays
        True; a Restarting condition may outlive the job's failure), so terminal ones win."""
        c, key = self.config, f"on (namespace, {self.config.tfjob_label})"
        cond = self.tfjob_condition
        failed = cond(eq(c.tfjob_condition_label, "Failed"))
        succeeded = cond(eq(c.tfjob_condition_label, "Succeeded"))
        active = cond(re_(c.tfjob_condition_label, "Running|Restarting|Suspended"))
        created = cond(eq(c.tfjob_condition_label, "Created"))
        finished = cond(re_(c.tfjob_condition_label, "Failed|Succeeded"))
        started = cond(ne_value(c.tfjob_condition_label, "Created"))
        return (f"({failed}) or ({succeeded} unless {key} {failed})"
                f" or ({active} unless {key} {finished}) or ({created} unless {key} {started})")

    def allocatable(self, resources: str) -> str:
        alloc = sel("kube_node_status_allocatable", self.ksm, re_("resource", resources))
        return f"max by (node, resource) ({alloc})"

    @property
    def node_pool(self) -> str:
        """1 per node, with its pool as label ``pool``."""
        lbl = self.config.pool_label
        labels = sel("kube_node_labels", self.ksm, ne(lbl))
        return f'max by (node, pool) (label_replace({labels}, "pool", "$1", "{lbl}", "(.*)"))'

    def per_gpu(self, inner: str) -> str:
        """One series per GPU with ``node`` = DCGM's ``Hostname``; ``max`` drops the pod labels,
        which change whenever the GPU is handed to another pod."""
        return f'max by (node, gpu, UUID, modelName) (label_replace({inner}, "node", "$1", "Hostname", "(.*)"))'

    def node_exporter_rate(self, aggregation: str, metric: str, *matchers: str) -> str:
        """``aggregation by (node)`` of a node-exporter counter's 5m rate, its exporter pod mapped
        to the node name (node-exporter has no node label)."""
        pod_info = sel("kube_pod_info", self.ksm, ne("node"))
        series = sel(metric, self.config.node_exporter_selector, *matchers)
        return (f"{aggregation} by (node) (rate({series}[5m])"
                f" * on (namespace, pod) group_left (node) topk by (namespace, pod) (1, {pod_info}))")

    @property
    def node_cpu_utilisation(self) -> str:
        """Busy CPU share per node from node-exporter, mapped to the node name."""
        return f'1 - {self.node_exporter_rate("avg", "node_cpu_seconds_total", eq("mode", "idle"))}'

    def pool_allocatable(self, resources: str) -> str:
        """Allocatable per pool and resource."""
        return f"sum by (pool, resource) ({self.allocatable(resources)} * on (node) group_left (pool) {self.node_pool})"

    def by_pool_and_class(self, per_pod: str) -> str:
        """A per-pod series (labels node, namespace, pod) summed per pool and PriorityClass."""
        pod_info = sel("kube_pod_info", self.ksm, ne("node"))
        return (f"sum by (pool, priority_class) ({per_pod}"
                f" * on (namespace, pod) group_left (priority_class) max by (namespace, pod, priority_class) ({pod_info})"
                f" * on (node) group_left (pool) {self.node_pool})")

