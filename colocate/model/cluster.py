"""The cluster's shape: node pools, priority tiers, namespaces, the example online service.

``reference()`` is the reference cluster of the README (the numbers of the team we build for). A platform team
changes the cluster here, in Python; per-environment values come from colocate.yaml.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from colocate.errors import PropError
from colocate.model.pools import KubeletReservations, NodePoolProps, Taint
from colocate.model.slo import LatencySlo
from colocate.model.tiers import PriorityTier


class Settings(Protocol):
    """What the reference cluster takes from colocate.yaml (colocate.config.Config has it): the
    model sits below the configuration and does not import it."""

    @property
    def registry_host(self) -> str: ...


@dataclass(frozen=True)
class OnlineServiceSpec:
    """An online service of the cluster; the chart adds pool, tier and namespace."""

    name: str
    image: str
    cpu: str
    memory: str
    port: int
    replicas: int = 2
    #: Replicas at the day's peak (an autoscaler or an operator scales to them). Default: replicas.
    peak_replicas: int | None = None
    gpus: int = 0
    #: Latency SLO; the mixin guards it while training shares the service's nodes. Default: none.
    slo: LatencySlo | None = None


@dataclass(frozen=True)
class Cluster:
    """Everything the charts need to know about the cluster, each fact once."""

    pools: tuple[NodePoolProps, ...]
    tiers: tuple[PriorityTier, ...]
    #: Pool names by role.
    online_pool: str
    mixed_pool: str
    monitoring_pool: str
    online_namespace: str
    training_namespace: str
    monitoring_namespace: str
    kubeflow_namespace: str
    #: Helm release name of kube-prometheus-stack; names its objects and the ``release``
    #: label Prometheus selects ServiceMonitors and PrometheusRules by.
    prometheus_release: str
    online_services: tuple[OnlineServiceSpec, ...]
    #: Pools online services may run on, preferred first: the dedicated online pool, then the
    #: mixed pool, where they take capacity from training (preemption) when online is full.
    online_service_pools: tuple[str, ...] = ()
    #: Namespace of the training-image pre-pull DaemonSet: its pods run at the background
    #: tier, which the offline namespace's priority rule would refuse.
    prepull_namespace: str = "image-prepull"
    #: Namespace of what colocate itself runs in the cluster: the resubmitter (and its Lease)
    #: and the schedule's CronJobs (docs/training-control.md).
    control_namespace: str = "colocate-system"
    #: PersistentVolumeClaims the training namespace's quota allows: each job has one, its
    #: checkpoints' (constructs/tfjob.py), so this bounds the jobs the namespace holds.
    training_claims: int = 100
    #: Kueue's ClusterQueue for training, and the LocalQueue of that name in the training
    #: namespace that every job names (docs/queue.md).
    training_queue: str = "training"
    #: Where Kueue's manager runs (the platform Application owns the Namespace).
    kueue_namespace: str = "kueue-system"

    def __post_init__(self) -> None:
        names = [p.name for p in self.pools]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise PropError("Cluster", f"pools[{twice[0]!r}]", "is named by more than one pool; each pool is one "
                            "node group with its own files in dist/nodes/, so give each a name of its own")
        for prop, value in (("online_pool", self.online_pool), ("mixed_pool", self.mixed_pool),
                            ("monitoring_pool", self.monitoring_pool),
                            *((f"online_service_pools[{i}]", n) for i, n in enumerate(self.online_service_pools))):
            if value not in names:
                raise PropError("Cluster", prop, f"{value!r} is not a pool (pools: {', '.join(names)})")

    @property
    def online_taint(self) -> Taint:
        """The taint that keeps everything but online pods off the online pool."""
        return self._only_taint(self.online_pool)

    @property
    def monitoring_taint(self) -> Taint:
        """Taint of the monitoring pool; only the monitoring stack tolerates it."""
        return self._only_taint(self.monitoring_pool)

    def _only_taint(self, pool_name: str) -> Taint:
        taints = self.pool(pool_name).taints
        if len(taints) != 1:
            raise PropError("Cluster", f"pools[{pool_name!r}].taints", f"needs exactly one taint, has {len(taints)}")
        return taints[0]

    @property
    def online_placement(self) -> tuple[str, ...]:
        """``online_service_pools``, or the online pool alone when that is empty."""
        return self.online_service_pools or (self.online_pool,)

    @property
    def monitor_labels(self) -> dict[str, str]:
        """Labels our ServiceMonitors and PrometheusRules need to be picked up."""
        return {"release": self.prometheus_release}

    def pool(self, name: str) -> NodePoolProps:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise PropError("Cluster", "pools", f"no pool is named {name!r} (pools: {', '.join(p.name for p in self.pools)})")

    def tier(self, role: str) -> PriorityTier:
        for tier in self.tiers:
            if tier.role == role:
                return tier
        raise PropError("Cluster", "tiers", f"no tier has role {role!r}")


def reference(config: Settings) -> Cluster:
    """The reference cluster: 4 online, 6 mixed and 2 monitoring nodes on Kubernetes 1.28."""
    pools = (
        NodePoolProps(
            name="online", nodes=4, cpu="16", memory="64Gi", gpus=1,
            labels={"role": "online"}, taints=(Taint("online", "true", "NoSchedule"),),
            # The reference gives only "static CPU manager"; static needs reserved CPU, so the
            # online pool keeps one core for the kubelet and the OS.
            kubelet=KubeletReservations(system_reserved={"cpu": "500m", "memory": "2Gi"},
                                        kube_reserved={"cpu": "500m", "memory": "1Gi"},
                                        cpu_manager_policy="static"),
        ),
        NodePoolProps(
            name="mixed", nodes=6, cpu="32", memory="128Gi", gpus=2,
            labels={"role": "mixed"},
            kubelet=KubeletReservations(system_reserved={"cpu": "500m", "memory": "4Gi"},
                                        cpu_manager_policy="static"),
        ),
        NodePoolProps(
            name="monitoring", nodes=2, cpu="8", memory="32Gi",
            labels={"role": "monitoring"}, taints=(Taint("monitoring", "true", "NoSchedule"),),
            kubelet=KubeletReservations(system_reserved={"cpu": "250m", "memory": "1Gi"}),
        ),
    )
    tiers = (
        PriorityTier("online-high", 1_000_000, "online",
                     "Online inference: preempts offline training when capacity runs short."),
        # Never: training waits for room instead of evicting the add-ons that run without a
        # class on the untainted mixed pool (docs/tiers.md, "Should offline-batch preempt?"; COL012).
        PriorityTier("offline-batch", 100_000, "offline",
                     "Offline training: runs in idle capacity, never preempts, and is preempted first.",
                     preemption_policy="Never"),
        PriorityTier("prepull-idle", 1_000, "background",
                     "Training-image pre-pull: yields to everything, never preempts.",
                     preemption_policy="Never"),
    )
    return Cluster(
        pools=pools,
        tiers=tiers,
        online_pool="online",
        mixed_pool="mixed",
        monitoring_pool="monitoring",
        online_namespace="online",
        training_namespace="training",
        monitoring_namespace="monitoring",
        kubeflow_namespace="kubeflow",
        prometheus_release="kube-prometheus-stack",
        online_service_pools=("online", "mixed"),
        online_services=(
            OnlineServiceSpec(name="recsys-inference", image=f"{config.registry_host}/ml/recsys-inference:1.0.0",
                              cpu="4", memory="8Gi", gpus=1, port=8080, replicas=2, peak_replicas=12,
                              # Reference figure: P99 2.1 ms alone, 2.3 ms co-located with pinning.
                              slo=LatencySlo(metric="http_request_duration_seconds", objective_seconds=0.005)),
        ),
    )
