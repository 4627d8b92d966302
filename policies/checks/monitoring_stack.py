"""Checks that join our monitoring objects with the kube-prometheus-stack Application's values."""
from __future__ import annotations

from typing import Iterator

from colocate.checker import Index, Rule, Violation
from colocate.constructs import kube_prometheus_stack as kps
from colocate.manifests import Doc
from colocate.model.names import KPS_CHART
from colocate.model.scheduling import selector_matches


def _stack_applications(index: Index) -> list[tuple[str, str, dict]]:
    """(release, namespace, prometheusSpec values) of every kube-prometheus-stack Application."""
    out = []
    for doc in index.of_kind("Application"):
        spec = doc.obj.get("spec") or {}
        source = spec.get("source") or {}
        if source.get("chart") != KPS_CHART:
            continue
        helm = source.get("helm") or {}
        values = helm.get("valuesObject") or {}
        out.append((helm.get("releaseName") or doc.name, (spec.get("destination") or {}).get("namespace", ""),
                    ((values.get("prometheus") or {}).get("prometheusSpec")) or {}))
    return out


def monitors_selected(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every ServiceMonitor, PodMonitor and PrometheusRule is picked up by Prometheus: by the
    selectors in the checked kube-prometheus-stack Application, or, when none is checked, by
    the ones colocate renders for the cluster."""
    cluster = index.ctx.cluster
    stacks = _stack_applications(index) or [
        (cluster.prometheus_release, cluster.monitoring_namespace, kps.monitor_selectors(cluster.monitor_labels))]
    namespaces = {d.name: {**(d.metadata.get("labels") or {}), "kubernetes.io/metadata.name": d.name}
                  for d in index.of_kind("Namespace")}
    for kind in kps.MONITOR_KINDS:
        for doc in index.of_kind(kind):
            if not any(_selected(doc, kind, stack, namespaces) for stack in stacks):
                labels = doc.metadata.get("labels") or {}
                wanted = [kps.rendered_selector(spec, kind, release)[0] for release, _, spec in stacks]
                yield Violation(doc, "metadata.labels", f"labels {labels or '{}'} match none of {wanted}")


def _selected(doc: Doc, kind: str, stack: tuple[str, str, dict], namespaces: dict[str, dict]) -> bool:
    release, home, spec = stack
    selector, ns_selector = kps.rendered_selector(spec, kind, release)
    if not selector_matches(selector, doc.metadata.get("labels") or {}):
        return False
    if ns_selector is None:
        return doc.namespace == home
    return selector_matches(ns_selector, namespaces.get(doc.namespace, {"kubernetes.io/metadata.name": doc.namespace}))
