"""Checks that join our monitoring objects with the kube-prometheus-stack Application's values."""
from __future__ import annotations

import ipaddress
from typing import Iterator
from urllib.parse import urlsplit

from colocate.checker import Index, Rule, Violation
from colocate.model import prometheus_stack as kps
from colocate.checker.manifests import Doc
from colocate.model.names import KPS_CHART
from colocate.model.scheduling import selector_matches

#: The API group of the Prometheus operator's custom resources.
MONITORING_GROUP = "monitoring.coreos.com"


def _prometheuses(index: Index) -> list[Doc]:
    """The Prometheus custom resources checked (a rendered kube-prometheus-stack's among them)."""
    return [d for d in index.of_kind("Prometheus") if d.group == MONITORING_GROUP]


def _mapping(value) -> dict:
    """``value`` when it is a mapping, else empty (a spec of the wrong shape, which kubeconform reports)."""
    return value if isinstance(value, dict) else {}


def _stack_applications(index: Index) -> list[tuple[str, str, dict, bool]]:
    """(release, namespace, spec, is_object) per Prometheus that selects monitors: every checked
    Prometheus object (its spec), and every kube-prometheus-stack Helm Application (its
    prometheusSpec values, which the chart turns into such an object)."""
    out = [(d.name, d.namespace, _mapping(d.obj.get("spec")), True) for d in _prometheuses(index)]
    for doc in index.of_kind("Application"):
        spec = doc.obj.get("spec") or {}
        source = spec.get("source") or {}
        if source.get("chart") != KPS_CHART:
            continue
        helm = source.get("helm") or {}
        values = helm.get("valuesObject") or {}
        out.append((helm.get("releaseName") or doc.name, (spec.get("destination") or {}).get("namespace", ""),
                    ((values.get("prometheus") or {}).get("prometheusSpec")) or {}, False))
    return out


def monitors_selected(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every ServiceMonitor, PodMonitor and PrometheusRule is picked up by Prometheus: by the
    selectors in the checked kube-prometheus-stack Application, or, when none is checked, by
    the ones colocate renders for the cluster."""
    cluster = index.ctx.cluster
    stacks = _stack_applications(index) or [
        (cluster.prometheus_release, cluster.monitoring_namespace, kps.monitor_selectors(cluster.monitor_labels), False)]
    namespaces = {d.name: {**(d.metadata.get("labels") or {}), "kubernetes.io/metadata.name": d.name}
                  for d in index.of_kind("Namespace")}
    for kind in kps.MONITOR_KINDS:
        for doc in index.of_kind(kind):
            if not any(_selected(doc, kind, stack, namespaces) for stack in stacks):
                labels = doc.metadata.get("labels") or {}
                wanted = [_selectors(stack, kind)[0] for stack in stacks]
                yield Violation(doc, "metadata.labels", f"labels {labels or '{}'} match none of {wanted}")


def _selectors(stack: tuple[str, str, dict, bool], kind: str) -> tuple[dict | None, dict | None]:
    """(label selector, None: selects nothing; namespace selector, None: its own namespace only).
    A Prometheus object's nil selector selects no monitor (prometheus-operator v0.70.0
    pkg/prometheus/resource_selector.go); the chart's values give one (kps.rendered_selector)."""
    release, _, spec, is_object = stack
    if not is_object:
        return kps.rendered_selector(spec, kind, release)
    prefix = kps.MONITOR_KINDS[kind]
    return spec.get(f"{prefix}Selector"), spec.get(f"{prefix}NamespaceSelector")


def _selected(doc: Doc, kind: str, stack: tuple[str, str, dict, bool], namespaces: dict[str, dict]) -> bool:
    home = stack[1]
    selector, ns_selector = _selectors(stack, kind)
    if selector is None or not selector_matches(selector, doc.metadata.get("labels") or {}):
        return False
    if ns_selector is None:
        return doc.namespace == home
    return selector_matches(ns_selector, namespaces.get(doc.namespace, {"kubernetes.io/metadata.name": doc.namespace}))


#: The control-plane components kube-prometheus-stack scrapes on the node's address: its values
#: key, the kubeadm/kube-proxy configuration kind and field that sets where the component
#: listens, kubeadm's default there, and the chart alert that fires while it is unreachable.
_CONTROL_PLANE = (
    ("kubeScheduler", "ClusterConfiguration", "scheduler.extraArgs.bind-address", "127.0.0.1", "KubeSchedulerDown"),
    ("kubeControllerManager", "ClusterConfiguration", "controllerManager.extraArgs.bind-address", "127.0.0.1",
     "KubeControllerManagerDown"),
    ("kubeEtcd", "ClusterConfiguration", "etcd.local.extraArgs.listen-metrics-urls", "http://127.0.0.1:2381",
     "etcdInsufficientMembers"),
    ("kubeProxy", "KubeProxyConfiguration", "metricsBindAddress", "127.0.0.1:10249", "KubeProxyDown"),
)
_CONFIG_GROUPS = {"ClusterConfiguration": "kubeadm.k8s.io", "KubeProxyConfiguration": "kubeproxy.config.k8s.io"}


def _scraped(index: Index, key: str) -> bool:
    """kube-prometheus-stack scrapes the component: ``<key>.enabled`` is not false in a checked
    Application of the chart (the chart's default is true), or no such Application is checked."""
    stacks = [((d.obj.get("spec") or {}).get("source") or {}) for d in index.of_kind("Application")]
    values = [((s.get("helm") or {}).get("valuesObject") or {}) for s in stacks if s.get("chart") == KPS_CHART]
    return not values or any(((v.get(key) or {}).get("enabled", True)) is not False for v in values)


def _host(part: str) -> str:
    """The host of an address, ``host:port`` or URL: ``::1``, ``[::1]:10257`` and ``http://[::1]:2381`` give ``::1``."""
    part = part.strip().split("://", 1)[-1].split("/", 1)[0]
    try:
        return str(ipaddress.ip_address(part.strip("[]")))  # a bare address (an IPv6 one holds colons)
    except ValueError:
        return urlsplit(f"//{part}").hostname or ""


def _loopback_only(value: str) -> bool:
    """Every address in ``value`` (an address, host:port, or comma-separated URLs) is loopback."""
    def loopback(host: str) -> bool:
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return host == "localhost"  # an empty host listens on every address
    return all(loopback(_host(part)) for part in str(value).split(","))


def _field(obj: dict, path: str):
    """The value at a dotted path (no key on these paths holds a dot of its own), None if absent."""
    node = obj
    for key in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def control_plane_metrics_reachable(index: Index, rule: Rule) -> Iterator[Violation]:
    """A checked kubeadm ClusterConfiguration or KubeProxyConfiguration does not leave a
    component the monitoring stack scrapes listening on loopback only."""
    for key, kind, path, default, alert in _CONTROL_PLANE:
        if not _scraped(index, key):
            continue
        for doc in index.of_kind(kind):
            if doc.group != _CONFIG_GROUPS[kind]:
                continue
            if kind == "ClusterConfiguration" and path.startswith("etcd.") and (doc.obj.get("etcd") or {}).get("external"):
                continue  # an external etcd is not kubeadm's to configure
            value = _field(doc.obj, path)
            if value is None or _loopback_only(value):
                shown = f"{value!r}" if value is not None else f"unset, so the default {default!r}"
                yield Violation(doc, path, f"{shown}: Prometheus scrapes {key} on the node's address, so {alert} "
                                "fires for ever")


#: Provisioners of shared (network) file systems: nfs-subdir-external-provisioner (its default
#: name and the chart's), the NFS CSI driver, CephFS, EFS and Azure Files.
_SHARED_FS_PROVISIONERS = frozenset({
    "k8s-sigs.io/nfs-subdir-external-provisioner", "cluster.local/nfs-subdir-external-provisioner",
    "nfs.csi.k8s.io", "cephfs.csi.ceph.com", "efs.csi.aws.com", "file.csi.azure.com", "kubernetes.io/nfs",
})


def _tsdb_claims(index: Index) -> Iterator[tuple[Doc, str, dict]]:
    """(object, field path, claim spec) of the Prometheus TSDB volume of every checked Prometheus
    object and every kube-prometheus-stack Application's values."""
    for doc in _prometheuses(index):
        storage = (doc.obj.get("spec") or {}).get("storage") or {}
        yield (doc, "spec.storage.volumeClaimTemplate.spec", ((storage.get("volumeClaimTemplate") or {}).get("spec")) or {})
    for doc in index.of_kind("Application"):
        source = (doc.obj.get("spec") or {}).get("source") or {}
        if source.get("chart") != KPS_CHART:
            continue
        values = (source.get("helm") or {}).get("valuesObject") or {}
        storage = ((values.get("prometheus") or {}).get("prometheusSpec") or {}).get("storageSpec") or {}
        yield (doc, "spec.source.helm.valuesObject.prometheus.prometheusSpec.storageSpec.volumeClaimTemplate.spec",
               ((storage.get("volumeClaimTemplate") or {}).get("spec")) or {})


def tsdb_not_on_shared_filesystem(index: Index, rule: Rule) -> Iterator[Violation]:
    """The Prometheus TSDB claim is not on NFS or another shared file system: not the configured
    ReadWriteMany class, not a class of a shared-file-system provisioner, not ReadWriteMany."""
    shared = {d.name: d.obj.get("provisioner") for d in index.of_kind("StorageClass")
              if d.obj.get("provisioner") in _SHARED_FS_PROVISIONERS}
    for doc, path, spec in _tsdb_claims(index):
        name = spec.get("storageClassName")
        modes = spec.get("accessModes") or []
        if name and name == index.ctx.shared_storage_class:
            yield Violation(doc, f"{path}.storageClassName", f"{name!r} is colocate.yaml's storage.sharedClass, the "
                            "ReadWriteMany (NFS) class")
        elif name in shared:
            yield Violation(doc, f"{path}.storageClassName", f"StorageClass {name!r} is provisioned by {shared[name]}, "
                            "a shared file system")
        elif "ReadWriteMany" in modes:
            yield Violation(doc, f"{path}.accessModes", "ReadWriteMany asks for a shared file system")
