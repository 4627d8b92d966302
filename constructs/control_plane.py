"""ControlPlane: the kubeadm settings the control plane needs so that the monitoring stack can
scrape it (not what Argo CD applies: kubeadm reads them when it writes the static pods).

kubeadm binds kube-scheduler and kube-controller-manager to 127.0.0.1 and etcd's metrics to
127.0.0.1:2381 (kubernetes/kubernetes v1.28.15 cmd/kubeadm/app/phases/controlplane/manifests.go
getSchedulerCommand, getControllerManagerCommand; cmd/kubeadm/app/phases/etcd/local.go), and
kube-proxy's metrics default to 127.0.0.1:10249 (pkg/proxy/apis/config/v1alpha1/defaults.go
getDefaultAddresses). kube-prometheus-stack 55.5.1 scrapes all four on the node IP, so without
these settings KubeSchedulerDown, KubeControllerManagerDown, KubeProxyDown and the etcd member
alerts fire for ever (docs/monitoring.md, "Control plane metrics").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from constructs import Construct

from colocate.constructs._k8s import emit
from colocate.errors import PropError
from colocate.model.names import (ETCD_METRICS_PORT, KUBEADM_API_VERSION, KUBE_PROXY_API_VERSION,
                                   KUBE_PROXY_METRICS_PORT)


@dataclass(frozen=True)
class ControlPlaneProps:
    """Props of a ControlPlane."""

    #: Address the scheduler, the controller-manager, etcd's metrics and kube-proxy's metrics
    #: listen on. Default ``0.0.0.0``: every address of the node, the one Prometheus scrapes included.
    metrics_address: str = "0.0.0.0"
    #: API server flags (``apiServer.extraArgs``): the feature gate and runtime-config the
    #: ValidatingAdmissionPolicies need on 1.28 when colocate.yaml turns them on (docs/admission.md).
    api_server_args: Mapping[str, str] = field(default_factory=dict)
    #: More kube-controller-manager flags (``controllerManager.extraArgs``): the feature gate that
    #: starts the policies' type-checking status controller on 1.28.
    controller_manager_args: Mapping[str, str] = field(default_factory=dict)


class ControlPlane(Construct):
    """A kubeadm ClusterConfiguration and a KubeProxyConfiguration with the metrics addresses."""

    def __init__(self, scope: Construct, id: str, props: ControlPlaneProps = ControlPlaneProps()):
        super().__init__(scope, id)
        if props.metrics_address.startswith("127.") or props.metrics_address in ("localhost", "::1"):
            raise PropError("ControlPlane", "metrics_address", f"{props.metrics_address!r} is loopback: Prometheus "
                            "scrapes the node's address; use 0.0.0.0 or the node's own address")
        address = props.metrics_address
        host = f"[{address}]" if ":" in address else address
        emit(self, "cluster", {
            "apiVersion": KUBEADM_API_VERSION, "kind": "ClusterConfiguration",
            **({"apiServer": {"extraArgs": dict(props.api_server_args)}} if props.api_server_args else {}),
            "controllerManager": {"extraArgs": {"bind-address": address, **props.controller_manager_args}},
            "scheduler": {"extraArgs": {"bind-address": address}},
            "etcd": {"local": {"extraArgs": {"listen-metrics-urls": f"http://{host}:{ETCD_METRICS_PORT}"}}},
        })
        emit(self, "kube-proxy", {
            "apiVersion": KUBE_PROXY_API_VERSION, "kind": "KubeProxyConfiguration",
            "metricsBindAddress": f"{host}:{KUBE_PROXY_METRICS_PORT}",
        })
