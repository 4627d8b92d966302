"""KubePrometheusStack: the values of the kube-prometheus-stack Helm chart, generated in Python.

Argo CD renders the chart (Helm source, ``valuesObject``); nothing here is a cluster object of
its own. Every key below was checked against the chart's values.yaml and templates at
``kube-prometheus-stack-55.5.1`` (docs/monitoring.md) or its pinned subcharts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from colocate.model import quantity
from colocate.model.validate import check_dns_label, check_labels, check_required_labels
from colocate.model.names import (CLUSTER_CRITICAL, IGNORE_ANNOTATION, DASHBOARD_SIDECAR_LABEL, DASHBOARD_SIDECAR_LABEL_VALUE, JOB_NAME_LABEL, NAME_LABEL,
                                  NODE_CRITICAL, POOL_LABEL, REPLICA_TYPE_LABEL, kps_fullname)
from colocate.model.pools import Taint
# The chart's monitor selection, which the checker reads too.
from colocate.model.prometheus_stack import MONITOR_KINDS, monitor_selectors, rendered_selector  # noqa: F401 (re-exported)
from colocate.errors import PropError

CHART_VERSION = "55.5.1"
#: The images the chart and its subcharts deploy with our values, by their default upstream
#: names: values.yaml of kube-prometheus-stack-55.5.1 (operator, config reloader, admission
#: webhook patch job, Prometheus, Alertmanager), kube-state-metrics-5.15.3,
#: prometheus-node-exporter-4.24.0 (prometheus-community/helm-charts) and grafana 7.0.x
#: (grafana/helm-charts: Grafana, its dashboard sidecar, curl to download dashboards, busybox
#: for initChownData). They stay upstream names: the chart's ``global.imageRegistry`` swaps
#: only the registry host, which no Harbor proxy-cache project serves, so the nodes' containerd
#: sends them to Harbor instead (constructs/containerd_config.py). Tags are the chart's.
CHART_IMAGES = (
    "quay.io/prometheus-operator/prometheus-operator",
    "quay.io/prometheus-operator/prometheus-config-reloader",
    "registry.k8s.io/ingress-nginx/kube-webhook-certgen",
    "quay.io/prometheus/prometheus",
    "quay.io/prometheus/alertmanager",
    "registry.k8s.io/kube-state-metrics/kube-state-metrics",
    "quay.io/prometheus/node-exporter",
    "docker.io/grafana/grafana",
    "quay.io/kiwigrid/k8s-sidecar",
    "docker.io/curlimages/curl",
    "docker.io/library/busybox",
)
#: The Alertmanager the chart runs (``alertmanager.alertmanagerSpec.image.tag`` at 55.5.1);
#: scripts/bootstrap builds amtool at the same version to check our config.
ALERTMANAGER_VERSION = "v0.26.0"
_PROMETHEUS_PORT = 9090
#: Pod labels kube-state-metrics exports on kube_pod_labels: dashboards group by TFJob, and the
#: latency guard finds an online service's pods (and so its nodes) by name.
POD_LABELS = (JOB_NAME_LABEL, REPLICA_TYPE_LABEL, NAME_LABEL)


#: Requests and limits of the monitoring pool's components (the chart sets none: BestEffort pods
#: are the first the kubelet evicts under memory pressure). Memory limits only: a CPU limit would
#: throttle rule evaluation and scrapes for nothing on a pool that runs nothing else. Sized for
#: the reference cluster (12 nodes, ~2k series per node): Prometheus keeps about 2 hours of
#: samples in memory, a few GiB here.
MONITORING_RESOURCES: Mapping[str, Mapping[str, Mapping[str, str]]] = {
    "prometheus": {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"memory": "8Gi"}},
    "alertmanager": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
    "grafana": {"requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
    "kube-state-metrics": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
    "prometheusOperator": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
    # The admission webhook's certificate Jobs (kube-webhook-certgen, a short Go run that writes
    # one Secret and patches two webhooks): our figure, the chart and upstream give none.
    "admissionWebhooks": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
    # Grafana's dashboard and datasource sidecars (k8s-sidecar): the figures the grafana chart
    # 7.0.19 suggests in values.yaml sidecar.resources.
    "grafanaSidecar": {"requests": {"cpu": "50m", "memory": "50Mi"}, "limits": {"memory": "100Mi"}},
}
#: node-exporter on every node, the figures of prometheus-operator/kube-prometheus v0.13.0
#: manifests/nodeExporter-daemonset.yaml (requests 102m and 180Mi, memory limit 180Mi; its CPU
#: limit left out, as for the services above). Without requests it had cpu.shares 2 beside
#: bursting training (rule COL013).
NODE_EXPORTER_RESOURCES: Mapping[str, Mapping[str, str]] = {
    "requests": {"cpu": "102m", "memory": "180Mi"}, "limits": {"memory": "180Mi"}}
#: Share of Prometheus' claim its TSDB may fill (``retentionSize``). Only whole blocks are deleted
#: to honour it while the WAL and the head chunks count towards it, so the disk must also hold
#: their peak (every 2 hours) beyond it (prometheus/prometheus v2.48.1 docs/storage.md).
RETENTION_SIZE_PERCENT = 80


def retention_size(storage_size: str) -> str:
    """``retentionSize`` for a claim of ``storage_size``, in Prometheus' units, which are powers
    of two ("1KB is 1024B", prometheus v2.48.1 docs/storage.md): 80% of 100Gi is ``80GB``."""
    mib = int(quantity.parse(storage_size)) * RETENTION_SIZE_PERCENT // 100 // 2**20
    return f"{mib // 1024}GB" if mib >= 1024 and mib % 1024 == 0 else f"{mib}MB"


def prometheus_url(release: str, namespace: str) -> str:
    """The URL the chart's Grafana datasource points at (templates/grafana/configmaps-datasources.yaml)."""
    return f"http://{kps_fullname(release)}-prometheus.{namespace}:{_PROMETHEUS_PORT}/"


@dataclass(frozen=True)
class CommunityDashboard:
    """A grafana.com dashboard the chart's Grafana downloads at start (needs internet or a mirror)."""

    #: Provider-unique key, a DNS label.
    name: str
    #: grafana.com dashboard id.
    gnet_id: int
    #: Pinned grafana.com revision (newer revisions may need a newer Grafana than the chart's 10.2).
    revision: int
    #: Why this dashboard and this revision.
    reason: str = ""


@dataclass(frozen=True)
class KubePrometheusStackProps:
    """Props of KubePrometheusStack."""

    #: Helm release name; also the Argo CD Application name and the ``release`` label value.
    release: str
    #: Namespace the stack runs in.
    namespace: str
    #: Existing Secret holding Grafana's admin user and password (never in git).
    grafana_admin_secret: str
    #: StorageClass of Prometheus' and Alertmanager's claims: local or block storage, ReadWriteOnce
    #: (Prometheus does not support NFS for its TSDB: prometheus/prometheus docs/storage.md).
    storage_class: str
    #: Size of Prometheus' PersistentVolumeClaim, e.g. ``100Gi``.
    storage_size: str
    #: How long Prometheus keeps samples, e.g. ``15d``.
    retention: str
    #: Labels ServiceMonitors, PodMonitors and PrometheusRules must carry to be picked up.
    monitor_labels: Mapping[str, str]
    #: nodeSelector pinning Prometheus, Alertmanager, Grafana, kube-state-metrics and the operator.
    pool_labels: Mapping[str, str]
    #: Taints of that pool, tolerated by the same components.
    pool_taints: Sequence[Taint] = ()
    #: Keys of the Grafana admin Secret. Defaults are the chart's.
    grafana_user_key: str = "admin-user"
    grafana_password_key: str = "admin-password"
    #: ConfigMap label Grafana's dashboard sidecar watches (in every namespace).
    dashboard_label: tuple[str, str] = (DASHBOARD_SIDECAR_LABEL, DASHBOARD_SIDECAR_LABEL_VALUE)
    #: Pod labels kube-state-metrics exports as ``label_*`` on kube_pod_labels.
    pod_labels_allowlist: Sequence[str] = POD_LABELS
    #: Node labels it exports on kube_node_labels; the dashboards and the idle-GPU alert
    #: group nodes by pool.
    node_labels_allowlist: Sequence[str] = (POOL_LABEL,)
    #: kube-state-metrics custom-resource-state config (metrics from custom resources' fields)
    #: and the RBAC rules that let it list and watch those resources. Default: none.
    ksm_custom_resource_state: Mapping[str, Any] | None = None
    ksm_rbac_rules: Sequence[Mapping[str, Any]] = ()
    #: Community dashboards downloaded from grafana.com. Default: none.
    community_dashboards: Sequence[CommunityDashboard] = ()
    #: PriorityClass of the cluster services (Prometheus, Alertmanager, Grafana,
    #: kube-state-metrics, the operator and its webhook job), so training never preempts them.
    #: Default ``system-cluster-critical``.
    priority_class: str = CLUSTER_CRITICAL
    #: PriorityClass of node-exporter, on every node. Default ``system-node-critical``.
    node_priority_class: str = NODE_CRITICAL
    #: Default alerts of the chart to switch off (``defaultRules.disabled.<alert>``, chart
    #: 55.5.1) because a mixin alert replaces them. Default: none.
    disabled_default_rules: Sequence[str] = ()
    #: Rule groups of the chart to switch off (``defaultRules.rules.<group>: false``, chart
    #: 55.5.1), e.g. a recording group whose series the pinned components no longer expose.
    #: Default: none.
    disabled_rule_groups: Sequence[str] = ()
    #: Alertmanager's config (``alertmanager.config``), e.g. ``ColocationMixin.alertmanager_config``.
    #: Default: the chart's, which sends every alert to a receiver that notifies nobody.
    alertmanager_config: Mapping[str, Any] | None = None
    #: Existing Secrets mounted into Alertmanager at ``/etc/alertmanager/secrets/<name>/``, for the
    #: config's ``*_file`` fields. Default: none.
    alertmanager_secrets: Sequence[str] = ()
    #: Size of Alertmanager's claim (silences and notification log survive a restart). Default 1Gi.
    alertmanager_storage_size: str = "1Gi"
    #: Requests and limits per component, by values key (``prometheus``, ``alertmanager``,
    #: ``grafana``, ``kube-state-metrics``, ``prometheusOperator``). Default: MONITORING_RESOURCES.
    resources: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=lambda: dict(MONITORING_RESOURCES))
    #: Chart version. Default 55.5.1.
    chart_version: str = CHART_VERSION


class KubePrometheusStack:
    """Validated props -> the chart's values (``values()``) and derived facts (URLs, names)."""

    def __init__(self, props: KubePrometheusStackProps):
        self.props = props
        self._validate()

    @property
    def fullname(self) -> str:
        return kps_fullname(self.props.release)

    @property
    def prometheus_url(self) -> str:
        return prometheus_url(self.props.release, self.props.namespace)

    def _validate(self) -> None:
        p, where = self.props, f"KubePrometheusStack {self.props.release!r}"
        check_dns_label(where, "release", p.release)
        check_dns_label(where, "namespace", p.namespace)
        check_dns_label(where, "grafana_admin_secret", p.grafana_admin_secret)
        for i, secret in enumerate(p.alertmanager_secrets):
            check_dns_label(where, f"alertmanager_secrets[{i}]", secret)
        check_required_labels(where, "monitor_labels", p.monitor_labels, "an empty selector makes Prometheus load "
                              "every rule and monitor in the cluster; give the release label, e.g. {'release': ...}")
        check_labels(where, "pool_labels", p.pool_labels)
        if not p.pool_labels:
            raise PropError(where, "pool_labels", "is empty; give the monitoring pool's node labels")
        if not quantity.is_quantity(p.storage_size) or quantity.parse(p.storage_size) <= 0:
            raise PropError(where, "storage_size", f"{p.storage_size!r} must be a positive quantity such as '100Gi'")
        if not quantity.is_quantity(p.alertmanager_storage_size) or quantity.parse(p.alertmanager_storage_size) <= 0:
            raise PropError(where, "alertmanager_storage_size", f"{p.alertmanager_storage_size!r} must be a positive "
                            "quantity such as '1Gi'")
        unknown = set(p.resources) - set(MONITORING_RESOURCES)
        if unknown:
            raise PropError(where, "resources", f"unknown components {sorted(unknown)}; use {sorted(MONITORING_RESOURCES)}")
        if not p.retention[:-1].isdigit() or p.retention[-1:] not in ("h", "d", "w", "y"):
            raise PropError(where, "retention", f"{p.retention!r} must be a Prometheus duration such as '15d'")
        if p.ksm_custom_resource_state and not p.ksm_rbac_rules:
            raise PropError(where, "ksm_rbac_rules", "is empty: kube-state-metrics cannot list the custom resources "
                            "ksm_custom_resource_state reads; give list/watch rules for them")
        if len({d.name for d in p.community_dashboards}) != len(p.community_dashboards):
            raise PropError(where, "community_dashboards", "two dashboards share a name")
        for i, d in enumerate(p.community_dashboards):
            check_dns_label(where, f"community_dashboards[{i}].name", d.name)
            if d.revision < 1:
                raise PropError(where, f"community_dashboards[{i}].revision",
                                "pin a revision; 'latest' may need a newer Grafana than the chart ships")

    def _pinned(self) -> dict[str, Any]:
        """nodeSelector + tolerations for a component that belongs on the monitoring pool."""
        return {"nodeSelector": dict(self.props.pool_labels),
                "tolerations": [t.toleration() for t in self.props.pool_taints]}

    def _service(self, component: str | None = None) -> dict[str, Any]:
        """A cluster service: on the monitoring pool, above every workload tier, with its
        requests and limits. The ``priorityClassName`` and ``resources`` keys are the chart's
        at 55.5.1 (docs/monitoring.md)."""
        out = {**self._pinned(), "priorityClassName": self.props.priority_class}
        if component in self.props.resources:
            out["resources"] = {k: dict(v) for k, v in self.props.resources[component].items()}
        return out

    def _claim(self, size: str) -> dict[str, Any]:
        return {"volumeClaimTemplate": {"spec": {
            "storageClassName": self.props.storage_class, "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": quantity.canonical(size, "memory")}}}}}

    def values(self) -> dict[str, Any]:
        p = self.props
        service = self._service
        label, label_value = p.dashboard_label
        values: dict[str, Any] = {
            "prometheus": {"prometheusSpec": {
                "retention": p.retention,
                # Size-based retention below the claim, so a full disk never stops the TSDB.
                "retentionSize": retention_size(p.storage_size),
                "storageSpec": self._claim(p.storage_size),
                **monitor_selectors(p.monitor_labels),
                **service("prometheus"),
            }},
            # Silences and the notification log survive a restart (else a silence is lost and
            # a resolved page is sent again).
            "alertmanager": {"alertmanagerSpec": {**service("alertmanager"),
                                                  "storage": self._claim(p.alertmanager_storage_size)}},
            "prometheusOperator": {**service("prometheusOperator"),
                                   "admissionWebhooks": {"patch": service("admissionWebhooks")}},
            "kube-state-metrics": {
                **service("kube-state-metrics"),
                # Its own telemetry (port 8081: kube_state_metrics_list_total, _watch_total,
                # shard gauges) as a second endpoint of its ServiceMonitor, so the chart's
                # KubeStateMetrics* alerts see list and watch errors (e.g. RBAC on the custom
                # resources below) instead of reading nothing (chart 5.15 selfMonitor.enabled,
                # default false; templates/servicemonitor.yaml).
                "selfMonitor": {"enabled": True},
                "metricLabelsAllowlist": [f"pods=[{','.join(p.pod_labels_allowlist)}]",
                                          f"nodes=[{','.join(p.node_labels_allowlist)}]"],
            },
            # Kubernetes nodes are Linux (and Windows) only: the chart's macOS node-exporter
            # dashboard (nodes-darwin, node_memory_{total,wired,compressed,...}_bytes) can only
            # show nothing. nodeExporter.operatingSystems.darwin.enabled (values.yaml at 55.5.1)
            # is the dashboard's own switch (templates/grafana/dashboards-1.14/nodes-darwin.yaml).
            "nodeExporter": {"operatingSystems": {"darwin": {"enabled": False}}},
            # Host network gives instance=<node IP>:9100; tolerating every taint puts it on
            # the online, mixed and monitoring pools alike.
            "prometheus-node-exporter": {"hostNetwork": True, "tolerations": [{"operator": "Exists"}],
                                         "priorityClassName": p.node_priority_class,
                                         "resources": {k: dict(v) for k, v in NODE_EXPORTER_RESOURCES.items()}},
            "grafana": {
                **service("grafana"),
                "admin": {"existingSecret": p.grafana_admin_secret, "userKey": p.grafana_user_key,
                          "passwordKey": p.grafana_password_key},
                # Its `helm test` Pod (docker.io/bats, priority 0) is a test hook Argo CD never runs
                # (gitops-engine maps only install/upgrade hooks); nobody runs `helm test` here.
                "testFramework": {"enabled": False},
                # The grafana chart's ServiceMonitor carries none of the labels Prometheus selects
                # (charts/grafana/templates/servicemonitor.yaml): without them Grafana is never scraped.
                "serviceMonitor": {"labels": dict(p.monitor_labels)},
                "sidecar": {
                    **({"resources": {k: dict(v) for k, v in p.resources["grafanaSidecar"].items()}}
                       if "grafanaSidecar" in p.resources else {}),
                    "dashboards": {"enabled": True, "label": label, "labelValue": label_value,
                                   "searchNamespace": "ALL"},
                    "datasources": {"url": self.prometheus_url},
                },
            },
        }
        self._options(values)
        return values

    def _options(self, values: dict[str, Any]) -> None:
        """What the props turn on beyond the base values."""
        p = self.props
        if p.ksm_custom_resource_state:
            # kube-state-metrics chart 5.15: a ConfigMap passed as --custom-resource-state-config-file,
            # and rbac.extraRules appended to its ClusterRole (templates/crs-configmap.yaml, role.yaml).
            values["kube-state-metrics"]["customResourceState"] = {"enabled": True,
                                                                   "config": dict(p.ksm_custom_resource_state)}
            values["kube-state-metrics"]["rbac"] = {"extraRules": [dict(r) for r in p.ksm_rbac_rules]}
        if p.alertmanager_config is not None:
            values["alertmanager"]["config"] = dict(p.alertmanager_config)
            # The chart renders the configuration into a Secret (templates/alertmanager/secret.yaml).
            # It holds routing only: every receiver reads its URL and token from a file of the
            # receivers' Secret, created out of band (docs/monitoring.md); tests/test_upstream_verdicts.py.
            values["alertmanager"]["secret"] = {"annotations": {IGNORE_ANNOTATION: (
                "COL506: the Alertmanager configuration, routing only, whose receivers read their URLs and tokens "
                "from files of a Secret created out of band")}}
        if p.alertmanager_secrets:
            # The operator mounts a missing Secret as a volume that never resolves: Alertmanager
            # stays ContainerCreating until the Secret exists (docs/monitoring.md).
            values["alertmanager"]["alertmanagerSpec"]["secrets"] = list(p.alertmanager_secrets)
        if p.disabled_default_rules:
            values.setdefault("defaultRules", {})["disabled"] = {name: True for name in p.disabled_default_rules}
        if p.disabled_rule_groups:
            values.setdefault("defaultRules", {})["rules"] = {name: False for name in p.disabled_rule_groups}
        if p.community_dashboards:
            values["grafana"]["dashboardProviders"] = {"dashboardproviders.yaml": {"apiVersion": 1, "providers": [{
                "name": "community", "orgId": 1, "folder": "Community", "type": "file",
                "disableDeletion": True, "editable": False,
                "options": {"path": "/var/lib/grafana/dashboards/community"}}]}}
            values["grafana"]["dashboards"] = {"community": {
                d.name: {"gnetId": d.gnet_id, "revision": d.revision, "datasource": "Prometheus"}
                for d in p.community_dashboards}}
