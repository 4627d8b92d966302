"""ServiceMonitor: how the Prometheus operator scrapes a Service (monitoring.coreos.com/v1)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from constructs import Construct

from colocate.constructs._k8s import emit
from colocate.errors import PropError
from colocate.model.names import SCRAPED_METRICS_ANNOTATION, SYNC_OPTIONS
from colocate.model.validate import check_dns_label, check_required_labels


@dataclass(frozen=True)
class ServiceMonitorProps:
    """Props of a ServiceMonitor."""

    #: ServiceMonitor name; Prometheus names the scrape job after the Service, not this.
    name: str
    #: Namespace of the ServiceMonitor and of the Service it scrapes.
    namespace: str
    #: Labels of the Service to scrape. Required (an empty selector scrapes every Service).
    service_labels: Mapping[str, str]
    #: Named Service port to scrape.
    port: str
    #: Labels Prometheus selects ServiceMonitors by (kube-prometheus-stack: ``release``). Required.
    monitor_labels: Mapping[str, str]
    #: HTTP path. Default ``/metrics``.
    path: str = "/metrics"
    #: Scrape interval. Default ``30s``.
    interval: str = "30s"
    #: Application metrics the Service exposes, name -> type (``histogram``, ``counter``,
    #: ``gauge``, ``summary``), declared in the ``colocate.io/metrics`` annotation so the
    #: checker accepts queries on them. Default: none.
    metrics: Mapping[str, str] = field(default_factory=dict)
    #: Keep the scraped series' own labels where they clash with the target's (``namespace``,
    #: ``pod``...); without it Prometheus renames the series' label to ``exported_<name>``
    #: (prometheus/prometheus v2.48.1 scrape/scrape.go mutateSampleLabels). For an exporter whose
    #: ``namespace`` label names the object it reports on, not itself. Default False.
    honor_labels: bool = False
    #: Sync options; the CRD comes from another Application, so by default the dry run skips
    #: a missing CRD. Default ``SkipDryRunOnMissingResource=true``.
    sync_options: tuple[str, ...] = field(default=("SkipDryRunOnMissingResource=true",))


class ServiceMonitor(Construct):
    """One ServiceMonitor for one Service port in its own namespace."""

    def __init__(self, scope: Construct, id: str, props: ServiceMonitorProps):
        super().__init__(scope, id)
        where = f"ServiceMonitor {props.name!r}"
        check_dns_label(where, "name", props.name)
        check_dns_label(where, "namespace", props.namespace)
        check_required_labels(where, "service_labels", props.service_labels,
                              "it would scrape every Service in the namespace")
        check_required_labels(where, "monitor_labels", props.monitor_labels, "Prometheus would not select the ServiceMonitor")
        for metric, kind in props.metrics.items():
            if kind not in ("histogram", "counter", "gauge", "summary") or not metric or "," in metric or ":" in metric:
                raise PropError(where, f"metrics[{metric!r}]", f"{kind!r}: give a metric name and its type "
                                "(histogram, counter, gauge or summary)")
        if not props.port:
            raise PropError(where, "port", "is empty: name the Service port to scrape")
        self.props = props
        metadata = {"name": props.name, "namespace": props.namespace, "labels": dict(props.monitor_labels)}
        annotations = {}
        if props.sync_options:
            annotations[SYNC_OPTIONS] = ",".join(props.sync_options)
        if props.metrics:
            annotations[SCRAPED_METRICS_ANNOTATION] = ",".join(f"{n}:{t}" for n, t in sorted(props.metrics.items()))
        if annotations:
            metadata["annotations"] = annotations
        emit(self, "servicemonitor", {
            "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": metadata,
            "spec": {
                "selector": {"matchLabels": dict(props.service_labels)},
                "namespaceSelector": {"matchNames": [props.namespace]},
                "endpoints": [{"port": props.port, "path": props.path, "interval": props.interval,
                               **({"honorLabels": True} if props.honor_labels else {})}],
            },
        })
