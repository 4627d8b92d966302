"""OnlineService: a latency-critical Deployment that offline work can never squeeze.

Guaranteed QoS (requests == limits), integer CPU where a pool pins cores, the online priority
tier, placement on its pools in order of preference (the dedicated online pool first, then
the mixed pool, where it preempts training when it needs room), exactly the tolerations those
pools need, a PodDisruptionBudget and a Service.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from constructs import Construct

from colocate.model import quantity
from colocate.errors import PropError
from colocate.constructs._k8s import emit
from colocate.model.validate import check_dns_label, check_image, check_pull_secret, check_required_labels, pull_secrets
from colocate.model.names import (HOSTNAME_LABEL, NAME_LABEL, NO_GPU_VISIBLE, PEAK_REPLICAS_ANNOTATION,
                                   VISIBLE_DEVICES_ENV)
from colocate.model.scheduling import ordered_pool_affinity
from colocate.model.slo import LatencySlo
from colocate.constructs.service_monitor import ServiceMonitor, ServiceMonitorProps

from colocate.constructs.node_pool import NodePool
from colocate.model.pools import Resources


@dataclass(frozen=True)
class OnlineServiceProps:
    """Props of an OnlineService."""

    #: Deployment, Service and PodDisruptionBudget name.
    name: str
    #: Namespace (an online TenantNamespace).
    namespace: str
    #: Full image reference from the internal registry.
    image: str
    #: Pools the pods may run on, preferred first: required node affinity on all of them, a
    #: preference for the first, and a toleration for each of their taints.
    pools: Sequence[NodePool]
    #: PriorityClass name of the online tier.
    priority_class: str
    #: Per-pod CPU; requests == limits. Whole cores when the pool's CPU manager is static.
    cpu: str
    #: Per-pod memory; requests == limits.
    memory: str
    #: Container and Service port.
    port: int
    #: Replicas. Default 2, so one can be drained at a time.
    replicas: int = 2
    #: Replicas at the day's peak, written to the Deployment's ``colocate.io/peak-replicas``
    #: annotation for ``colocate simulate --scenario peak``. Default: ``replicas``.
    peak_replicas: int | None = None
    #: GPUs per pod (``nvidia.com/gpu``). Default 0.
    gpus: int = 0
    #: Pods the PodDisruptionBudget lets a drain take down at once. Default 1.
    max_unavailable: int = 1
    #: Extra environment variables. Default: none.
    env: Mapping[str, str] = field(default_factory=dict)
    #: Seconds between SIGTERM and SIGKILL. Default 30.
    termination_grace_period_seconds: int = 30
    #: Seconds a stopping pod keeps serving before SIGTERM (a preStop ``sleep``), while the
    #: Service's endpoints drop it from every kube-proxy and load balancer. Needs ``sleep`` in
    #: the image; 0 = none. Default 5.
    pre_stop_delay_seconds: int = 5
    #: Latency SLO. When set, a ServiceMonitor scrapes the service's metrics and the mixin
    #: guards its P99. Default: none.
    slo: LatencySlo | None = None
    #: Labels Prometheus selects ServiceMonitors by; required with ``slo``.
    monitor_labels: Mapping[str, str] = field(default_factory=dict)
    #: Existing Secret the kubelet pulls the image with (a private Harbor project). Default: none.
    image_pull_secret: str | None = None


class OnlineService(Construct):
    """Deployment + Service + PodDisruptionBudget for one online service."""

    def __init__(self, scope: Construct, id: str, props: OnlineServiceProps):
        super().__init__(scope, id)
        self.props = props
        self._validate()
        p = props
        selector = {NAME_LABEL: p.name}
        resources = {"cpu": quantity.canonical(p.cpu, "cpu"), "memory": quantity.canonical(p.memory, "memory")}
        if p.gpus:
            resources["nvidia.com/gpu"] = str(p.gpus)
        container = {
            "name": p.name,
            "image": p.image,
            "ports": [{"name": "http", "containerPort": p.port, "protocol": "TCP"}],
            "resources": {"requests": dict(resources), "limits": dict(resources)},
            "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 5},
            "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
        }
        env = dict(p.env)
        if not p.gpus:
            # A CUDA image without a GPU request would see every GPU of its node (docs/gpus.md).
            env.setdefault(VISIBLE_DEVICES_ENV, NO_GPU_VISIBLE)
        if env:
            container["env"] = [{"name": k, "value": v} for k, v in sorted(env.items())]
        if p.pre_stop_delay_seconds:
            # The kubelet runs the hook before SIGTERM and takes its time from the grace period
            # (pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer, v1.28.15).
            container["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", str(p.pre_stop_delay_seconds)]}}}
        emit(self, "deployment", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": p.name, "namespace": p.namespace, "labels": dict(selector),
                         "annotations": {PEAK_REPLICAS_ANNOTATION: str(p.peak_replicas or p.replicas)}},
            "spec": {
                "replicas": p.replicas,
                "selector": {"matchLabels": selector},
                "template": {
                    "metadata": {"labels": dict(selector)},
                    "spec": {
                        "priorityClassName": p.priority_class,
                        "affinity": ordered_pool_affinity([pool.name for pool in p.pools]),
                        "tolerations": self._tolerations(),
                        "terminationGracePeriodSeconds": p.termination_grace_period_seconds,
                        # One replica per node where the pools allow: a node lost takes one
                        # replica. ScheduleAnyway: never leave online pods Pending for it, nor
                        # push them off the online pool early to spread.
                        "topologySpreadConstraints": [{
                            "maxSkew": 1, "topologyKey": HOSTNAME_LABEL, "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": dict(selector)}}],
                        "containers": [container],
                        **pull_secrets(p.image_pull_secret),
                    },
                },
            },
        })
        emit(self, "service", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": p.name, "namespace": p.namespace, "labels": dict(selector)},
            "spec": {"selector": selector,
                     "ports": [{"name": "http", "port": p.port, "targetPort": "http", "protocol": "TCP"}]},
        })
        if p.slo:
            ServiceMonitor(self, "servicemonitor", ServiceMonitorProps(
                name=p.name, namespace=p.namespace, service_labels=selector, port="http", path=p.slo.path,
                monitor_labels=p.monitor_labels, metrics={p.slo.metric: "histogram"}))
        emit(self, "pdb", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": p.name, "namespace": p.namespace, "labels": dict(selector)},
            "spec": {"maxUnavailable": p.max_unavailable, "selector": {"matchLabels": selector}},
        })

    def _tolerations(self) -> list[dict]:
        """Each toleration the pools need, once, in pool order."""
        out: list[dict] = []
        for pool in self.props.pools:
            out += [t for t in pool.tolerations() if t not in out]
        return out

    def _validate(self) -> None:
        p, where = self.props, f"OnlineService {self.props.name!r}"
        check_dns_label(where, "name", p.name)
        check_dns_label(where, "namespace", p.namespace)
        check_image(where, "image", p.image, example="harbor.example.com/ml/model-server:1.4.2")
        check_pull_secret(where, "image_pull_secret", p.image_pull_secret)
        if not isinstance(p.replicas, int) or p.replicas < 1:
            raise PropError(where, "replicas", f"{p.replicas!r} must be >= 1")
        if p.peak_replicas is not None and (not isinstance(p.peak_replicas, int) or p.peak_replicas < p.replicas):
            raise PropError(where, "peak_replicas", f"{p.peak_replicas!r} must be a whole number >= replicas ({p.replicas})")
        if not isinstance(p.max_unavailable, int) or not 1 <= p.max_unavailable <= p.replicas:
            raise PropError(where, "max_unavailable", f"{p.max_unavailable!r} must be from 1 to replicas "
                            f"({p.replicas}); 0 would block every node drain")
        if not isinstance(p.pre_stop_delay_seconds, int) or not 0 <= p.pre_stop_delay_seconds < \
                p.termination_grace_period_seconds:
            raise PropError(where, "pre_stop_delay_seconds", f"{p.pre_stop_delay_seconds!r} must be from 0 to below "
                            f"termination_grace_period_seconds ({p.termination_grace_period_seconds}), which it is "
                            "taken from")
        if not isinstance(p.port, int) or not 0 < p.port < 65536:
            raise PropError(where, "port", f"{p.port!r} is not a TCP port")
        for prop in ("cpu", "memory"):
            value = getattr(p, prop)
            if not quantity.is_quantity(value) or quantity.parse(value) <= 0:
                raise PropError(where, prop, f"{value!r} must be a positive quantity")
        if p.slo:
            p.slo.validate(where)
            check_required_labels(where, "monitor_labels", p.monitor_labels,
                                  "Prometheus would not select the service's ServiceMonitor, and its SLO would have no data")
        names = [pool.name for pool in p.pools]
        if not names or len(set(names)) != len(names):
            raise PropError(where, "pools", f"{names!r} must name at least one pool, each once")
        static = [pool.name for pool in p.pools if pool.static_cpu]
        if static and quantity.millicores(p.cpu) % 1000:
            raise PropError(where, "cpu", f"{p.cpu!r} is not a whole number of cores; pool {static[0]!r} runs the "
                            "static CPU manager, which pins cores only for integer CPU in Guaranteed pods; "
                            f"use {quantity.millicores(p.cpu) // 1000 + 1} or {max(1, quantity.millicores(p.cpu) // 1000)}")
        need = Resources(quantity.millicores(p.cpu), quantity.to_bytes(p.memory), p.gpus)
        for pool in p.pools:
            if not pool.allocatable.fits(need):
                raise PropError(where, "cpu/memory/gpus", f"a pod needs {need}, more than one node of pool "
                                f"{pool.name!r} can give ({pool.allocatable} allocatable); drop the pool from "
                                "pools or shrink the pod")
